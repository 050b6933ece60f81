"""pyjit/codegen/cuda/nvrtc.py: CUDA's compiler called without a GPU (NOTE(nvrtc-check)); the
whole kernel corpus goes through it in tests/codegen/cuda/test_emulation.py."""

import pytest

from pyjit.codegen.cuda import nvrtc

pytestmark = pytest.mark.skipif(nvrtc.available() is None,
                                reason="no NVRTC (pip install nvidia-cuda-nvrtc-cu12) and no nvcc")


def test_ptx_for_the_architecture_asked():
    ptx, log = nvrtc.compile_ptx('extern "C" __global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }', "sm_90")
    assert ".entry k" in ptx and ".target sm_90" in ptx and "warning" not in log


def test_warnings_come_back_in_the_log():
    _, log = nvrtc.compile_ptx('extern "C" __global__ void k(float *x) { int unused; x[0] = 1.0f; }', "sm_80")
    assert "warning" in log and "unused" in log


def test_a_rejected_source_raises_with_the_log():
    with pytest.raises(nvrtc.CudaCompileError, match="undefined"):
        nvrtc.compile_ptx('extern "C" __global__ void k(float *x) { x[0] = not_declared; }', "sm_80")


@pytest.mark.skipif(nvrtc.library() is None, reason="no NVRTC library (the nvcc fallback makes no cubin)")
def test_cubins_and_the_version():
    assert nvrtc.compile_cubin('extern "C" __global__ void k() {}', "sm_80")[:4] == b"\x7fELF"
    assert nvrtc.version().split(".")[0].isdigit()
