"""The block cache (csrc/block_cache.cpp, NOTE(block-cache)): large arrays the launcher
allocates take their data through a NumPy memory handler that keeps freed blocks for the
next request of their size."""

import os
import subprocess
import sys

import numpy as np
import pytest
from _C.test_kernel_loader import compile_library
from _C.test_launcher import SOURCE, Fallback

import pyjit
from pyjit import _C

LARGE = 1 << 22  # float64 elements: 32 MiB, what glibc maps afresh on every malloc


@pytest.fixture(scope="module")
def launcher(tmp_path_factory):
    """2x + y over any number of float64 elements, into a new array."""
    library = _C.KernelLibrary(compile_library(tmp_path_factory.mktemp("block_cache"), SOURCE))
    kernel = library.kernel("twice_plus", 3, 1)
    f64 = np.dtype(np.float64)
    return _C.Launcher(Fallback(), [(f64, (-1,)), (f64, (-1,))], [(f64, (-1,))],
                       [(kernel, (0, 1, 2), (-1,), (2,), ())], 2)


@pytest.fixture(autouse=True)
def empty_cache():
    _C.empty_block_cache()
    yield
    _C.empty_block_cache()


def inputs(size):
    return np.arange(float(size)), np.ones(size)


def address(array):
    return array.__array_interface__["data"][0]


def test_a_dropped_result_gives_its_block_to_the_next_call(launcher):
    x, y = inputs(LARGE)
    first = launcher(x, y)
    block = address(first)
    del first
    assert _C.block_cache_stats()["cached_bytes"] == LARGE * 8
    hits = _C.block_cache_stats()["hits"]
    second = launcher(x + 1, y)
    assert address(second) == block and _C.block_cache_stats()["hits"] == hits + 1
    np.testing.assert_array_equal(second, 2 * (x + 1) + y)


def test_a_kept_result_is_never_reused(launcher):
    x, y = inputs(LARGE)
    kept = [launcher(x, y) for _ in range(3)]
    assert len({address(result) for result in kept}) == 3
    for result in kept:
        np.testing.assert_array_equal(result, 2 * x + y)


