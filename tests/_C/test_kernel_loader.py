"""The kernel loader (csrc/kernel_loader.cpp): KernelLibrary and Kernel.

The libraries are tiny C files compiled here with the system compiler.
"""

import os
import shutil
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from pyjit import _C

SOURCE = r"""
#include <stdint.h>
#include <time.h>

/* out[0..2] = the buffer addresses; out[3] = how many sizes; out[4..] = the sizes */
void echo(char *const *buffers, const int64_t *sizes) {
  int64_t *out = (int64_t *)buffers[0];
  for (int i = 0; i < 3; ++i) out[i] = (int64_t)(intptr_t)buffers[i];
  for (int64_t i = 0; i < sizes[0]; ++i) out[4 + i] = sizes[i];
}

void add(char *const *buffers, const int64_t *sizes) {
  const double *x = (const double *)buffers[0], *y = (const double *)buffers[1];
  double *out = (double *)buffers[2];
  for (int64_t i = 0; i < sizes[0]; ++i) out[i] = x[i] + y[i];
}

void nothing(char *const *buffers, const int64_t *sizes) { (void)buffers; (void)sizes; }

/* flags[0] = 1, then wait (at most ~5 s) for flags[1]; flags[2] = whether it came */
void handshake(char *const *buffers, const int64_t *sizes) {
  volatile int64_t *flags = (volatile int64_t *)buffers[0];
  struct timespec pause = {0, 1000000};
  flags[0] = 1;
  for (int i = 0; i < 5000 && !flags[1]; ++i) nanosleep(&pause, 0);
  flags[2] = flags[1];
  (void)sizes;
}
"""


def compile_library(directory, source, name="kernels", flags=()):
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler")
    source_path = directory / f"{name}.c"
    source_path.write_text(source)
    library_path = directory / f"{name}.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-O1", *flags, "-o", str(library_path), str(source_path)],
                   check=True)
    return str(library_path)


@pytest.fixture(scope="module")
def library_path(tmp_path_factory):
    return compile_library(tmp_path_factory.mktemp("kernel_loader"), SOURCE)


@pytest.fixture
def library(library_path):
    return _C.KernelLibrary(library_path)


def address(array):
    return array.__array_interface__["data"][0]


def mapped(path):
    with open("/proc/self/maps") as maps:
        return any(line.rstrip().endswith(path) for line in maps)


def test_load_and_call(library):
    add = library.kernel("add", 3)
    x, y, out = np.arange(5.0), np.full(5, 0.5), np.zeros(5)
    assert add(x, y, out, 5) is None
    np.testing.assert_array_equal(out, x + y)
    add(x, y, out, 2)
    add(y, y, out, 2)
    np.testing.assert_array_equal(out, [1.0, 1.0, 2.5, 3.5, 4.5])


def test_buffers_and_sizes_arrive_in_order(library):
    echo = library.kernel("echo", 3)
    out = np.zeros(16, np.int64)
    base = np.arange(12.0)
    view, strided = base[3:], base[::2]
    sizes = [5, -1, 2**63 - 1, -(2**63), 0]
    echo(out, view, strided, *sizes)
    assert list(out[:3]) == [address(out), address(base) + 3 * 8, address(base)]
    assert list(out[4:9]) == sizes


@pytest.mark.parametrize("size", [np.int64(3), np.int32(3), True, 3])
def test_sizes_take_anything_with_index(library, size):
    echo = library.kernel("echo", 3)
    out = np.zeros(8, np.int64)
    echo(out, out, out, 2, size)
    assert out[5] == int(size)


@pytest.mark.parametrize(("size", "error"), [(2**63, OverflowError), (-(2**63) - 1, OverflowError),
                                             (1.5, TypeError), ("3", TypeError), (None, TypeError),
                                             (np.float64(2.0), TypeError)])
def test_bad_sizes_raise_like_pylong_aslonglong(library, size, error):
    with pytest.raises(error):
        library.kernel("add", 3)(np.zeros(1), np.zeros(1), np.zeros(1), size)


@pytest.mark.parametrize("buffer", [[1.0, 2.0], memoryview(b"ab"), None, 3, np.float64(1.0)])
def test_buffers_must_be_ndarrays(library, buffer):
    add = library.kernel("add", 3)
    with pytest.raises(TypeError, match=r"kernel 'add': argument 1 must be a numpy.ndarray"):
        add(np.zeros(2), buffer, np.zeros(2), 1)


def test_ndarray_subclasses_are_arrays(library):
    class Sub(np.ndarray):
        pass

    out = np.zeros(2)
    library.kernel("add", 3)(np.ones(2).view(Sub), np.ones(2), out, 2)
    np.testing.assert_array_equal(out, [2.0, 2.0])


