"""Driving pyjit's frame hook by hand: what `pyjit.compile` does under the covers.

A callback installed with `_C.set_eval_frame` sees every Python function frame that
misses the per-code cache. For `scale` it returns a guard (the argument's type) and a
transformed code object (the constant 2 changed to 10, so we can see which code ran);
every later call whose argument passes a guard runs that code without the callback.

    python -P examples/frame_hook.py
"""

import numpy as np

from pyjit import _C


def scale(x):
    return x * 2


def times_ten(code):
    """`code` with its constant 2 replaced by 10: same signature, visibly different result."""
    consts = tuple(10 if type(c) is int and c == 2 else c for c in code.co_consts)
    return code.replace(co_consts=consts)


misses = []  # the FrameInfo of every frame the callback was asked about
guards = {}  # argument type name -> the guard built for it


def on_miss(frame):
    """Called on a cache miss with the hook disabled; returns SKIP, None or (guard, code)."""
    if frame.f_code is not scale.__code__:
        return _C.SKIP  # not ours: never ask about this code again
    misses.append(frame)
    arg_type = type(frame.args[0])
    guard = _C.GuardProgram(sources=[("local", 0, "x")],  # source 0: argument slot 0
                            checks=[("type", 0, arg_type)])  # type(x) is arg_type
    guards[arg_type.__name__] = guard
    return guard, times_ten(frame.f_code)


def expect(what, actual, expected):
    print(f"{what}: {actual!r}")
    if actual != expected:
        raise SystemExit(f"unexpected {what}: {actual!r}, expected {expected!r}")


# Only the calls of `scale` run under the hook; printing (numpy's Python-level repr) does not.
previous = _C.set_eval_frame(on_miss)
try:
    first = scale(np.arange(3.0))  # miss: the callback adds entry 1, the new code runs
    second = scale(np.ones(3))  # hit: same type, the callback is not called
    after_hit = len(misses)
    third = scale(7)  # miss: an int fails the ndarray guard, the callback adds entry 2
finally:
    _C.set_eval_frame(previous)

expect("first call (transformed code, x * 10)", first.tolist(), [0.0, 10.0, 20.0])
expect("second call (cache hit)", second.tolist(), [10.0, 10.0, 10.0])
expect("callback calls after the hit", after_hit, 1)
expect("third call, an int (new entry)", third, 70)
expect("callback calls in all", len(misses), 2)

print("\ncache entries of scale.__code__, most recently hit first:")
for guard, code in _C.cache_entries(scale.__code__):
    print(f"  guard: {guard}")
    print(f"  code:  {code.co_name} consts={code.co_consts} skipped={_C.is_skipped(code)}")

# A guard can be checked against any FrameInfo, and says why it fails.
array_frame, int_frame = misses
print("\nndarray guard on the array call:", guards["ndarray"].first_failure(array_frame))
print("ndarray guard on the int call:  ", guards["ndarray"].first_failure(int_frame))
expect("ndarray guard holds for the int call", guards["ndarray"].check(int_frame), False)

# reset() drops every entry (and SKIP mark); without a hook scale is plain again.
_C.reset()
expect("\nentries after reset()", len(_C.cache_entries(scale.__code__)), 0)
expect("scale(7) with no hook", scale(7), 14)
