"""pyjit/codegen/cuda_build.py: the cubin disk cache (NOTE(cuda-cache)) and what happens
without CuPy. Launching needs a GPU: tests/gpu/."""

import importlib.util
import os

import pytest

import pyjit
from pyjit.codegen import build, cuda_build, nvrtc
from pyjit.codegen.cuda_renderer import PRELUDE

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

    with pytest.raises(build.BuildError, match=r"identifier undefined(.|\n)*\.cu"):
        cuda_build.cached_cubin("bad", "sm_80", VERSIONS, reject)


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed")
def test_without_cupy_cuda_kernels_are_unavailable():
    with pytest.raises(build.CompilerUnavailable, match="need CuPy"):
        cuda_build.cupy_module()
