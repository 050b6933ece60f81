"""pyjit.codegen.remote: kernels shared through a real redis-server (NOTE(remote-cache))."""

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import pyjit
from pyjit import config
from pyjit.codegen import remote
from pyjit.codegen.cpu import build
from pyjit.codegen.cuda import build as cuda_build
from pyjit.utils import counters

if shutil.which("cc") is None and shutil.which("gcc") is None:
    pytest.skip("no C compiler", allow_module_level=True)

REDIS = shutil.which("redis-server")
needs_redis = pytest.mark.skipif(REDIS is None, reason="redis-server is not installed (Debian package redis-server; "
                                                       "scripts/system_deps.sh installs it)")
SECRET = "test-signing-key"
PACKAGE_PARENT = os.path.dirname(os.path.dirname(pyjit.__file__))
KERNEL = """\
#include <stdint.h>
void scale(char *const *buffers, const int64_t *sizes) {
  const double *x = (const double *)buffers[0];
  double *out = (double *)buffers[1];
  for (int64_t i = 0; i < sizes[0]; ++i) out[i] = x[i] * FACTOR;
}
"""


def source(factor):
    return KERNEL.replace("FACTOR", f"{factor:.1f}")


def factor_of(library):
    x, out = np.arange(1.0, 5.0), np.empty(4)
    library.kernel("scale", 2, 1)(x, out, 4)
    (factor,) = set(out / x)
    return factor


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class RedisServer:
    """A redis-server of this test's own on a loopback port, keeping nothing on disk."""

    def __init__(self, directory):
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/3"
        self.process = subprocess.Popen([REDIS, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                         "--appendonly", "no", "--dir", str(directory)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while True:
            try:
                self.call(b"PING")
                return
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.stop()
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)

    def call(self, *arguments: bytes):
        connection = remote._Connection("127.0.0.1", self.port, 5.0)
        try:
            connection.call(b"SELECT", b"3")
            return connection.call(*arguments)
        finally:
            connection.close()

    def entries(self) -> dict[bytes, bytes]:
        return {name: self.call(b"GET", name) for name in self.call(b"KEYS", b"pyjit:*")}

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)


@pytest.fixture
def redis_server(tmp_path):
    server = RedisServer(tmp_path)
    yield server
    server.stop()


@pytest.fixture
def use_remote(tmp_path, monkeypatch):
    """use_remote(url, directory name) -> points this process at a remote cache and a
    fresh disk cache, forgetting what it loaded; the counters start at 0."""
    monkeypatch.setenv("PYJIT_REMOTE_CACHE_KEY", SECRET)
    with contextlib.ExitStack() as patches:

        def use(url, name="cache"):
            build.reset()
            counters.pop("inductor", None)
            patches.enter_context(config.patch(cache_dir=str(tmp_path / name), remote_cache=url))

        yield use
    build.reset()


def remote_counts():
    return {name: value for name, value in counters["inductor"].items() if name != "compiler_probes"}


CHILD = textwrap.dedent("""
    import json, numpy as np, pyjit
    from pyjit.utils import counters

    @pyjit.compile
    def softplus_ish(x, y):
        return np.log1p(np.exp(x)) * y + np.sin(y)

    x = np.linspace(-3, 3, 1000)
    result = softplus_ish(x, x[::-1].copy())
    print(json.dumps({"counters": dict(counters["inductor"]), "result": result.tobytes().hex()}))
""")


