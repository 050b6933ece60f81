"""NumPy's OpenBLAS on the kernels' OpenMP team (NOTE(blas-pool)) and kernels in a
forked child (NOTE(fork-child)), each checked in a fresh process: which pool a product
uses is decided once per process."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from pyjit import config

PRELUDE = """
import json, os, sys, threading
import numpy as np
import pyjit
from pyjit.codegen.cpu import threads

rng = np.random.default_rng(0)
a = rng.standard_normal((384, 1024), dtype=np.float32)
b = rng.standard_normal((1024, 768), dtype=np.float32)
native = a @ b  # OpenBLAS's own pool: no kernel loaded yet

@pyjit.compile
def kernel(x):
    return np.sin(x) * 2 + 1

x = np.linspace(-3, 3, 1 << 20, dtype=np.float32)
assert np.allclose(kernel(x), np.sin(x) * 2 + 1, atol=1e-6)

def report(**extra):
    pool = threads.state()
    print(json.dumps(dict(libraries=pool.libraries, calls=pool.calls, lowest_slot=pool.lowest_slot,
                          highest_slot=pool.highest_slot, own_threads=pool.own_threads, **extra)))
"""


def run(body: str, **environment) -> dict:
    """Run PRELUDE + body in a fresh interpreter; its last line of output, as JSON."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("OMP_", "GOMP_", "PYJIT_BLAS"))}
    env.update(PYJIT_CACHE_DIR=config.cache_dir, **environment)
    child = subprocess.run([sys.executable, "-P", "-c", PRELUDE + textwrap.dedent(body)], env=env,
                           capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, child.stderr
    return json.loads(child.stdout.splitlines()[-1])


def shared_pool(result: dict) -> dict:
    """The one OpenBLAS holding the callback; skips where NumPy's BLAS runs one thread
    (no job is ever handed out) or is not an OpenBLAS that takes a callback."""
    if not result["libraries"]:
        pytest.skip("NumPy's BLAS here is not an OpenBLAS that takes a threads callback (0.3.27+)")
    (library,) = result["libraries"]
    if library["pool_threads"] < 2:
        pytest.skip("OpenBLAS runs one thread here: it hands out no jobs")
    return library


def test_products_run_on_the_kernels_threads_with_openblas_bits():
    result = run("""
        calls = threads.state().calls
        shared = [a @ b for _ in range(3)]
        report(before=calls, same_bits=all(np.array_equal(product, native) for product in shared))
    """)
    library = shared_pool(result)
    assert result["same_bits"]
    assert result["calls"] == result["before"] + 3
    # Slots below pool_threads - 1 are watched by OpenBLAS's own workers: a job there
    # keeps an idle worker spinning (NOTE(blas-pool)). Jobs take the highest slots.
    assert result["lowest_slot"] >= library["pool_threads"] - 1
    assert result["highest_slot"] == library["max_threads"] - 1
    assert result["own_threads"] == 0


def test_a_team_smaller_than_the_jobs_gets_threads_for_the_rest():
    # With OMP_THREAD_LIMIT=1 libgomp gives every region one thread; a level-3 product's
    # jobs wait for each other, so without threads of their own they would hang.
    result = run("""
        report(same_bits=np.array_equal(a @ b, native))
    """, OMP_THREAD_LIMIT="1")
    shared_pool(result)
    assert result["same_bits"]
    assert result["calls"] >= 1 and result["own_threads"] >= 1


def test_products_from_several_python_threads():
    result = run("""
        outcomes = []
        def work():
            outcomes.extend(np.array_equal(a @ b, native) for _ in range(5))
        workers = [threading.Thread(target=work) for _ in range(4)]
        for worker in workers: worker.start()
        for worker in workers: worker.join()
        report(outcomes=outcomes)
    """)
    shared_pool(result)
    assert result["outcomes"] == [True] * 20
    assert result["calls"] >= 20


def test_the_openblas_setting_keeps_openblas_pool_until_set_back():
    result = run("""
        kept = threads.state()
        product = a @ b
        pyjit.config.blas_threads = "openmp"
        @pyjit.compile
        def other(x):
            return np.cos(x) + 1
        other(x)
        report(kept_libraries=kept.libraries, kept_calls=threads.state().calls, bits=np.array_equal(product, native),
               after=np.array_equal(a @ b, native))
    """, PYJIT_BLAS_THREADS="openblas")
    shared_pool(result)
    assert result["kept_libraries"] == [] and result["kept_calls"] == 0 and result["bits"]
    assert result["calls"] == 1 and result["after"]


def test_an_unknown_setting_is_refused_naming_it():
    env = dict(os.environ, PYJIT_BLAS_THREADS="both", PYJIT_CACHE_DIR=config.cache_dir)
    code = "import numpy as np, pyjit\npyjit.compile(lambda x: x + 1)(np.ones(4))"
    child = subprocess.run([sys.executable, "-W", "error", "-P", "-c", code], env=env, capture_output=True, text=True,
                           timeout=300)  # a kernel that failed to load would warn, then run eagerly
    assert child.returncode != 0
    assert "pyjit.config.blas_threads (PYJIT_BLAS_THREADS) is 'both'" in child.stderr


def test_a_forked_child_runs_kernels_and_products():
    # Without the fork handler the child's first parallel region waits forever for the
    # parent's OpenMP team; the parent gives it a minute.
    result = run("""
        import signal, time
        calls = threads.state().calls
        child = os.fork()
        if child == 0:
            ok = np.allclose(kernel(x), np.sin(x) * 2 + 1, atol=1e-6) and np.array_equal(a @ b, native)
            # The child's products go to OpenBLAS's own pool: the callback is not called.
            os._exit(0 if ok and threads.state().calls == calls else 1)
        deadline = time.monotonic() + 60
        while (status := os.waitpid(child, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        if status[0] == 0:
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
        report(finished=status[0] != 0, exit_code=os.waitstatus_to_exitcode(status[1]) if status[0] else None,
               parent_bits=np.array_equal(a @ b, native))
    """)
    assert result["finished"], "the forked child hung"
    assert result["exit_code"] == 0
    assert result["parent_bits"]


def test_a_team_stacked_on_one_cpu_runs_middling_loops_on_the_calling_thread():
    # NOTE(stacked-team): every thread of the process on one CPU, so the team is stacked
    result = run("""
        cpu = {min(os.sched_getaffinity(0))}
        for task in os.listdir("/proc/self/task"):
            os.sched_setaffinity(int(task), cpu)
        add = pyjit.compile(lambda v: v + 1)  # 2**20 elements of work: a middling loop
        y = np.arange(1 << 20, dtype=np.float32)
        for _ in range(600):
            out = add(y)
        assert np.array_equal(out, y + 1)
        print(json.dumps(dict(zip(("probes", "stacked"), threads.team_probes()))))
    """, OMP_NUM_THREADS="2")
    assert result["probes"] >= 2 and result["stacked"] == result["probes"]


def test_kernels_loaded_without_the_teams_library_load_and_run():
    # NOTE(stacked-team): the kernels ask the library through a weak symbol
    code = textwrap.dedent("""
        import numpy as np, pyjit
        from pyjit.codegen.cpu import threads
        threads.share_with_blas = lambda: None  # the CPU target loads kernels without the library
        add = pyjit.compile(lambda v: v + 1)
        y = np.arange(1 << 20, dtype=np.float32)
        assert np.array_equal(add(y), y + 1) and threads._library is None
        print("ok")
    """)
    env = dict(os.environ, PYJIT_CACHE_DIR=config.cache_dir, OMP_NUM_THREADS="2")
    child = subprocess.run([sys.executable, "-W", "error", "-P", "-c", code], env=env, capture_output=True, text=True,
                           timeout=300)  # a kernel that failed to load would warn, then run eagerly
    assert child.returncode == 0 and child.stdout.strip() == "ok", child.stderr
