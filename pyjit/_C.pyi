"""pyjit's native core: the PEP 523 frame hook, per-code caches, guards, timing, the
kernel loader.

NOTE(frame-hook): a *callback* is installed per thread with `set_eval_frame`. While a
thread has one, every Python function frame that thread starts is first looked up in
the per-code cache kept in the code object's `co_extra`:

* a hit (some entry's guard holds) runs that entry's transformed code, without calling
  the callback and without running any Python bytecode for the lookup;
* a miss calls `callback(frame_info)`, with the hook disabled for everything the
  callback runs. It returns
    - `None`: run the original code this time;
    - `SKIP`: never hand this code object to a callback again (until `reset()`) and run
      the original code; afterwards the frame costs one pointer test;
    - `(guard, code)`: add the entry to the code's cache and run `code` for this frame.
  A callback that raises an `Exception`, or answers something unusable, is reported
  through `sys.unraisablehook` and the frame runs its original code; KeyboardInterrupt
  and SystemExit propagate from the frame.

Generator, coroutine and async-generator frames, module- or class-level frames, and
frames of codes with no value stack (`co_stacksize == 0`: on 3.12+ `def f(): return 1`)
are never handed to a callback; their codes are marked SKIP on first sight. A transformed `code` must have the same argument signature
(argument counts, `*args`/`**kwargs` flags) and the same free variables as the original.
The transformed code object is itself marked `SKIP`; frames it starts are hooked as usual.
"""

import os
from collections.abc import Callable, Sequence
from types import CodeType, FunctionType
from typing import Any, Final

import numpy

class FrameInfo:
    """What a callback sees of a frame about to start. It keeps no frame alive."""

    f_code: CodeType
    f_globals: dict[str, Any]
    f_builtins: dict[str, Any]
    f_func: FunctionType
    args: tuple[Any, ...]
    """The bound arguments in slot order: positional, keyword-only, *args tuple, **kwargs dict."""
    @property
    def f_locals(self) -> dict[str, Any]:
        """Argument name -> value."""

SKIP: Final[object]

Callback = Callable[[FrameInfo], "None | object | tuple[GuardProgram, CodeType]"]

def set_eval_frame(callback: Callback | None) -> Callback | None:
    """Install `callback` for the calling thread (None removes it); returns the previous one.

    The interpreter-wide eval function is pyjit's only while some thread has a callback."""

def get_eval_frame() -> Callback | None:
    """The calling thread's callback."""

def hook_installed() -> bool:
    """Whether the interpreter's eval-frame function is currently pyjit's."""

def reset() -> None:
    """Drop every cache entry and every SKIP mark; guarded objects are released."""

def cache_entries(code: CodeType) -> list[tuple[GuardProgram, CodeType]]:
    """The entries of `code`'s cache, most recently hit first."""

def mark_skip(code: CodeType) -> None: ...
def is_skipped(code: CodeType) -> bool: ...

class GuardProgram:
    """A guard compiled to a check program evaluated in C.

    sources: a list; each item names a value, reached from the frame or from an
    earlier source (by its index in the list):
        ("local", slot, name)     the frame's argument in slot `slot` (FrameInfo.args order)
        ("global", name)          frame globals[name]
        ("builtin", name)         frame builtins[name]
        ("closure", index, name)  contents of the function's closure cell `index`
        ("attr", parent, name)    getattr(sources[parent], name)
        ("item", parent, key)     sources[parent][key]
    A source that cannot be read (missing attribute, key, global) fails the guard.

    checks: a list, all of which must hold:
        ("type", src, type)          type(value) is type
        ("id", src, obj)             value is obj (obj is kept alive until reset)
        ("eq", src, const)           type(value) is type(const) and value == const;
                                     const is int, float, complex, str, bytes, bool,
                                     None or a tuple of these
        ("len", src, n)              len(value) == n
        ("dict_keys", src, keys)     type(value) is dict and tuple(value) == keys (in order)
        ("array", src, spec)         an array match; spec is a dict:
            "type": exact type (numpy.ndarray, cupy.ndarray, ...)        required
            "dtype": dtype (anything numpy.dtype() accepts)              required
            "shape": tuple; each item an int (static), None (any size) or
                     a str symbol like "s0" (any size >= 2; equal wherever the
                     same symbol appears in this program)                required
            "strides": None (default: any), "C" or "F" (contiguous), or a tuple
                       of ints (bytes) and None (any)
            "writeable": None (default: any), True or False
            "device": None (default: any) or the device id (value.device.id)
        ("python", src, fn, text)    fn(value) is truthy (src None: fn()); runs Python,
                                     so only for rare checks. `text` describes it.
        ("compiler", None, obj, text)  the calling thread's callback has a `compiler`
                                     attribute that is obj (NOTE(compiler-guard) in
                                     pyjit/frontend/convert.py); `text` describes it.
    Raises TypeError / ValueError for a malformed program.
    """

    def __init__(self, sources: Sequence[tuple[Any, ...]], checks: Sequence[tuple[Any, ...]]) -> None: ...
    def check(self, frame: FrameInfo) -> bool:
        """Whether every check holds for `frame` (the same path the hook takes)."""
    def first_failure(self, frame: FrameInfo) -> str | None:
        """A readable reason for the first failing check, e.g.
        "array 'x' size mismatch at index 0: expected 4, actual 5"; None if all hold."""
    def __str__(self) -> str:
        """One line per check, in readable Python-like text."""

