"""Compiled functions on a real Dask cluster (docs/distributed.md): a LocalCluster of two
worker processes sharing kernels through a real redis-server on loopback (the remote
cache, NOTE(remote-cache)), every worker tracing its compiles to one directory
(NOTE(trace)). One cluster serves the whole module; the functions sent live in
tests/dask_kernels.py."""

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import dask.array as da  # the `test` extra has Dask (pyproject.toml), so these tests never skip for it
import dask.distributed as distributed
import dask_kernels as kernels
import numpy as np
import pytest
from codegen.test_remote import REDIS, SECRET, RedisServer, free_port

import pyjit
from pyjit import nn, report

pytestmark = pytest.mark.skipif(REDIS is None, reason="redis-server is not installed (Debian package redis-server; "
                                                      "scripts/system_deps.sh installs it)")
TESTS = str(Path(__file__).resolve().parent)
TIMEOUT = 120  # seconds any one wait on the cluster may take
# Elementwise kernels are within a few ulp of NumPy per transcendental call (docs/codegen.md,
# "Numerics"); float64 sums within rtol 1e-12.
CLOSE = {"rtol": 1e-12, "atol": 1e-14}


class Fleet:
    """The cluster, its cache server, and where its workers write."""

    def __init__(self, root: Path, patch: pytest.MonkeyPatch):
        self.root = root
        self.redis = RedisServer(root)
        self.trace = root / "trace"
        self.environment = {"PYJIT_REMOTE_CACHE": self.redis.url, "PYJIT_REMOTE_CACHE_KEY": SECRET,
                            "PYJIT_TRACE_DIR": str(self.trace), "PYJIT_CACHE_DIR": str(root / "cache")}
        for name, value in self.environment.items():
            patch.setenv(name, value)
        self.cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                                dashboard_address=None)
        self.client = distributed.Client(self.cluster, timeout=TIMEOUT)

    def workers(self) -> list[str]:
        return sorted(self.client.scheduler_info()["workers"])

    def close(self):
        self.client.close(timeout=TIMEOUT)
        self.cluster.close(timeout=TIMEOUT)
        self.redis.stop()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """The workers' settings are in this process's environment while the cluster lives:
    the worker processes it spawns (and any the nanny restarts) inherit them, and pyjit
    reads them when it is imported there (a nanny's `env` comes too late for a script
    that imports pyjit at the top, which spawn imports again in each worker)."""
    root = tmp_path_factory.mktemp("fleet")
    with pytest.MonkeyPatch.context() as patch:
        fleet = Fleet(root, patch)
        try:
            yield fleet
        finally:
            fleet.close()


def blocks(count: int, shape: tuple[int, ...], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for _ in range(count)]


def kernel_events(trace_dir) -> list[dict]:
    events, _ = report.load_events(str(trace_dir))
    return [event for event in events if event["event"] == "kernel"]


def test_client_map_and_submit_of_compiled_functions_and_a_module_equal_numpy(fleet):
    inputs = blocks(12, (64, 16))
    for compiled, plain in ((kernels.gelu, kernels.gelu.__wrapped__), (kernels.softsign_compiled, kernels.softsign)):
        results = fleet.client.gather(fleet.client.map(compiled, inputs, pure=False), errors="raise")
        for result, block in zip(results, inputs, strict=True):
            np.testing.assert_allclose(result, plain(block), **CLOSE)
    np.testing.assert_allclose(fleet.client.submit(kernels.gelu, inputs[0]).result(TIMEOUT),
                               kernels.gelu.__wrapped__(inputs[0]), **CLOSE)

    model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4))
    weights = [parameter.numpy() for parameter in model.parameters()]
    results = fleet.client.gather(fleet.client.map(kernels.infer, [pyjit.compile(model)] * len(inputs), inputs,
                                                   pure=False), errors="raise")
    for result, block in zip(results, inputs, strict=True):
        hidden = np.tanh(block @ weights[0].T + weights[1])
        np.testing.assert_allclose(result, hidden @ weights[2].T + weights[3], rtol=1e-5, atol=1e-6)  # float32


def test_map_blocks_blockwise_and_reduction_over_chunks_of_three_shapes(fleet):
    values = np.random.default_rng(1).standard_normal((57, 24))
    x = da.from_array(values, chunks=((16, 16, 16, 9), (24,)))  # blocks of 16, 9 rows; 3 shapes with y's
    y = da.from_array(values[::-1].copy(), chunks=((16, 16, 16, 5, 4), (24,)))
    softplus = x.map_blocks(kernels.softplus, dtype=float)
    np.testing.assert_allclose(softplus.compute(), kernels.softplus.__wrapped__(values), **CLOSE)
    mixed = da.blockwise(kernels.mix, "ij", x, "ij", y, "ij", dtype=float)
    np.testing.assert_allclose(mixed.compute(), kernels.mix.__wrapped__(values, values[::-1]), **CLOSE)
    squares = da.reduction(y, kernels.squares, kernels.total, dtype=float)
    np.testing.assert_allclose(squares.compute(), np.sum(values * values), rtol=1e-12)
    # blockwise aligned x's chunks with y's: 16, 16, 16, 5 and 4 rows, so some worker ran
    # `mix` on two shapes or more, and recompiled it (docs/frontend/guards.md).
    recompiles = [event for event in report.load_events(str(fleet.trace))[0] if event["event"] == "recompile"]
    assert any("size mismatch" in event["reason"] for event in recompiles), recompiles