def run_child(tmp_path, name, url, secret=SECRET):
    environment = {**os.environ, "PYJIT_CACHE_DIR": str(tmp_path / name), "PYJIT_REMOTE_CACHE": url,
                   "PYJIT_REMOTE_CACHE_KEY": secret, "PYTHONPATH": PACKAGE_PARENT}
    result = subprocess.run([sys.executable, "-P", "-W", "error", "-c", CHILD], capture_output=True, text=True,
                            env=environment, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@needs_redis
def test_a_second_machine_compiles_nothing(redis_server, tmp_path):
    first = run_child(tmp_path, "machine-a", redis_server.url)
    assert first["counters"]["compiles"] >= 1
    assert first["counters"]["remote_stores"] == first["counters"]["compiles"]
    assert len(redis_server.entries()) == first["counters"]["compiles"]

    second = run_child(tmp_path, "machine-b", redis_server.url)  # its own, empty, disk cache
    assert second["counters"].get("compiles", 0) == 0
    assert second["counters"]["remote_hits"] == first["counters"]["compiles"]
    assert second["result"] == first["result"]  # bit for bit

    again = run_child(tmp_path, "machine-b", redis_server.url)  # the disk cache is the first level
    assert again["counters"].get("remote_hits", 0) == 0 and again["counters"]["disk_hits"] >= 1
    assert again["result"] == first["result"]


@needs_redis
def test_a_worker_with_another_key_leaves_the_fleets_entries_alone(redis_server, tmp_path):
    fleet = run_child(tmp_path, "machine-a", redis_server.url)
    stored = redis_server.entries()
    assert len(stored) == fleet["counters"]["compiles"] >= 1

    # -W error in the child: a refusal warning would fail it; it simply misses.
    stray = run_child(tmp_path, "machine-b", redis_server.url, secret="a mistyped key")
    assert stray["counters"]["compiles"] == fleet["counters"]["compiles"]
    assert stray["counters"].get("remote_rejected", 0) == 0 and stray["result"] == fleet["result"]
    entries = redis_server.entries()
    assert {name: entries[name] for name in stored} == stored  # not overwritten
    assert len(entries) == 2 * len(stored)  # its own, under its own key id

    again = run_child(tmp_path, "machine-c", redis_server.url)  # the fleet compiles nothing
    assert again["counters"].get("compiles", 0) == 0
    assert again["counters"]["remote_hits"] == len(stored) and again["result"] == fleet["result"]


def tampered(entry: bytes, name: bytes, server) -> tuple[bytes, bytes]:
    return name, entry[:-1] + bytes([entry[-1] ^ 1])


def foreign(entry: bytes, name: bytes, server) -> tuple[bytes, bytes]:
    library = entry[len(remote._MAGIC) + 32:]
    return name, remote.RemoteCache(server.url, b"someone else's key")._signed(name.decode(), library)


def unsigned(entry: bytes, name: bytes, server) -> tuple[bytes, bytes]:
    return name, entry[len(remote._MAGIC) + 32:]


@needs_redis
@pytest.mark.parametrize("spoil", [tampered, foreign, unsigned])
def test_an_entry_not_signed_with_our_key_is_recompiled_logged_and_overwritten(redis_server, use_remote, spoil):
    use_remote(redis_server.url, "machine-a")
    build.load(source(3))
    ((name, entry),) = redis_server.entries().items()
    name, bad = spoil(entry, name, redis_server)
    redis_server.call(b"SET", name, bad)

    use_remote(redis_server.url, "machine-b")
    with pytest.warns(UserWarning, match=f"refused the entry {name.decode()} of the remote kernel cache"):
        library = build.load(source(3))
    assert factor_of(library) == 3.0
    assert remote_counts() == {"remote_rejected": 1, "compiles": 1, "remote_stores": 1}
    assert redis_server.entries()[name] == entry  # overwritten with the signed library


@needs_redis
def test_an_entry_is_bound_to_its_key(redis_server, use_remote):
    use_remote(redis_server.url, "machine-a")
    build.load(source(2))
    build.load(source(5))
    entries = redis_server.entries()
    # Put the (validly signed) entry of one kernel under the other kernel's name.
    for name in entries:
        other = next(key for key in entries if key != name)
        redis_server.call(b"SET", name, entries[other])
    use_remote(redis_server.url, "machine-b")
    with pytest.warns(UserWarning, match="refused the entry"):
        assert factor_of(build.load(source(2))) == 2.0
        assert factor_of(build.load(source(5))) == 5.0
    assert remote_counts()["remote_rejected"] == 2 and remote_counts()["compiles"] == 2


def kill(server):
    server.stop()


def fill(server):
    server.call(b"CONFIG", b"SET", b"maxmemory-policy", b"noeviction")
    server.call(b"CONFIG", b"SET", b"maxmemory", b"1")  # every write is refused: OOM


@needs_redis
@pytest.mark.parametrize("failure", [kill, fill])
def test_a_server_that_dies_or_fills_up_mid_run_leaves_local_compiles(redis_server, use_remote, failure):
    use_remote(redis_server.url)
    assert factor_of(build.load(source(1))) == 1.0
    failure(redis_server)
    with pytest.warns(UserWarning, match=f"the remote kernel cache {redis_server.url} failed") as warned:
        assert factor_of(build.load(source(6))) == 6.0
        assert factor_of(build.load(source(7))) == 7.0
    assert len(warned) == 1  # once per process
    assert remote_counts()["compiles"] == 3
    assert remote_counts()["remote_errors"] == 1  # then left alone for RETRY_AFTER seconds


def test_a_server_that_never_answers_times_out(use_remote, monkeypatch):
    monkeypatch.setattr(remote, "TIMEOUT", 0.2)
    with socket.socket() as silent:  # accepts connections (the backlog) and says nothing
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        use_remote(f"redis://127.0.0.1:{silent.getsockname()[1]}/0")
        with pytest.warns(UserWarning, match="no reply within 0.2 s"):
            assert factor_of(build.load(source(8))) == 8.0
    assert remote_counts() == {"remote_errors": 1, "compiles": 1}


class MisbehavingServer:
    """A loopback server that answers every command with `reply`, sent in pieces of
    `piece` bytes `pause` seconds apart, then closes the connection."""

    def __init__(self, reply: bytes, piece: int = 1 << 20, pause: float = 0.0):
        self.reply, self.piece, self.pause = reply, piece, pause
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"redis://127.0.0.1:{self.listener.getsockname()[1]}/0"
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        self.listener.settimeout(0.05)
        while not self.stopping.is_set():
            try:
                connection, _ = self.listener.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(5)
                with contextlib.suppress(OSError):
                    connection.recv(65536)  # the command
                    for start in range(0, len(self.reply), self.piece):
                        if self.stopping.wait(self.pause):
                            break
                        connection.sendall(self.reply[start:start + self.piece])

    def stop(self):
        self.stopping.set()
        self.thread.join(timeout=30)
        self.listener.close()


HOSTILE_REPLIES = {
    "nested": (b"*1\r\n" * 5000 + b"$1\r\nx\r\n", {}, "nests arrays over"),
    "wide": (b"*2000000\r\n", {}, "holds over"),
    "truncated": (b"$100\r\nabc", {}, "closed the connection"),
    "overrunning": (b"$3\r\nabcdef\r\n", {}, "runs past its length"),
    "oversized entry": (b"$%d\r\n" % (remote.MAX_ENTRY + 1), {}, "over the limit"),
    "endless line": (b"+" + b"x" * 70000, {}, "reply line is too long"),
    "not a number": (b"$1e9\r\n", {}, "where a number belongs"),
    "not RESP": (b"HTTP/1.1 400 Bad Request\r\n\r\n", {}, "is not RESP"),
    "slow": (b"$-1\r\n", {"piece": 1, "pause": 0.15}, "no reply within 0.2 s"),
}


@pytest.mark.parametrize("case", HOSTILE_REPLIES)
def test_a_hostile_reply_warns_once_and_kernels_compile_here(use_remote, monkeypatch, case):
    reply, pacing, message = HOSTILE_REPLIES[case]
    monkeypatch.setattr(remote, "TIMEOUT", 0.2)
    server = MisbehavingServer(reply, **pacing)
    try:
        use_remote(server.url)
        with pytest.warns(UserWarning, match=message) as warned:
            assert factor_of(build.load(source(11))) == 11.0
            assert factor_of(build.load(source(12))) == 12.0
    finally:
        server.stop()
    assert len(warned) == 1 and str(warned[0].message).startswith(f"pyjit: the remote kernel cache {server.url} failed")
    assert remote_counts() == {"remote_errors": 1, "compiles": 2}


def test_a_deeply_nested_reply_does_not_fail_compiles(use_remote, monkeypatch):
    monkeypatch.setattr(remote, "TIMEOUT", 0.2)
    server = MisbehavingServer(b"*1\r\n" * 5000)
    try:
        use_remote(server.url)
        with pytest.warns(UserWarning, match="nests arrays over"):
            result = pyjit.compile(lambda x: np.sin(x) * 3 + 1)(np.arange(5.0))
    finally:
        server.stop()
    np.testing.assert_allclose(result, np.sin(np.arange(5.0)) * 3 + 1)
    assert remote_counts()["compiles"] >= 1


def test_without_a_key_the_remote_cache_is_off(use_remote, monkeypatch):
    use_remote(f"redis://127.0.0.1:{free_port()}/0")
    monkeypatch.delenv("PYJIT_REMOTE_CACHE_KEY")
    with pytest.warns(UserWarning, match="is off: set PYJIT_REMOTE_CACHE_KEY"):
        assert factor_of(build.load(source(4))) == 4.0
    assert remote_counts() == {"compiles": 1}  # no connection was tried


@pytest.mark.parametrize(("url", "message"), [
    ("http://localhost:6379", "is not a redis://HOST:PORT/DB address"),
    ("redis://localhost:6379/zero", "the database 'zero' is not a number"),
    ("redis://127.0.0.1:0/0", "port 0 is no server's port"),  # was: silently port 6379
    ("redis://127.0.0.1:99999/0", "out of range"),
])
def test_a_bad_address_is_refused_when_set(url, message):
    with pytest.raises(ValueError, match=rf"pyjit.config.remote_cache \(PYJIT_REMOTE_CACHE\) .*{message}"):
        config.remote_cache = url
    with pytest.raises(ValueError, match=message), config.patch(remote_cache=url):
        pass
    assert config.remote_cache is None


def test_a_bad_address_does_not_show_its_password():
    with pytest.raises(ValueError, match=r"'redis://:\*\*\*@127.0.0.1:0/0': port 0") as refused:
        config.remote_cache = "redis://:hunter2@127.0.0.1:0/0"
    assert "hunter2" not in str(refused.value)


def test_a_bad_address_in_the_environment_warns_and_leaves_the_cache_off(tmp_path):
    code = "import numpy as np, pyjit; print(pyjit.config.remote_cache, pyjit.compile(lambda x: x * 2)(np.ones(2)))"
    environment = {**os.environ, "PYJIT_CACHE_DIR": str(tmp_path), "PYJIT_REMOTE_CACHE": "redis://127.0.0.1:0/0",
                   "PYJIT_REMOTE_CACHE_KEY": SECRET, "PYTHONPATH": PACKAGE_PARENT}
    result = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, env=environment,
                            timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["None", "[2.", "2.]"]
    assert result.stderr.count("UserWarning") == 1 and "port 0 is no server's port" in result.stderr
    assert "the remote kernel cache is off" in result.stderr


def test_a_password_is_not_shown(use_remote, monkeypatch):
    monkeypatch.setattr(remote, "TIMEOUT", 0.2)
    use_remote(f"redis://:hunter2@127.0.0.1:{free_port()}/0")
    with pytest.warns(UserWarning, match=r"redis://:\*\*\*@127\.0\.0\.1") as warned:
        assert factor_of(build.load(source(10))) == 10.0
    assert "hunter2" not in str(warned[0].message)


# -- the build lease (NOTE(build-lease)) ------------------------------------------------------

def compiled_here(use_remote, text) -> tuple[str, bytes]:
    """(disk cache key, library) of C source `text` compiled on this machine without the remote cache."""
    use_remote(None, "probe")
    path = build.load(text).path
    with open(path, "rb") as file:
        return os.path.basename(path)[:-len(".so")], file.read()


WAITER = textwrap.dedent("""
    import json, sys
    from pyjit import config
    from pyjit.codegen.cpu import build
    from pyjit.utils import counters

    library = build.load(sys.argv[1])
    events = [json.loads(line) for name in __import__("os").listdir(config.trace_dir)
              for line in open(f"{config.trace_dir}/{name}")]
    print(json.dumps({"counters": dict(counters["inductor"]), "path": library.path,
                      "origins": [event["origin"] for event in events if event["event"] == "kernel"]}))
""")


def lease_wait_started(trace_dir) -> bool:
    return any('"remote_lease_wait"' in path.read_text() for path in trace_dir.glob("*.jsonl"))


@needs_redis
def test_a_process_missing_a_kernel_being_built_waits_and_loads_it(redis_server, use_remote, tmp_path):
    key, library = compiled_here(use_remote, source(11))
    use_remote(redis_server.url, "builder")
    builder = remote.RemoteCache(redis_server.url, SECRET.encode())
    entry, token = builder.lease(key)
    assert entry is None and token is not None  # this test is the process building it
    trace_dir = tmp_path / "trace"
    trace_dir.mkdir()
    environment = {**os.environ, "PYJIT_CACHE_DIR": str(tmp_path / "waiter"), "PYJIT_REMOTE_CACHE": redis_server.url,
                   "PYJIT_REMOTE_CACHE_KEY": SECRET, "PYJIT_TRACE_DIR": str(trace_dir), "PYTHONPATH": PACKAGE_PARENT}
    waiter = subprocess.Popen([sys.executable, "-P", "-W", "error", "-c", WAITER, source(11)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment)
    deadline = time.monotonic() + 120
    while not lease_wait_started(trace_dir) and waiter.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert lease_wait_started(trace_dir), waiter.stderr.read() if waiter.poll() is not None else "no wait in 120 s"
    builder.store(key, library)
    builder.release(key, "kernel", token, built=True)
    builder.close()
    output, errors = waiter.communicate(timeout=120)
    assert waiter.returncode == 0, errors
    result = json.loads(output)
    assert result["origins"] == ["remote"]
    result["counters"].pop("compiler_probes", None)
    assert result["counters"] == {"remote_lease_waits": 1, "remote_hits": 1}  # compiles: none
    assert factor_of(pyjit._C.KernelLibrary(result["path"])) == 11.0


@needs_redis
def test_a_builder_that_died_holding_the_lease_delays_a_waiter_until_it_expires(redis_server, use_remote):
    key, _ = compiled_here(use_remote, source(12))
    lease = f"pyjit-lease:{remote.RemoteCache(redis_server.url, SECRET.encode()).key_id}:kernel:{key}".encode()
    redis_server.call(b"SET", lease, b"a builder that died", b"PX", b"300")
    use_remote(redis_server.url, "machine-a")
    assert factor_of(build.load(source(12))) == 12.0
    assert remote_counts() == {"remote_lease_waits": 1, "compiles": 1, "remote_stores": 1}
    assert redis_server.call(b"GET", lease) == b"built"
    assert len(redis_server.entries()) == 1


@needs_redis
def test_a_builder_whose_compile_fails_gives_the_lease_up(redis_server, use_remote):
    use_remote(redis_server.url)
    with pytest.raises(build.BuildError):
        build.load("this is not C;\n")
    assert redis_server.call(b"KEYS", b"pyjit-lease:*") == []  # a waiter compiles at once, not after LEASE_S


# -- CUDA cubins and autotuning choices (NOTE(cuda-cache), NOTE(cuda-autotune)) -------------
# No GPU here: NVRTC and the CUDA-event timing are stand-ins that count their runs; what
# is checked is the storage, keys, signatures and lookup order those paths go through.
UNIT_KEY = cuda_build.cache_key("unit source", "sm_90", {"cupy": "14.0", "runtime": 12090, "nvrtc": "12.9"})


def timer(timings, calls):
    def time_block(block):
        calls.append(block)
        return timings[block]
    return time_block


def tune(calls, timings=None):
    timings = timings or {128: 2.0, 256: 3.0, 512: 1.0}
    return cuda_build.autotuned_block(UNIT_KEY, "g0_kernel0", (4096, 3), timer(timings, calls))


@needs_redis
def test_autotuning_choices_are_shared_signed_and_read_from_disk_first(redis_server, use_remote):
    use_remote(redis_server.url, "machine-a")
    calls = []
    assert tune(calls) == 512 and len(calls) == 3
    ((name, entry),) = redis_server.entries().items()
    assert name.startswith(b"pyjit:") and b":autotune:" in name
    assert remote.RemoteCache(redis_server.url, SECRET.encode())._verified(name.decode(), entry) is not None

    use_remote(redis_server.url, "machine-b")  # its own, empty, disk cache
    calls = []
    assert tune(calls, {128: 1.0, 256: 1.0, 512: 9.0}) == 512 and calls == []
    assert remote_counts() == {"remote_hits": 1}
    redis_server.call(b"FLUSHDB")
    counters.pop("inductor", None)
    assert tune(calls) == 512 and calls == [] and remote_counts() == {}  # the disk first: no request


def kernel_entry(entry: bytes, name: bytes, server) -> tuple[bytes, bytes]:
    """A validly signed entry of another kind (a kernel) put under the choice's name."""
    kernel_name = name.replace(b":autotune:", b":kernel:")
    signed = remote.RemoteCache(server.url, SECRET.encode())._signed(kernel_name.decode(), b'{"block": 128}')
    return name, signed


@needs_redis
@pytest.mark.parametrize("spoil", [tampered, foreign, unsigned, kernel_entry])
def test_a_choice_not_signed_with_our_key_is_timed_again_and_overwritten(redis_server, use_remote, spoil):
    use_remote(redis_server.url, "machine-a")
    tune([])
    ((name, entry),) = redis_server.entries().items()
    redis_server.call(b"SET", *spoil(entry, name, redis_server))

    use_remote(redis_server.url, "machine-b")
    calls = []
    with pytest.warns(UserWarning, match=f"refused the entry {name.decode()} .* it is timed here"):
        assert tune(calls) == 512
    assert len(calls) == 3
    assert remote_counts() == {"remote_rejected": 1, "autotuned": 1, "remote_stores": 1}
    assert redis_server.entries()[name] == entry


@needs_redis
def test_autotuning_goes_on_when_the_server_dies(redis_server, use_remote):
    use_remote(redis_server.url)
    redis_server.stop()
    calls = []
    with pytest.warns(UserWarning, match="failed"):
        assert tune(calls) == 512
    assert len(calls) == 3 and remote_counts() == {"remote_errors": 1, "autotuned": 1}


class Nvrtc:
    def __init__(self):
        self.runs = 0

    def __call__(self, source, arch):
        self.runs += 1
        return f"cubin of {source} for {arch}".encode()


@needs_redis
def test_cubins_are_shared_and_a_tampered_one_is_compiled_again(redis_server, use_remote):
    versions = {"cupy": "14.0", "runtime": 12090, "nvrtc": "12.9"}
    use_remote(redis_server.url, "machine-a")
    first = Nvrtc()
    binary, _ = cuda_build.cached_cubin("source", "sm_90", versions, first)
    assert first.runs == 1 and remote_counts() == {"remote_misses": 1, "remote_stores": 1}

    use_remote(redis_server.url, "machine-b")
    second = Nvrtc()
    assert cuda_build.cached_cubin("source", "sm_90", versions, second)[0] == binary and second.runs == 0

    ((name, entry),) = redis_server.entries().items()
    assert name.startswith(b"pyjit:") and b":cubin:" in name
    redis_server.call(b"SET", *tampered(entry, name, redis_server))
    use_remote(redis_server.url, "machine-c")
    third = Nvrtc()
    with pytest.warns(UserWarning, match="refused the entry"):
        assert cuda_build.cached_cubin("source", "sm_90", versions, third)[0] == binary
    assert third.runs == 1 and redis_server.entries()[name] == entry