class CompiledFunction:
    """A C callable: installs `callback` for the duration of each call of `fn`.

    It binds like a function (as a method on classes) and has a __dict__, so
    functools.update_wrapper works on it; `__wrapped__` is `fn`."""

    __wrapped__: Callable[..., Any]
    callback: Callback | None
    def __init__(self, fn: Callable[..., Any], callback: Callback | None) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __get__(self, obj: object, objtype: type | None = None) -> Any: ...

def bench(fn: Callable[..., Any], args: tuple[Any, ...], n: int, warmup: int = 0) -> list[float]:
    """Call fn(*args) `warmup` times untimed, then `n` times; the seconds each timed call took."""


erf: numpy.ufunc
"""The error function as a NumPy ufunc (loops e->e, f->f, d->d, g->g) computed by the C
library's erf, so eager results and generated C kernels agree; NumPy has no erf."""

class KernelLibrary:
    """A shared library of generated kernels (pyjit/codegen/cpu/build.py compiles them).

    Opened with dlopen(path, RTLD_NOW | RTLD_LOCAL), raising OSError with dlerror()'s
    text; closed (dlclose) when the object dies, which is after its last kernel dies.
    Libraries that the dlopen pulled into the process (the OpenMP runtime) stay loaded
    for good: their worker threads outlive every kernel call."""

    path: str
    def __init__(self, path: str | os.PathLike[str]) -> None: ...
    def kernel(self, name: str, num_buffers: int, num_sizes: int | None = None) -> Kernel:
        """The library's function `name` (AttributeError if it has no such symbol).

        `num_buffers` (0..64) arrays lead every call; `num_sizes` (0..512) sizes follow,
        or any number of them up to 512 when it is None. Neither can be checked against
        the C function: they must match the function's code."""

class Kernel:
    """A function `void NAME(char *const *buffers, const int64_t *sizes)` of a KernelLibrary.

    `kernel(*arrays, *sizes)` passes each array's data pointer (PyArray_DATA) in
    `buffers` and each size, a Python int (or anything with __index__) converted to
    int64, in `sizes`; it returns None. The arrays must be numpy.ndarray (subclasses
    too; TypeError otherwise); a size gives the TypeError or OverflowError of
    PyLong_AsLongLong; a wrong argument count is a TypeError, more than 512 sizes a
    ValueError; keyword arguments are refused. Dtype, layout, bounds and writeability
    are the caller's to get right: the kernel trusts them. The GIL is released during
    the call. Cannot be instantiated directly; the kernel keeps its library alive."""

    name: str
    library: KernelLibrary
    num_buffers: int
    num_sizes: int | None
    def __call__(self, *args: numpy.ndarray | int) -> None: ...

class Launcher:
    """Runs a graph's kernels from C (NOTE(c-launcher) in csrc/launcher.cpp).

    `Launcher(fallback, inputs, buffers, steps, outputs, guards=(), *, reuse_buffers=False)`.
    A size is an int:
    >= 0 a static size, -(k + 1) the k-th size symbol (at most 64). `inputs` holds one
    (dtype, shape) per positional argument, which must be exactly a numpy.ndarray of
    that dtype (or an equivalent one), C-contiguous, whose axis sizes equal the shape's:
    each item a size or a tuple of sizes the axis must all equal; a symbol is bound by
    the first axis it sizes. `guards` are (size, relation, size) that must hold, the
    relation one of == != < <= > >=. `buffers` are the (dtype, shape) of the values the
    steps make: an array allocated (numpy.empty) before the step whose `allocate` lists
    it, or a view step's result. Slots number the inputs, then the buffers. `steps` are
    (kernel, slots, sizes, allocate, release): a Kernel, the slots of its arrays and its
    size arguments in order, the buffer slots to allocate before it and the slots to
    drop after it; or (function, slots, rows, allocate, release): a callable other than
    a Kernel (numpy.matmul) called as `function(*operands, out=output)`, the slots its
    operands' then its output's, `rows` true to view the first operand and the output
    as 2-D matrices of their rows where the first operand is C-contiguous
    (NOTE(c-launcher-matmul)); its error, if it raises,
    comes out of the call; or (name, (source, result), parameters, allocate, release):
    a view (NOTE(c-launcher-views)), "reshape" to the shape `parameters` (sizes),
    "transpose" by the axes `parameters`, or "getitem" of the index `parameters`.
    `outputs` is a slot (the result) or a sequence of slots (a tuple of
    them). A call with other arguments, or with keywords, returns
    `fallback(*args, **kwargs)`. ValueError for a malformed description (a symbol no
    input binds, an unknown relation, a step that does not fit its kernel).
    `reuse_buffers`: each buffer's array is taken again at the next call when nobody else
    holds it and its shape is the call's (NOTE(launcher-buffer-reuse)). It has a
    __dict__ for attributes."""

    fallback: Callable[..., Any]
    def __init__(self, fallback: Callable[..., Any], inputs: Sequence[tuple[Any, Sequence[int | Sequence[int]]]],
                 buffers: Sequence[tuple[Any, Sequence[int]]],
                 steps: Sequence[tuple[Kernel | Callable[..., Any] | str, Sequence[int], Any,
                                       Sequence[int], Sequence[int]]],
                 outputs: int | Sequence[int], guards: Sequence[tuple[int, str, int]] = (), *,
                 reuse_buffers: bool = False) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
