"""The engines the harness compares: what each runs for a workload, and how it compiles it.

* `numpy`: the workload's NumPy function as NumPy runs it, the baseline of every ratio.
* `pyjit-BACKEND`: `pyjit.compile(fn, backend=BACKEND)` for each of pyjit's own backends
  that is registered (`eager`, `aot_eager`, `inductor`), and `pyjit-inductor:MODE` with
  `mode=MODE` for each mode beyond the default (`pyjit.list_mode_options`).
  Workloads with a `pyjit.Tensor` flavour (the training step) run that flavour.
* `pyjit-tape`: the Tensor flavour uncompiled: pyjit's eager autograd tape, the baseline
  the compiled training step has to beat.
* the CUDA rows, `cupy` (the NumPy function on CuPy arrays: CuPy eager) and
  `pyjit-inductor@cuda` (`pyjit.compile` of it on CuPy arrays: fused CUDA kernels), each
  call ending with a stream synchronize so its time is the GPU's; they run only where
  CuPy sees a GPU (`gpu_missing()` says why not), elsewhere their rows say "no GPU".
* the peers, only when installed (never dependencies of pyjit): `torch.compile` of the
  NumPy function (TorchDynamo traces NumPy code), `numba` (`numba.njit`) and `jax.jit`
  of the NumPy function with its module global `np` bound to `jax.numpy`.
"""

from __future__ import annotations

import functools
import importlib.util
import types
from dataclasses import dataclass
from typing import Callable

import numpy as np
from workloads import Case, Workload

PYJIT_BACKENDS = ("eager", "aot_eager", "inductor")
INDUCTOR_MODES = ("reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")  # SPEC section 2
PEERS = {"torch.compile": "torch", "numba": "numba", "jax.jit": "jax"}
# What `pip install` takes to add a peer. pyproject.toml's `bench` extra has Numba and JAX
# (CPU); torch stays out, as its default wheel brings CUDA's libraries (gigabytes): its
# CPU build comes from PyTorch's own package index.
PEER_INSTALL = {"torch.compile": "torch --index-url https://download.pytorch.org/whl/cpu", "numba": "numba",
                "jax.jit": "jax[cpu]"}


@dataclass(frozen=True)
class Engine:
    name: str
    kind: str  # "numpy", "tape", "pyjit", "mode" (an inductor mode beyond the default), "gpu" or "peer"
    compile: Callable[[Callable], Callable]
    disk_cache: bool = False  # a fresh process can start warm, so the warm start is measured

    @property
    def pyjit(self) -> bool:
        """Compiles with pyjit, so pyjit's graph and graph-break counters are reported."""
        return self.kind in ("pyjit", "mode") or (self.kind == "gpu" and self.name.startswith("pyjit-"))

    @property
    def compiles(self) -> bool:
        return self.kind not in ("numpy", "tape")

    def applies(self, workload: Workload) -> bool:
        return workload.tensor is not None or self.kind != "tape"

    def case(self, workload: Workload, quick: bool) -> Case:
        tensor = workload.tensor is not None and self.kind in ("tape", "pyjit", "mode")
        case = (workload.tensor if tensor else workload.numpy)(quick)
        return _on_gpu(case) if self.kind == "gpu" else case


def gpu_missing() -> str | None:
    """Why the CUDA rows cannot run here ("no GPU", ...), or None."""
    if importlib.util.find_spec("cupy") is None:
        return "no GPU (CuPy is not installed)"
    import cupy

    try:
        return None if cupy.cuda.runtime.getDeviceCount() else "no GPU"
    except Exception:  # CuPy's CUDARuntimeError: no driver
        return "no GPU (no CUDA driver)"


def _on_gpu(case: Case) -> Case:
    """The case with its arrays on the GPU, and results brought back to be observed."""
    import cupy

    args = tuple(cupy.asarray(arg) if isinstance(arg, np.ndarray) else arg for arg in case.args)
    return Case(case.fn, args, lambda result: case.observe(_to_host(result)))


def _to_host(value):
    if type(value).__module__.startswith("cupy"):
        return value.get()
    if isinstance(value, (tuple, list)):
        return type(value)(_to_host(item) for item in value)
    return value


def _synchronized(fn: Callable) -> Callable:
    """`fn`, each call waiting for the GPU work it queued."""
    import cupy

    def call(*args):
        result = fn(*args)
        cupy.cuda.get_current_stream().synchronize()
        return result
    return call


def _pyjit_compile(backend: str, mode: str | None, fn: Callable) -> Callable:
    import pyjit

    return pyjit.compile(fn, backend=backend, mode=mode)


def _uncompiled(fn: Callable) -> Callable:
    return fn


def _torch_compile(fn: Callable) -> Callable:
    import torch

    return torch.compile(fn)


def _numba_compile(fn: Callable) -> Callable:
    import numba

    return numba.njit(fn)


def _jax_compile(fn: Callable) -> Callable:
    """jax.jit cannot trace calls to NumPy itself, so the same code runs with its global
    `np` bound to `jax.numpy` (helpers it calls keep NumPy's and fail to trace); each call
    waits for its result."""
    import jax
    import jax.numpy as jnp

    rebound = types.FunctionType(fn.__code__, {**fn.__globals__, "np": jnp}, fn.__name__, fn.__defaults__,
                                 fn.__closure__)
    jitted = jax.jit(rebound)

    def call(*args):  # jax dispatches asynchronously, on the CPU too: a call returns before its work is done
        return jax.block_until_ready(jitted(*args))
    return call


def _cupy_eager(fn: Callable) -> Callable:
    return _synchronized(fn)


def _pyjit_cuda(fn: Callable) -> Callable:
    import pyjit

    return _synchronized(pyjit.compile(fn))


_PEER_COMPILERS = {"torch.compile": _torch_compile, "numba": _numba_compile, "jax.jit": _jax_compile}


def installed_peers() -> list[str]:
    """The peers importable here, by engine name."""
    return [name for name, module in PEERS.items() if importlib.util.find_spec(module) is not None]


def all_engines() -> dict[str, Engine]:
    """Every engine this installation can run, by name, NumPy first."""
    import pyjit

    engines = [Engine("numpy", "numpy", _uncompiled), Engine("pyjit-tape", "tape", _uncompiled)]
    engines += [Engine(f"pyjit-{backend}", "pyjit", functools.partial(_pyjit_compile, backend, None),
                       disk_cache=backend == "inductor")
                for backend in PYJIT_BACKENDS if backend in pyjit.list_backends(exclude_tags=None)]
    engines += [Engine(f"pyjit-inductor:{mode}", "mode", functools.partial(_pyjit_compile, "inductor", mode),
                       disk_cache=True) for mode in INDUCTOR_MODES]
    engines += [Engine("cupy", "gpu", _cupy_eager), Engine("pyjit-inductor@cuda", "gpu", _pyjit_cuda, disk_cache=True)]
    engines += [Engine(name, "peer", _PEER_COMPILERS[name], disk_cache=name == "torch.compile")
                for name in installed_peers()]
    return {engine.name: engine for engine in engines}
