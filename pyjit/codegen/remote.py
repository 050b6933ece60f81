"""A kernel cache shared by many machines through a Redis server, behind the disk cache.

NOTE(remote-cache): with `config.remote_cache = "redis://HOST:PORT/DB"`
(PYJIT_REMOTE_CACHE), `build.load` looks a kernel up, after this process's table and
the disk cache (NOTE(kernel-cache)), under `pyjit:<key id>:kernel:<disk cache key>` in
Redis; a kernel it compiles is stored there. A fetched library is written to the disk
cache as if it had been compiled here, so the disk cache stays the first level. CUDA
cubins (`pyjit:<key id>:cubin:<key>`, NOTE(cuda-cache)) and autotuning choices
(`pyjit:<key id>:autotune:<key>`, NOTE(cuda-autotune)) are shared the same way: each
entry's kind is part of its name. The key id (16 hex digits of an HMAC of a fixed text
under the signing key) keeps the entries of each signing key apart: a process given
another key, by mistake or not, finds none of the fleet's entries and overwrites none
of them, so it cannot make the rest of the fleet rebuild.

Loading a shared library is running its code, so entries are signed: an entry is
`pyjit-kernel-1` + HMAC-SHA256(key, Redis key + library) + library, the key being the
bytes of $PYJIT_REMOTE_CACHE_KEY (read when the cache is first used). The Redis key is
part of what is signed, so a valid entry copied under another key is refused too. An
entry that is unsigned, tampered with, signed with another key or stored under another
key is never loaded: it is counted (counters["inductor"]["remote_rejected"]), logged
(a warning naming the server and the key), the kernel is compiled here, and the entry
is overwritten with the signed library. Without a key the remote cache is off, with a
warning. The server is trusted with nothing but availability.

The server is never waited on for long: every request (connect, send and reply) must
finish within TIMEOUT seconds, and its replies are read with bounds, never recursion
(a line of MAX_LINE bytes, an entry of MAX_ENTRY, arrays MAX_DEPTH deep holding
MAX_ITEMS elements). A server that is down, slow, full (Redis refuses writes once at
maxmemory) or answers nonsense (over a bound, cut short, not RESP) makes the kernel
compile locally, warns once per process, and the remote cache is left alone for
RETRY_AFTER seconds, so later
compiles do not each wait for the timeout. Redis is spoken to directly (a few lines of
RESP2 over a socket): the standard library is enough, and no client package is needed.

Counters: counters["inductor"]["remote_hits"], ["remote_misses"], ["remote_stores"],
["remote_rejected"], ["remote_errors"], ["remote_lease_waits"] (NOTE(build-lease)).

NOTE(build-lease): workers that miss the same kernel at the same moment (a Dask cluster
starting on a chunked array) would each compile it. So a process that misses its disk
cache takes the kernel's build lease before it looks in Redis: `SET
pyjit-lease:<key id>:<kind>:<key> <token> NX PX LEASE_S` (`build_lease`; named by the
key id as entries are, so a process with another key never holds the fleet's leases). The one that gets it
fetches the entry, or compiles and stores it, then marks the lease `built` (for LEASE_S
more); the others poll every POLL_S seconds, and when they see `built` they fetch the
entry (a kernel event of origin `remote`). Each process fetches the entry once at most,
so a refused entry is refused (and warned about) once. A builder
that fails releases the lease (only its own: compare-and-delete), and one that dies
holding it blocks the others at most until the lease expires, after LEASE_S seconds:
the next waiter takes it and compiles. A waiter gives up after WAIT_LIMIT seconds and
compiles without the lease, and a server that fails at any point (down, or a Redis too
old for EVAL) leaves the kernel to compile locally as every failure does. A compile
taking longer than LEASE_S is done twice (once after the lease expires): wasted work,
never a wrong kernel. Each wait is counted (counters["inductor"]["remote_lease_waits"])
and traced as a `remote_lease_wait` event when it starts.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import socket
import threading
import time
import warnings

from .. import config, trace
from ..utils import counters

__all__ = ["RemoteCache", "RemoteError", "build_lease", "fetch", "reset", "store"]

TIMEOUT = 0.5  # seconds one request may take in all
RETRY_AFTER = 30.0  # seconds the cache is left alone after a failure
MAX_ENTRY = 256 << 20  # a reply larger than this is refused unread
LEASE_S = 30.0  # seconds a build lease lasts: the most a builder that died delays the others
POLL_S = 0.05  # seconds between a waiter's looks at the lease
WAIT_LIMIT = 2 * LEASE_S  # seconds a waiter waits in all before compiling without the lease
_BUILT = b"built"  # the lease's value once its entry is stored
_RELEASE = b"if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"
_MAGIC = b"pyjit-kernel-1"
_DIGEST = hashlib.sha256().digest_size
_FAILED = object()  # what a request to a failing server answers
MAX_DEPTH = 4  # arrays in arrays a reply may nest
MAX_ITEMS = 1 << 20  # elements of arrays a reply may hold in all
MAX_LINE = 65536  # bytes of a reply line (a status, error or length)

_lock = threading.Lock()
_caches: dict[tuple[str, int], RemoteCache | None] = {}  # (url, pid) -> cache; None: off
_warned: set[str] = set()


class RemoteError(OSError):
    """The server could not be reached, did not answer in time, or answered an error."""


def fetch(key: str, kind: str = "kernel") -> bytes | None:
    """The entry of `kind` ("kernel", "cubin", "autotune") stored under the disk cache
    key `key`, verified; None when there is no remote cache, no entry, the server fails,
    or the entry is refused."""
    cache = _cache()
    return cache.fetch(key, kind) if cache is not None else None


def store(key: str, data: bytes, kind: str = "kernel") -> None:
    """Share `data` as the entry of `kind` under `key` (signed); a failing server only warns."""
    cache = _cache()
    if cache is not None:
        cache.store(key, data, kind)


@contextlib.contextmanager
def build_lease(key: str, kind: str = "kernel"):
    """Around compiling the entry of `kind` under `key` (NOTE(build-lease)): yields the
    entry, stored already or by the process this one waited for (use it, compile
    nothing), or None: compile and `store` it, holding the lease until the block ends.
    Without a remote cache, or when the server fails, it yields None at once."""
    cache = _cache()
    entry, token = cache.lease(key, kind) if cache is not None else (None, None)
    if token is None:
        yield entry
        return
    try:
        yield None
    except BaseException:
        cache.release(key, kind, token)
        raise
    cache.release(key, kind, token, built=True)


def reset() -> None:
    """Forget the connections and warnings of this process (the next use reads the
    configuration again)."""
    with _lock:
        for cache in _caches.values():
            if cache is not None:
                cache.close()
        _caches.clear()
        _warned.clear()


def _cache() -> RemoteCache | None:
    url = config.remote_cache
    if not url:
        return None
    with _lock:
        index = (url, os.getpid())  # a forked child must not share its parent's socket
        if index not in _caches:
            _caches[index] = _open_cache(url)
        return _caches[index]


def _open_cache(url: str) -> RemoteCache | None:
    secret = os.environ.get("PYJIT_REMOTE_CACHE_KEY", "")
    if not secret:
        _warn_once("no key", f"pyjit: the remote kernel cache {url} is off: set PYJIT_REMOTE_CACHE_KEY to the "
                             f"key its entries are signed with (NOTE(remote-cache))")
        return None
    return RemoteCache(url, secret.encode())  # the address was checked when set (NOTE(config-checks))


def _warn_once(what: str, message: str) -> None:
    if what not in _warned:
        _warned.add(what)
        warnings.warn(message, stacklevel=5)


class RemoteCache:
    """Signed kernel entries on one Redis server (NOTE(remote-cache))."""

    def __init__(self, url: str, secret: bytes):
        self.host, self.port, self.db, self.password = config.redis_address(url)
        # What warnings and trace events show: no password.
        self.url = url.replace(f":{self.password}@", ":***@") if self.password else url
        self._secret = secret
        # Names the signing key without giving it away (NOTE(remote-cache)).
        self.key_id = hmac.new(secret, b"pyjit remote cache key id", hashlib.sha256).hexdigest()[:16]
        self._connection: _Connection | None = None
        self._down_until = 0.0

    def _name(self, kind: str, key: str) -> str:
        return f"pyjit:{self.key_id}:{kind}:{key}"

    def _lease_name(self, kind: str, key: str) -> bytes:
        return f"pyjit-lease:{self.key_id}:{kind}:{key}".encode()

    def fetch(self, key: str, kind: str = "kernel") -> bytes | None:
        name = self._name(kind, key)
        entry = self._request(b"GET", name.encode())
        if entry is _FAILED:
            return None
        if entry is None:
            counters["inductor"]["remote_misses"] += 1
            return None
        library = self._verified(name, entry)
        if library is None:
            counters["inductor"]["remote_rejected"] += 1
            trace.emit("remote_rejected", server=self.url, key=name)
            warnings.warn(f"pyjit: refused the entry {name} of the remote kernel cache {self.url}: it is not "
                          f"signed with this PYJIT_REMOTE_CACHE_KEY (tampered with, foreign or unsigned); "
                          f"it is {'timed' if kind == 'autotune' else 'compiled'} here and the entry overwritten", stacklevel=4)
            return None
        counters["inductor"]["remote_hits"] += 1
        return library

    def store(self, key: str, library: bytes, kind: str = "kernel") -> None:
        name = self._name(kind, key)
        if self._request(b"SET", name.encode(), self._signed(name, library)) is not _FAILED:
            counters["inductor"]["remote_stores"] += 1

    def lease(self, key: str, kind: str = "kernel") -> tuple[bytes | None, bytes | None]:
        """The entry of `kind` under `key`, or the right to compile it (NOTE(build-lease)):
        (entry, None) when it is stored, at once or by the process this one waited for;
        (None, token) when this process holds the build lease; (None, None): compile
        without it (the server failed, the entry is refused, or WAIT_LIMIT passed).
        The entry is fetched once at most."""
        name = self._lease_name(kind, key)
        token = os.urandom(16).hex().encode()
        started = time.monotonic()
        waited = False
        while True:
            taken = self._request(b"SET", name, token, b"NX", b"PX", b"%d" % (LEASE_S * 1000))
            if taken is _FAILED:
                return None, None
            if taken is not None:  # ours; after a wait the holder failed or died, storing nothing
                entry = None if waited else self.fetch(key, kind)
                if entry is not None:
                    self.release(key, kind, token)
                return (entry, None) if entry is not None else (None, token)
            holder = self._request(b"GET", name)
            if holder == _BUILT:
                return self.fetch(key, kind), None
            if holder is _FAILED or time.monotonic() - started > WAIT_LIMIT:
                return None, None
            if holder is not None:  # None: it ended just now; take it
                if not waited:
                    waited = True
                    counters["inductor"]["remote_lease_waits"] += 1
                    trace.emit("remote_lease_wait", server=self.url, key=name.decode())
                time.sleep(POLL_S)

    def release(self, key: str, kind: str, token: bytes, built: bool = False) -> None:
        """Mark the lease `built` (the entry is stored: waiters fetch it) while it
        lasts, or give it up, only while this process still holds it, so that a waiter
        compiles."""
        name = self._lease_name(kind, key)
        if built:
            self._request(b"SET", name, _BUILT, b"XX", b"PX", b"%d" % (LEASE_S * 1000))
        else:
            self._request(b"EVAL", _RELEASE, b"1", name, token)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _signed(self, name: str, library: bytes) -> bytes:
        mac = hmac.new(self._secret, name.encode() + b"\0" + library, hashlib.sha256).digest()
        return _MAGIC + mac + library

    def _verified(self, name: str, entry: bytes) -> bytes | None:
        if not isinstance(entry, bytes) or not entry.startswith(_MAGIC):
            return None
        library = entry[len(_MAGIC) + _DIGEST:]
        expected = self._signed(name, library)
        return library if hmac.compare_digest(expected, entry) else None

    def _request(self, *command: bytes):
        """The reply to `command`, or _FAILED when the server failed (warned once)."""
        if time.monotonic() < self._down_until:
            return _FAILED
        try:
            if self._connection is None:
                self._connection = _Connection(self.host, self.port, TIMEOUT)
                if self.password is not None:
                    self._connection.call(b"AUTH", self.password.encode())
                if self.db:
                    self._connection.call(b"SELECT", str(self.db).encode())
            return self._connection.call(*command)
        except (OSError, ValueError) as error:
            self.close()
            self._down_until = time.monotonic() + RETRY_AFTER
            counters["inductor"]["remote_errors"] += 1
            trace.emit("remote_error", server=self.url, error=str(error))
            _warn_once(f"down {self.url}", f"pyjit: the remote kernel cache {self.url} failed ({error}); kernels "
                                           f"compile locally, and it is tried again in {RETRY_AFTER:g} s")
            return _FAILED


def _number(text: bytes) -> int:
    """A RESP length or integer: an optional minus and at most 19 digits."""
    digits = text[1:] if text[:1] == b"-" else text
    if not (0 < len(digits) <= 19 and digits.isdigit()):
        raise RemoteError(f"the server's reply has {text[:40]!r} where a number belongs")
    return int(text)


class _Connection:
    """One Redis connection speaking RESP2; every call finishes within `timeout` seconds
    or raises RemoteError (an error reply too, e.g. OOM when the server is full)."""

    def __init__(self, host: str, port: int, timeout: float):
        self.timeout = timeout
        self._buffer = b""
        try:
            self._socket = socket.create_connection((host, port), timeout=timeout)
        except OSError as error:
            raise RemoteError(f"cannot connect to {host}:{port}: {error}") from None

    def close(self) -> None:
        self._socket.close()

    def call(self, *arguments: bytes):
        deadline = time.monotonic() + self.timeout
        message = b"*%d\r\n" % len(arguments) + b"".join(b"$%d\r\n%s\r\n" % (len(part), part)
                                                         for part in arguments)
        self._socket.settimeout(self.timeout)
        self._socket.sendall(message)
        return self._reply(deadline)

    def _reply(self, deadline: float):
        """One reply, read without recursion: the arrays being filled are a stack, at
        most MAX_DEPTH deep and MAX_ITEMS elements in all (pyjit's commands need one level)."""
        arrays: list[tuple[list, int]] = []  # (elements so far, length)
        items = 0
        while True:
            line = self._line(deadline)
            if line[:1] == b"*" and (length := _number(line[1:])) > 0:
                items += length
                if len(arrays) == MAX_DEPTH or items > MAX_ITEMS:
                    raise RemoteError(f"the server's reply nests arrays over {MAX_DEPTH} deep "
                                      f"or holds over {MAX_ITEMS} elements")
                arrays.append(([], length))
                continue
            value = self._value(line, deadline)
            while arrays:
                elements, length = arrays[-1]
                elements.append(value)
                if len(elements) < length:
                    break
                value = arrays.pop()[0]
            else:
                return value

    def _value(self, line: bytes, deadline: float):
        """The value a reply line starts, other than a non-empty array."""
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            raise RemoteError(rest.decode(errors="replace"))
        if kind == b":":
            return _number(rest)
        if kind == b"$":
            size = _number(rest)
            if size < 0:
                return None
            if size > MAX_ENTRY:
                raise RemoteError(f"an entry of {size} bytes is over the limit of {MAX_ENTRY}")
            data = self._read(size + 2, deadline)
            if data[-2:] != b"\r\n":
                raise RemoteError("the server's reply is not RESP: an entry runs past its length")
            return data[:-2]
        if kind == b"*":
            return None if _number(rest) < 0 else []
        raise RemoteError(f"the server's reply {line[:40]!r} is not RESP")

    def _line(self, deadline: float) -> bytes:
        while b"\r\n" not in self._buffer:
            if len(self._buffer) > MAX_LINE:
                raise RemoteError("the server's reply line is too long")
            self._receive(deadline)
        line, self._buffer = self._buffer.split(b"\r\n", 1)
        return line

    def _read(self, size: int, deadline: float) -> bytes:
        while len(self._buffer) < size:
            self._receive(deadline)
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data

    def _receive(self, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise RemoteError(f"no reply within {self.timeout:g} s")
        self._socket.settimeout(remaining)
        try:
            chunk = self._socket.recv(1 << 20)
        except TimeoutError:
            raise RemoteError(f"no reply within {self.timeout:g} s") from None
        if not chunk:
            raise RemoteError("the server closed the connection")
        self._buffer += chunk
