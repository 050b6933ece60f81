"""Running a backward pass through compiled autograd (NOTE(compiled-autograd)).

NOTE(compiled-autograd-commit): nothing the backward owes the program is written while
the compiled graph runs. The graph returns each leaf's new `.grad` (backward()) or the
captured gradients (grad()); only once it has returned are the `.grad`s written — the
first one taken as the leaf's `.grad` when it is a fresh array nothing else holds, else
copied, as the tape does; a later one copied into the existing `.grad` in place — and,
without retain_graph, the saved values of the nodes that ran released. Before that,
every output of the compiled callable is checked against the graph's output (None, or
an array of its shape, dtype and device): a compiler whose callable returns something
else is refused as a whole. So a hook that raises or returns a wrong shape, a
compiler_fn that raises or returns something that cannot be called, a callable whose
results are not the graph's, or a saved value the tape refuses, gives the tape's
exception (or a TypeError or RuntimeError naming compiler_fn) with every `.grad` and
the graph exactly as before.
"""

from __future__ import annotations

import functools
import weakref

import numpy as np

from ... import logs
from ...utils import capture_disabled, counters
from .. import engine
from ..device import array_module, device_of, is_traced
from ..tensor import Tensor, wrap_array
from .cache import Cache, Variant
from .capture import Walk
from .trace import GradientsChanged, trace

_log = logs.get_logger("compiled_autograd")
_verbose_log = logs.get_logger("compiled_autograd_verbose")
_executors: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_strong_executors: dict = {}  # compilers that cannot be weakly referenced, by id, and partials, by value (kept alive)


class CompiledAutograd:
    """The reverse-pass executor of one compiler_fn (NOTE(backward-executor) in engine.py),
    with its cache of compiled graphs."""

    def __init__(self, compiler_fn, weak: bool = True):
        # Weakly: the executors are kept by compiler, and a compiler dropped by its
        # user (a lambda per enable block) takes its cache with it.
        self._compiler = weakref.ref(compiler_fn) if weak else lambda: compiler_fn
        self.cache = Cache()

    @property
    def compiler_fn(self):
        return self._compiler()

    @classmethod
    def for_compiler(cls, compiler_fn) -> CompiledAutograd:
        """The executor of `compiler_fn`: one per compiler, so its cache outlives an enable block.
        Equal partials are one compiler: every `pyjit.compile` makes its own backward compiler,
        a partial of its backend and flags (frontend/backward.md), and compiled code with the
        same settings shares one cache, as torch's compiled autograd has one."""
        key = _partial_key(compiler_fn)
        if key is not None:
            return _strong_executors.setdefault(key, cls(compiler_fn, weak=False))
        try:
            executor = _executors.get(compiler_fn)
            if executor is None:
                executor = _executors[compiler_fn] = cls(compiler_fn)
        except TypeError:
            executor = _strong_executors.setdefault(id(compiler_fn), cls(compiler_fn, weak=False))
        return executor

    def __call__(self, roots: list, grads: list, *, retain_graph: bool = False, inputs: list | None = None):
        if any(is_traced(grad) for grad in grads):
            # Inside a make_fx trace, the tape's ops record into that trace (NOTE(make-fx)).
            return engine.run(roots, grads, retain_graph=retain_graph, inputs=inputs)
        walk = Walk(roots, grads, inputs)
        variant = self.cache.lookup(walk, self._compile)
        if variant.compiled is None:
            return engine.run(roots, grads, retain_graph=retain_graph, inputs=inputs)
        try:
            results = _run(variant, walk)
        except GradientsChanged as change:  # NOTE(compiled-autograd-absent)
            self.cache.learn(walk, change.site, change.absent)
            _verbose_log.debug("%s: this backward runs on the tape and the next is traced anew", change)
            return engine.run(roots, grads, retain_graph=retain_graph, inputs=inputs)
        return _commit(variant, walk, results, retain_graph)

    def _compile(self, walk: Walk, dynamic: set, absent: dict) -> Variant:
        try:
            with capture_disabled():  # NOTE(compile-without-capture)
                traced = trace(walk, dynamic, absent)
        except Exception as error:  # noqa: BLE001 - what cannot be traced runs on the tape, which is always right
            counters["compiled_autograd"]["tape_fallbacks"] += 1
            _verbose_log.debug("this backward runs on the tape: tracing it failed (%s: %s)", type(error).__name__,
                               error)
            return _TapeVariant()
        counters["compiled_autograd"]["captures"] += 1
        _log.debug("compiled autograd graph %d:\n%s", counters["compiled_autograd"]["captures"], traced.module.code)
        with capture_disabled():
            compiled = self.compiler_fn(traced.module)
        if not callable(compiled):
            raise TypeError(f"compiled autograd: compiler_fn returned a {type(compiled).__name__}, which cannot be "
                            f"called: it must return the compiled graph (a callable, such as the GraphModule it "
                            f"was given)")
        counters["compiled_autograd"]["compiles"] += 1
        return Variant(traced, compiled)