def test_argument_counts(library):
    add = library.kernel("add", 3)
    arrays = [np.zeros(2)] * 3
    with pytest.raises(TypeError, match=r"takes 3 array\(s\) then its sizes, 2 arguments given"):
        add(*arrays[:2])
    library.kernel("nothing", 3)(*arrays)  # no sizes is fine when num_sizes is not given
    fixed = library.kernel("add", 3, num_sizes=1)
    assert fixed.num_sizes == 1
    for args in (arrays, [*arrays, 1, 2]):
        with pytest.raises(TypeError, match=r"takes 3 array\(s\) and 1 size\(s\)"):
            fixed(*args)
    fixed(*arrays, 0)


def test_at_most_512_sizes(library):
    nothing = library.kernel("nothing", 0)
    nothing(*range(512))
    with pytest.raises(ValueError, match="513 sizes; at most 512"):
        nothing(*range(513))


def test_keyword_arguments_are_refused(library):
    with pytest.raises(TypeError, match="no keyword arguments"):
        library.kernel("nothing", 0)(size=1)


@pytest.mark.parametrize(("args", "error", "message"), [
    (("add", 65), ValueError, "num_buffers must be between 0 and 64, not 65"),
    (("add", -1), ValueError, "num_buffers must be between 0 and 64"),
    (("add", 1, 513), ValueError, "num_sizes must be between 0 and 512, not 513"),
    (("add", 1.0), TypeError, "integer"),
    ((b"add", 1), TypeError, "str"),
    (("add\0", 1), ValueError, "null character"),
])
def test_kernel_arguments_are_checked(library, args, error, message):
    with pytest.raises(error, match=message):
        library.kernel(*args)


def test_missing_symbol_raises_attribute_error_naming_it(library, library_path):
    with pytest.raises(AttributeError, match="has no symbol 'no_such_kernel'") as info:
        library.kernel("no_such_kernel", 1)
    assert library_path in str(info.value)


def test_bad_paths_raise_oserror_with_dlerror_text(tmp_path):
    missing = tmp_path / "missing.so"
    with pytest.raises(OSError, match="No such file or directory") as info:
        _C.KernelLibrary(str(missing))
    assert str(missing) in str(info.value)
    text = tmp_path / "text.so"
    text.write_text("not a shared library")
    with pytest.raises(OSError, match=str(text)):
        _C.KernelLibrary(text)  # os.PathLike works too
    with pytest.raises(TypeError):
        _C.KernelLibrary(3)


def test_attributes_and_repr(library, library_path):
    assert library.path == library_path
    assert repr(library) == f"<pyjit._C.KernelLibrary {library_path!r}>"
    add = library.kernel("add", 3)
    assert (add.name, add.num_buffers, add.num_sizes, add.library) == ("add", 3, None, library)
    assert repr(add) == f"<pyjit._C.Kernel 'add' of {library_path!r}>"
    with pytest.raises(TypeError):
        _C.Kernel()
    with pytest.raises(AttributeError):
        add.num_buffers = 2


def test_kernels_keep_their_library_loaded(tmp_path):
    path = compile_library(tmp_path, SOURCE, name="lifetime")
    library = _C.KernelLibrary(path)
    add = library.kernel("add", 3)
    del library
    assert mapped(path)
    out = np.zeros(1)
    add(np.ones(1), np.ones(1), out, 1)
    assert out[0] == 2.0
    del add
    assert not mapped(path)  # dlclosed with its last object


def test_the_gil_is_released_during_a_call(library):
    flags = np.zeros(3, np.int64)
    thread = threading.Thread(target=library.kernel("handshake", 1), args=(flags,))
    thread.start()
    while not flags[0]:  # only runs while the kernel's thread has let go of the GIL
        pass
    flags[1] = 1
    thread.join()
    assert flags[2] == 1


def test_openmp_runtime_outlives_closed_libraries(tmp_path):
    # Unmapping libgomp under its idle worker threads would kill the process, so this
    # runs in a child.
    source = textwrap.dedent("""
        #include <stdint.h>
        void twice(char *const *buffers, const int64_t *sizes) {
          double *x = (double *)buffers[0];
        #pragma omp parallel for
          for (int64_t i = 0; i < sizes[0]; ++i) x[i] *= 2;
        }
    """)
    path = compile_library(tmp_path, source, name="openmp", flags=("-fopenmp",))
    child = textwrap.dedent(f"""
        import time
        import numpy as np
        from pyjit import _C
        for _ in range(3):
            x = np.ones(100000)
            _C.KernelLibrary({path!r}).kernel("twice", 1)(x, x.size)
            assert (x == 2).all()
        time.sleep(0.05)
        print("survived")
    """)
    result = subprocess.run([sys.executable, "-P", "-c", child], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "survived"
