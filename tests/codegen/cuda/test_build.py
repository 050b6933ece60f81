"""pyjit/codegen/cuda/build.py: the cubin disk cache (NOTE(cuda-cache)) and what happens
without CuPy. Launching needs a GPU: tests/gpu/."""

import importlib.util
import os

import pytest

import pyjit
from pyjit.codegen import BuildError, CompilerUnavailable
from pyjit.codegen.cuda import build as cuda_build, nvrtc
from pyjit.codegen.cuda.renderer import PRELUDE

SOURCE = PRELUDE + 'extern "C" __global__ void k(float *x) { x[threadIdx.x] = expf(x[threadIdx.x]); }\n'
VERSIONS = {"cupy": "14.0", "runtime": 12090, "nvrtc": "12.9"}


@pytest.fixture
def cache(tmp_path):
    with pyjit.config.patch(cache_dir=str(tmp_path)):
        yield tmp_path / "cuda"


class Compiler:
    """A stand-in for NVRTC that counts its runs."""

    def __init__(self):
        self.runs = 0

    def __call__(self, source, arch):
        self.runs += 1
        return f"cubin of {len(source)} for {arch}".encode()


def test_a_cubin_is_compiled_once_then_read_from_disk(cache):
    compiler = Compiler()
    first, path = cuda_build.cached_cubin(SOURCE, "sm_80", VERSIONS, compiler)
    again, same_path = cuda_build.cached_cubin(SOURCE, "sm_80", VERSIONS, compiler)
    assert first == again and path == same_path and compiler.runs == 1
    assert os.stat(cache).st_mode & 0o777 == 0o700
    with open(path[:-len(".cubin")] + ".cu") as saved:
        assert saved.read() == SOURCE


@pytest.mark.parametrize("change", [{"arch": "sm_90"}, {"versions": {**VERSIONS, "cupy": "14.1"}},
                                    {"source": SOURCE + "\n"}])
def test_the_key_covers_source_architecture_and_versions(cache, change):
    arguments = {"source": SOURCE, "arch": "sm_80", "versions": VERSIONS}
    compiler = Compiler()
    _, path = cuda_build.cached_cubin(**arguments, compile_cubin=compiler)
    _, other = cuda_build.cached_cubin(**{**arguments, **change}, compile_cubin=compiler)
    assert path != other and compiler.runs == 2


@pytest.mark.parametrize("damage", ["corrupt", "group_writable", "symlink", "no_sidecar"])
def test_an_untrusted_cubin_is_compiled_again(cache, tmp_path, damage):
    compiler = Compiler()
    good, path = cuda_build.cached_cubin(SOURCE, "sm_80", VERSIONS, compiler)
    if damage == "corrupt":
        with open(path, "r+b") as file:
            file.write(b"X")
    elif damage == "group_writable":
        os.chmod(path, 0o620)
    elif damage == "symlink":
        os.replace(path, tmp_path / "elsewhere")
        os.symlink(tmp_path / "elsewhere", path)
    else:
        os.unlink(path + ".sha256")
    binary, _ = cuda_build.cached_cubin(SOURCE, "sm_80", VERSIONS, compiler)
    assert binary == good and compiler.runs == 2
    assert not os.path.islink(path) and os.stat(path).st_mode & 0o022 == 0


@pytest.mark.skipif(nvrtc.library() is None, reason="no NVRTC library (pip install nvidia-cuda-nvrtc-cu12)")
def test_nvrtc_makes_a_cubin_for_the_architecture(cache):
    binary, _ = cuda_build.cached_cubin(SOURCE, "sm_90", VERSIONS)
    assert binary[:4] == b"\x7fELF"


def test_a_rejected_source_is_a_build_error_naming_the_saved_source(cache):
    def reject(source, arch):
        raise nvrtc.CudaCompileError("error: identifier undefined")

    with pytest.raises(BuildError, match=r"identifier undefined(.|\n)*\.cu"):
        cuda_build.cached_cubin("bad", "sm_80", VERSIONS, reject)


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed")
def test_without_cupy_cuda_kernels_are_unavailable():
    with pytest.raises(CompilerUnavailable, match="need CuPy"):
        cuda_build.cupy_module()


# -- autotuning choices (NOTE(cuda-autotune)); the timing itself needs a GPU: tests/gpu/ ----
UNIT_KEY = cuda_build.cache_key(SOURCE, "sm_80", VERSIONS)


class Timer:
    """A stand-in for the CUDA-event timing of one launch: milliseconds by block size."""

    def __init__(self, timings):
        self.timings, self.calls = timings, []

    def __call__(self, block):
        self.calls.append(block)
        return self.timings[block]


def test_an_autotuned_block_is_timed_once_then_read_from_disk(cache):
    timer = Timer({128: 3.0, 256: 1.0, 512: 2.0})
    assert cuda_build.autotuned_block(UNIT_KEY, "g0_kernel0", (1000,), timer) == 256
    assert sorted(timer.calls) == sorted(cuda_build.BLOCK_CHOICES)
    slower = Timer({128: 0.1, 256: 9.0, 512: 9.0})
    assert cuda_build.autotuned_block(UNIT_KEY, "g0_kernel0", (1000,), slower) == 256
    assert slower.calls == []  # kept on disk: another process would not time it again
    (record,) = (cache / "autotune").iterdir()
    assert os.stat(record).st_mode & 0o022 == 0 and os.stat(cache / "autotune").st_mode & 0o777 == 0o700


@pytest.mark.parametrize("change", [{"kernel": "g0_kernel1"}, {"sizes": (1001,)},
                                    {"unit_key": cuda_build.cache_key(SOURCE, "sm_90", VERSIONS)},
                                    {"unit_key": cuda_build.cache_key(SOURCE, "sm_80", {**VERSIONS, "cupy": "14.1"})}])
def test_the_autotune_key_covers_kernel_sizes_architecture_and_versions(cache, change):
    arguments = {"unit_key": UNIT_KEY, "kernel": "g0_kernel0", "sizes": (1000,)}
    cuda_build.autotuned_block(**arguments, time_block=Timer({128: 1.0, 256: 2.0, 512: 3.0}))
    timer = Timer({128: 3.0, 256: 2.0, 512: 1.0})
    assert cuda_build.autotuned_block(**{**arguments, **change}, time_block=timer) == 512
    assert len(timer.calls) == 3


@pytest.mark.parametrize("damage", ["not_a_choice", "garbage", "group_writable", "symlink"])
def test_an_untrusted_autotune_record_is_timed_again_and_replaced(cache, tmp_path, damage):
    cuda_build.autotuned_block(UNIT_KEY, "k", (7,), Timer({128: 1.0, 256: 2.0, 512: 3.0}))
    (path,) = (cache / "autotune").iterdir()
    if damage == "not_a_choice":
        path.write_text('{"block": 2048}')
    elif damage == "garbage":
        path.write_text("{")
    elif damage == "group_writable":
        os.chmod(path, 0o620)
    else:  # a link to a record someone else chose
        os.unlink(path)
        (tmp_path / "elsewhere").write_text('{"block": 512}')
        os.symlink(tmp_path / "elsewhere", path)
    timer = Timer({128: 2.0, 256: 1.0, 512: 3.0})
    assert cuda_build.autotuned_block(UNIT_KEY, "k", (7,), timer) == 256 and len(timer.calls) == 3
    assert not os.path.islink(path) and os.stat(path).st_mode & 0o022 == 0