def _partial_key(compiler_fn) -> tuple | None:
    if type(compiler_fn) is not functools.partial:
        return None
    key = ("partial", compiler_fn.func, compiler_fn.args, tuple(sorted(compiler_fn.keywords.items())))
    try:
        hash(key)
    except TypeError:
        return None
    return key


class _TapeVariant:
    """A structure whose backward could not be traced: the tape runs it."""

    compiled = None

    def accepts(self, sizes) -> bool:
        return True


def _run(variant: Variant, walk: Walk) -> tuple:
    traced = variant.traced
    arguments = []
    if traced.takes_hooks:
        arguments.append(tuple(walk.hooks))
    if traced.takes_nodes:
        arguments.append(tuple(walk.order))
    results = variant.compiled(*arguments, *walk.lifted)
    expected = variant.outputs(walk)
    if not isinstance(results, (tuple, list)) or len(results) != len(expected):
        raise TypeError(f"compiled autograd: the callable compiler_fn returned gave {type(results).__name__}, not "
                        f"the graph's {len(expected)} outputs")
    return tuple(_checked(index, value, meta) for index, (value, meta) in enumerate(zip(results, expected)))


def _checked(index: int, value, meta):
    """Output `index` of the compiled callable, refused unless it is what the graph returns
    there: None, or an array of the output's shape, dtype and device (NOTE(compiled-autograd-commit))."""
    if meta is None:
        if value is not None:
            raise TypeError(f"compiled autograd: output {index} of the callable compiler_fn returned is "
                            f"{_described(value)}, where the graph returns None")
        return value
    shape, dtype, device = meta
    wanted = f"a {dtype} array of shape {shape} on {device}"
    if device == "cpu" and isinstance(value, np.generic) and value.shape == shape:
        value = np.asarray(value)  # NumPy's 0-d results are scalars
    if not _is_array(value):
        raise TypeError(f"compiled autograd: output {index} of the callable compiler_fn returned is "
                        f"{_described(value)}, not a gradient: the graph returns {wanted} there")
    if tuple(value.shape) != shape or value.dtype != dtype or device_of(value) != device:
        raise RuntimeError(f"compiled autograd: output {index} of the callable compiler_fn returned is "
                           f"{_described(value)}, where the graph returns {wanted}")
    return value


def _is_array(value) -> bool:
    return type(value) is np.ndarray or type(value).__module__.startswith("cupy")


def _described(value) -> str:
    if _is_array(value):
        return f"a {value.dtype} array of shape {tuple(value.shape)} on {device_of(value)}"
    text = repr(value)
    return f"a {type(value).__name__} ({text if len(text) <= 40 else text[:37] + '...'})"


def _commit(variant: Variant, walk: Walk, results: tuple, retain_graph: bool):
    """NOTE(compiled-autograd-commit)."""
    traced = variant.traced
    retained = results[len(results) - len(traced.retained):]
    results = results[:len(results) - len(traced.retained)]
    if walk.accumulate:
        taken = {id(value) for value in walk.lifted}
        for position, value in zip(traced.outputs, results):
            _write_grad(walk.order[position - 1].variable, value, taken)
            taken.add(id(value))
    for index, value in zip(traced.retained, retained):
        walk.hooks[index](Tensor(value))
    if not retain_graph:
        for position in traced.ran:
            walk.order[position - 1].release()
    return None if walk.accumulate else list(results)


def _write_grad(variable, value, taken: set) -> None:
    if variable._grad is None:
        fresh = (type(value) is np.ndarray and value.dtype == variable.dtype and value.base is None and id(value)
                 not in taken and value.flags.c_contiguous and value.flags.writeable)
        module = array_module(value)
        variable._grad = wrap_array(value if fresh else module.array(value, dtype=variable.dtype, copy=True, order="C"))
        return
    target = variable._grad._array
    array_module(target).copyto(target, value, casting="unsafe")
    variable._grad._version_counter.value += 1


def reset() -> None:
    """Forget every compiled backward graph."""
    _executors.clear()
    _strong_executors.clear()