def test_results_are_numpys_own_arrays(launcher):
    x, y = inputs(LARGE)
    result = launcher(x, y)
    assert result.flags.owndata and result.base is None and result.flags.writeable
    result.resize(LARGE // 2, refcheck=False)  # a changed block leaves the cache's books
    np.testing.assert_array_equal(result, (2 * x + y)[:LARGE // 2])
    del result
    assert _C.block_cache_stats()["cached_bytes"] == 0


def test_a_request_no_block_fits_empties_the_cache(launcher):
    del_me = launcher(*inputs(LARGE))
    del del_me
    assert _C.block_cache_stats()["cached_blocks"] == 1
    other = launcher(*inputs(LARGE + 1))
    stats = _C.block_cache_stats()
    assert stats["cached_blocks"] == 0 and stats["cached_bytes"] == 0
    np.testing.assert_array_equal(other, 2 * inputs(LARGE + 1)[0] + 1)


def test_small_arrays_do_not_use_the_cache(launcher):
    before = _C.block_cache_stats()
    result = launcher(*inputs(1000))
    del result
    after = _C.block_cache_stats()
    assert (after["hits"], after["misses"], after["cached_bytes"]) == (before["hits"], before["misses"], 0)


def test_a_result_glibc_keeps_pages_for_is_numpys_own_allocation(launcher):
    # Under 32 MiB, glibc's heap keeps a freed block's pages; the cache keeps out of it
    # (holding them too made the MLP training step peak over NumPy: NOTE(block-cache)).
    before = _C.block_cache_stats()
    result = launcher(*inputs(1 << 21))  # 16 MiB
    del result
    after = _C.block_cache_stats()
    assert (after["hits"], after["misses"], after["cached_bytes"]) == (before["hits"], before["misses"], 0)


@pytest.mark.parametrize("size", [0, 1, 3, 17, 1000, 8191])
def test_small_arrays_start_on_a_cache_line_and_own_their_data(launcher, size):
    # NOTE(line-aligned-buffers): two threads writing neighbouring slices of one buffer
    # must not share a line; malloc and NumPy promise only 16 bytes.
    result = launcher(*inputs(size))
    assert result.ctypes.data % 64 == 0 and result.flags.owndata and result.base is None
    np.testing.assert_array_equal(result, 2 * inputs(size)[0] + 1)
    for grown in (size + 5, 3 * size + 1000, size // 2):  # the handler's realloc moves the data with the block
        result.resize(grown, refcheck=False)
        assert result.ctypes.data % 64 == 0
        kept = min(size, grown)
        np.testing.assert_array_equal(result[:kept], (2 * inputs(size)[0] + 1)[:kept])
    del result


def test_larger_arrays_are_numpys_own(launcher):
    # NOTE(line-aligned-buffers): from 64 KiB (and below the block cache's size) a result
    # is allocated as NumPy allocates, so glibc reuses blocks between NumPy's and ours.
    result = launcher(*inputs(8192))
    assert np._core.multiarray.get_handler_name(result) == "default_allocator"
    assert result.flags.owndata and result.base is None
    np.testing.assert_array_equal(result, 2 * inputs(8192)[0] + 1)


def test_reset_empties_the_cache(launcher):
    dropped = launcher(*inputs(LARGE))
    del dropped
    assert _C.block_cache_stats()["cached_bytes"] > 0
    pyjit.reset()
    assert _C.block_cache_stats()["cached_bytes"] == 0


def run_with_limit(limit: str, code: str):
    environment = dict(os.environ, PYJIT_BLOCK_CACHE_BYTES=limit)
    return subprocess.run([sys.executable, "-P", "-c", code], env=environment, capture_output=True, text=True)


def test_the_limit_comes_from_the_environment():
    child = run_with_limit("1000", "from pyjit import _C; print(_C.block_cache_stats()['limit_bytes'])")
    assert child.returncode == 0 and child.stdout.strip() == "1000", child.stderr


def test_a_malformed_limit_is_refused_in_plain_words():
    child = run_with_limit("lots", "import pyjit")
    assert child.returncode != 0 and "PYJIT_BLOCK_CACHE_BYTES=lots is not a number of bytes" in child.stderr


def test_a_compiled_function_reuses_its_dropped_outputs():
    @pyjit.compile
    def chain(x):
        return np.sin(x) * np.cos(x) + np.exp(-x * x)

    x = np.linspace(-3, 3, 2 * LARGE, dtype=np.float32)  # 32 MiB
    expected = np.sin(x) * np.cos(x) + np.exp(-x * x)
    np.testing.assert_allclose(chain(x), expected, rtol=1e-6, atol=1e-6)  # compiles; the result is dropped
    hits = _C.block_cache_stats()["hits"]
    for _ in range(2):
        np.testing.assert_allclose(chain(x), expected, rtol=1e-6, atol=1e-6)
    assert _C.block_cache_stats()["hits"] == hits + 2


# Four 3.2 MB arrays alive at once, then all dropped: a free heap top of 12.8 MB, past
# the trim threshold glibc's own rule sets (twice the largest mapped block freed).
HEAP_PATTERN = """
import resource
import numpy as np
def rounds(count):
    for _ in range(count):
        arrays = [np.full(400_000, 1.0) for _ in range(4)]
        del arrays
rounds(3)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
rounds(20)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""
ARRAY_PAGES = 400_000 * 8 // 4096


def page_faults(prelude: str, **environment) -> int:
    child = subprocess.run([sys.executable, "-P", "-c", prelude + HEAP_PATTERN], capture_output=True, text=True,
                           env={key: value for key, value in dict(os.environ, **environment).items()
                                if value is not None})
    assert child.returncode == 0, child.stderr
    return int(child.stdout.split()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux") or os.confstr("CS_GNU_LIBC_VERSION") is None,
                    reason="the thresholds are glibc's")
def test_importing_pyjit_keeps_the_freed_heap_top_for_reuse():
    """NOTE(heap-trim): arrays under 32 MiB freed together stay in the heap, so the next
    ones take pages already mapped; the user's own malloc settings are left alone."""
    unset = dict(MALLOC_TRIM_THRESHOLD_=None, MALLOC_MMAP_THRESHOLD_=None, GLIBC_TUNABLES=None)
    assert page_faults("", **unset) > 20 * ARRAY_PAGES  # glibc alone: every round maps them afresh
    assert page_faults("import pyjit\n", **unset) < ARRAY_PAGES
    # glibc reads the variable itself (the dynamic rule is then off): pyjit must not undo it
    chosen = page_faults("import pyjit\n", **dict(unset, MALLOC_TRIM_THRESHOLD_="0", MALLOC_MMAP_THRESHOLD_="33554432"))
    assert chosen > 20 * ARRAY_PAGES
