"""pyjit: the PyTorch 2 compiler stack rebuilt for NumPy and CuPy."""

from pyjit import _C, autograd, config, nn, optim, utils
from pyjit.autograd import compiled_autograd
from pyjit.autograd import (Tensor, allclose, arange, as_tensor, enable_grad, from_numpy, make_fx, manual_seed, no_grad,
                            ones, rand, randn, tensor, zeros)
from pyjit import frontend as _frontend
from pyjit.backends import DEFAULT_BACKEND, list_backends, lookup_backend, register_backend
from pyjit.frontend import allow_in_graph, disable, graph_break
from pyjit.logs import set_logs

__version__ = "0.1.0"

__all__ = ["Tensor", "allclose", "allow_in_graph", "arange", "as_tensor", "autograd", "cache_entries", "compile",
           "compiled_autograd", "config", "disable", "enable_grad", "explain", "from_numpy", "graph_break", "list_backends",
           "list_mode_options", "make_fx",
           "manual_seed", "nn", "no_grad", "ones", "optim", "optimize", "rand", "randn", "register_backend", "reset",
           "set_logs", "tensor", "utils", "zeros"]


def reset():
    """Forget every compiled entry and skip mark; guarded objects are released, the
    array blocks kept for reuse (NOTE(block-cache)) are freed, and `pyjit.utils.counters`
    starts again from nothing (docs/api.md)."""
    utils.counters.clear()
    _C.reset()
    _C.empty_block_cache()
    _frontend.reset()
    compiled_autograd.reset()


def cache_entries(fn):
    """The cache of `fn`'s code, most recently hit first: [(guard text, transformed code)]."""
    code = getattr(fn, "__wrapped__", fn).__code__
    return [(str(guard), transformed) for guard, transformed in _C.cache_entries(code)]


def compile(fn=None, *, fullgraph=False, dynamic=None, backend=DEFAULT_BACKEND, mode=None, options=None,
            disable=False):
    """Compile `fn` (a decorator, with or without arguments): its NumPy code is captured
    into graphs that `backend` compiles, guarded and cached per input kind. `mode`
    (`list_mode_options`) and `options` go to the backend when its compiler function
    takes them. A pyjit.nn.Module gives a `CompiledModule`: calling it runs the
    module's `forward` compiled; its attributes are the module's. Both pickle as the
    function (or module) and these arguments, and compile again where they are
    unpickled (NOTE(pickling) in pyjit/frontend/entry.py)."""
    import functools

    settings = dict(fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options,
                    disable=disable)
    if fn is None:
        return lambda fn: compile(fn, **settings)
    if mode is not None:
        list_mode_options(mode)
    compiler = _compiler(backend, mode, options)
    rebuild = functools.partial(compile, **settings)
    if isinstance(fn, nn.Module):
        forward = _frontend.compile(fn.forward, compiler=compiler, fullgraph=fullgraph, dynamic=dynamic,
                                    disable=disable)
        return nn.CompiledModule(fn, forward, rebuild)
    return _frontend.compile(fn, compiler=compiler, fullgraph=fullgraph, dynamic=dynamic, disable=disable,
                             rebuild=rebuild)


def list_mode_options(mode=None, device=None):
    """The options a `pyjit.compile` mode implies: "default", "reduce-overhead",
    "max-autotune", "max-autotune-no-cudagraphs"; with `device` ("cpu", "cuda"), which of
    them take effect there (NOTE(modes) in pyjit/backends/inductor.py)."""
    from pyjit.backends.inductor import mode_options

    return mode_options(mode, device)


def optimize(backend=DEFAULT_BACKEND, *, nopython=False, dynamic=None):
    """Capture every frame started inside `with pyjit.optimize(backend):`, or inside each
    call of a function it decorates; `nopython=True` is fullgraph."""
    return _frontend.optimize(_compiler(backend, None, None), nopython=nopython, dynamic=dynamic)


def explain(fn):
    """`pyjit.explain(fn)(*args, **kwargs)` runs `fn` once under capture with the `eager`
    backend and returns an ExplainOutput: its graphs, graph breaks and their reasons, op
    counts, guards and compile times; `str()` of it reads as torch's. The function's own
    compiled entries stay as they are (NOTE(explain))."""
    return _frontend.explain(fn, compiler=lookup_backend("eager"))


def _compiler(backend, mode, options):
    """The backend's compiler function with `mode` and `options` bound where it takes them.
    Options a backend does not take raise at once (torch.compile does the same for
    inductor's unknown options); a mode a backend does not take is accepted, as every
    backend compiles for "default"."""
    import functools
    import inspect

    compiler = lookup_backend(backend)
    try:
        parameters = inspect.signature(compiler).parameters
    except (TypeError, ValueError):
        parameters = {}
    takes_any = any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters.values())
    if options and "options" not in parameters and not takes_any:
        name = backend if isinstance(backend, str) else getattr(backend, "__name__", "the backend")
        raise RuntimeError(f"Unexpected optimization option {sorted(options)[0]!r}: backend {name!r} takes no "
                           f"options")
    given = {name: value for name, value in (("mode", mode), ("options", options))
             if value is not None and (name in parameters or takes_any)}
    return functools.partial(compiler, **given) if given else compiler