def test_each_kernel_is_compiled_once_across_the_cluster(fleet):
    inputs = blocks(2, (40, 24), seed=2)
    # One block per worker at the same moment: both miss `standardize`'s kernels together.
    futures = [fleet.client.submit(kernels.standardize, block, workers=[worker], pure=False)
               for worker, block in zip(fleet.workers(), inputs, strict=True)]
    for future, block in zip(futures, inputs, strict=True):
        np.testing.assert_allclose(future.result(TIMEOUT), kernels.standardize.__wrapped__(block), **CLOSE)
    events = kernel_events(fleet.trace)
    compiled = Counter(event["key"] for event in events if event["origin"] == "compiled")
    assert compiled and max(compiled.values()) == 1, compiled
    assert {event["origin"] for event in events} <= {"compiled", "remote", "disk"}
    loaders = Counter(event["key"] for event in events)
    assert any(count > 1 for count in loaders.values())  # kernels loaded by a worker that did not build them


@contextlib.contextmanager
def extra_worker(fleet, name: str, **environment):
    """A worker started as a fleet starts one, `dask worker ADDRESS` with the settings in
    its environment; it leaves the cluster at the end."""
    command = [os.path.join(os.path.dirname(sys.executable), "dask"), "worker", fleet.cluster.scheduler_address,
               "--name", name, "--nthreads", "1", "--no-dashboard", "--local-directory", str(fleet.root / name)]
    environment = {**os.environ, **fleet.environment, **environment,
                   "PYTHONPATH": os.pathsep.join([TESTS, str(Path(pyjit.__file__).parents[1])])}
    process = subprocess.Popen(command, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + TIMEOUT
        while not any(info["name"] == name for info in fleet.client.scheduler_info()["workers"].values()):
            assert process.poll() is None and time.monotonic() < deadline, process.stderr.read().decode()[-3000:]
            time.sleep(0.2)
        yield next(address for address, info in fleet.client.scheduler_info()["workers"].items()
                   if info["name"] == name)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


def test_a_worker_started_later_with_an_empty_disk_cache_compiles_nothing(fleet):
    inputs = blocks(3, (32, 24), seed=3)
    first = fleet.workers()[0]
    fleet.client.gather(fleet.client.map(kernels.swish, inputs, workers=[first], pure=False), errors="raise")
    trace = fleet.root / "late-trace"
    with extra_worker(fleet, "late", PYJIT_CACHE_DIR=str(fleet.root / "late-cache"), PYJIT_TRACE_DIR=str(trace)) \
            as late:
        results = fleet.client.gather(fleet.client.map(kernels.swish, inputs, workers=[late], pure=False),
                                      errors="raise")
    for result, block in zip(results, inputs, strict=True):
        np.testing.assert_allclose(result, kernels.swish.__wrapped__(block), **CLOSE)
    origins = [event["origin"] for event in kernel_events(trace)]
    assert origins and set(origins) == {"remote"}, origins


def test_a_worker_whose_redis_is_unreachable_computes_the_same(fleet):
    inputs = blocks(3, (32, 24), seed=4)
    trace = fleet.root / "lost-trace"
    with extra_worker(fleet, "lost", PYJIT_REMOTE_CACHE=f"redis://127.0.0.1:{free_port()}/0",
                      PYJIT_CACHE_DIR=str(fleet.root / "lost-cache"), PYJIT_TRACE_DIR=str(trace)) as lost:
        results = fleet.client.gather(fleet.client.map(kernels.gelu, inputs, workers=[lost], pure=False),
                                      errors="raise")
    for result, block in zip(results, inputs, strict=True):
        np.testing.assert_allclose(result, kernels.gelu.__wrapped__(block), **CLOSE)
    events, _ = report.load_events(str(trace))
    assert any(event["event"] == "remote_error" for event in events)
    assert {event["origin"] for event in events if event["event"] == "kernel"} == {"compiled"}


def test_a_worker_killed_mid_job_leaves_dask_to_retry_its_tasks_elsewhere(fleet):
    inputs = blocks(10, (32, 24), seed=5)
    workers = fleet.workers()
    for worker in workers:  # each worker has its kernels: none dies while compiling
        fleet.client.submit(kernels.root_mix, inputs[0], workers=[worker], pure=False).result(TIMEOUT)
    futures = fleet.client.map(kernels.slowly, inputs, pure=False)
    next(distributed.as_completed(futures, timeout=TIMEOUT))
    pids = fleet.client.run(os.getpid)
    os.kill(pids[workers[0]], signal.SIGKILL)
    assert sum(future.done() for future in futures) < len(futures)  # the job was not over
    results = fleet.client.gather(futures, errors="raise")
    for result, block in zip(results, inputs, strict=True):
        np.testing.assert_allclose(result, kernels.root_mix.__wrapped__(block), **CLOSE)
