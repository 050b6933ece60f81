"""NVRTC, CUDA's runtime compiler, without a GPU: compiles generated CUDA to PTX for a
given architecture and returns its log, so kernels can be checked on any machine.

NOTE(nvrtc-check): CuPy compiles kernels through NVRTC on the user's machine; here the
same compiler is called directly through ctypes, from the `nvidia-cuda-nvrtc-cu12` wheel
(found in the interpreter's site-packages) or a CUDA toolkit's libnvrtc, else `nvcc
-ptx` where nvcc is on PATH. Nothing here needs a GPU or a driver. `compile_ptx` raises
`CudaCompileError` with the log when NVRTC rejects the source; warnings come back in
the log (NVRTC has no option that makes them errors).
"""

from __future__ import annotations

import ctypes
import glob
import os
import shutil
import site
import subprocess
import sys
import tempfile

from ...exc import PyjitError


class CudaCompileError(PyjitError):
    """NVRTC (or nvcc) rejected generated CUDA source; the message holds its log."""


class NoCudaCompiler(PyjitError):
    """Neither NVRTC nor nvcc is on this machine."""


_library: ctypes.CDLL | None = None


def _candidates() -> list[str]:
    roots = list(site.getsitepackages()) + [site.getusersitepackages()] + list(sys.path)
    found = []
    for root in dict.fromkeys(roots):
        found += sorted(glob.glob(os.path.join(root, "nvidia", "cuda_nvrtc", "lib", "libnvrtc.so*")))
        found += sorted(glob.glob(os.path.join(root, "nvidia", "cu*", "lib", "libnvrtc.so*")))
    found += sorted(glob.glob("/usr/local/cuda*/lib64/libnvrtc.so*"))
    return [path for path in found if "builtins" not in path and ".alt." not in path]


def library() -> ctypes.CDLL | None:
    """libnvrtc, loaded once; None when there is none."""
    global _library
    if _library is None:
        for path in _candidates():
            try:
                _library = ctypes.CDLL(path)
                break
            except OSError:
                continue
    return _library


def available() -> str | None:
    """Which compiler `compile_ptx` would use ("nvrtc" or "nvcc"), None when neither."""
    if library() is not None:
        return "nvrtc"
    return "nvcc" if shutil.which("nvcc") else None


def compile_ptx(source: str, arch: str = "sm_80", name: str = "pyjit.cu", quick: bool = False) -> tuple[str, str]:
    """(PTX, log) of `source` compiled for `arch` (e.g. "sm_90"). `quick` runs the
    assembler (ptxas) without optimizing, which halves the time of a large check; the
    front end and its warnings are the same."""
    nvrtc = library()
    if nvrtc is not None:
        return _with_nvrtc(nvrtc, source, arch, name, quick)
    if shutil.which("nvcc"):
        return _with_nvcc(source, arch, quick)
    raise NoCudaCompiler("no NVRTC (pip install nvidia-cuda-nvrtc-cu12) and no nvcc on PATH")


def compile_cubin(source: str, arch: str, name: str = "pyjit.cu") -> bytes:
    """The cubin (machine code for `arch`, e.g. "sm_80") of `source`, through NVRTC."""
    nvrtc = library()
    if nvrtc is None:
        raise NoCudaCompiler("no NVRTC library (pip install nvidia-cuda-nvrtc-cu12)")
    return _with_nvrtc(nvrtc, source, arch, name, False, cubin=True)[0]


def version() -> str | None:
    """NVRTC's version ("12.9"), None without it."""
    nvrtc = library()
    if nvrtc is None:
        return None
    major, minor = ctypes.c_int(), ctypes.c_int()
    nvrtc.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    return f"{major.value}.{minor.value}"


def _with_nvrtc(nvrtc, source: str, arch: str, name: str, quick: bool, cubin: bool = False):
    program = ctypes.c_void_p()
    status = nvrtc.nvrtcCreateProgram(ctypes.byref(program), source.encode(), name.encode(), 0, None, None)
    if status:
        raise CudaCompileError(f"nvrtcCreateProgram failed with status {status}")
    try:
        options = [f"--gpu-architecture={arch}".encode(), b"--std=c++17"] + ([b"-Xptxas=-O0"] if quick else [])
        status = nvrtc.nvrtcCompileProgram(program, len(options), (ctypes.c_char_p * len(options))(*options))
        size = ctypes.c_size_t()
        nvrtc.nvrtcGetProgramLogSize(program, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        nvrtc.nvrtcGetProgramLog(program, log)
        text = log.value.decode(errors="replace")
        if status:
            raise CudaCompileError(f"NVRTC could not compile {name} for {arch}:\n{text}")
        if cubin:
            nvrtc.nvrtcGetCUBINSize(program, ctypes.byref(size))
            binary = ctypes.create_string_buffer(size.value)
            nvrtc.nvrtcGetCUBIN(program, binary)
            return binary.raw, text
        nvrtc.nvrtcGetPTXSize(program, ctypes.byref(size))
        ptx = ctypes.create_string_buffer(size.value)
        nvrtc.nvrtcGetPTX(program, ptx)
        return ptx.value.decode(), text
    finally:
        nvrtc.nvrtcDestroyProgram(ctypes.byref(program))


def _with_nvcc(source: str, arch: str, quick: bool) -> tuple[str, str]:
    """One nvcc run to a cubin (so ptxas's warnings show too), keeping the PTX it made."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "kernel.cu")
        with open(path, "w") as file:
            file.write(source)
        command = ["nvcc", "-cubin", f"-arch={arch}", "-std=c++17", "--keep", "--keep-dir", folder,
                   *(["-Xptxas=-O0"] if quick else []), path, "-o", path + ".cubin"]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode:
            raise CudaCompileError(f"nvcc could not compile for {arch}:\n{done.stderr}")
        ptx = [name for name in os.listdir(folder) if name.endswith(".ptx")]
        with open(os.path.join(folder, ptx[0])) as file:
            return file.read(), done.stderr
