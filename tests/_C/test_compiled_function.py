"""CompiledFunction (csrc/compiled_function.cpp): a C callable that installs its
callback for the duration of each call of the wrapped function."""

import functools
import inspect

import pytest

from pyjit import _C


def current_callback():
    return _C.get_eval_frame()


def declining(frame):
    return None


def outer_callback(frame):
    return None


def test_callback_is_installed_only_during_the_call(hooked):
    compiled = _C.CompiledFunction(current_callback, declining)
    assert _C.get_eval_frame() is None
    assert compiled() is declining
    assert _C.get_eval_frame() is None
    with hooked(outer_callback):
        assert compiled() is declining
        assert _C.get_eval_frame() is outer_callback


def fails(message):
    raise ValueError(message)


def test_previous_callback_is_restored_when_fn_raises(hooked):
    compiled = _C.CompiledFunction(fails, declining)
    with hooked(outer_callback):
        with pytest.raises(ValueError, match="inner failure"):
            compiled("inner failure")
        assert _C.get_eval_frame() is outer_callback
    assert _C.get_eval_frame() is None


def test_none_callback_disables_the_hook_during_the_call(hooked):
    seen = []
    compiled = _C.CompiledFunction(current_callback, None)
    with hooked(lambda frame: seen.append(frame.f_code)):
        assert compiled() is None
        current_callback()
    # Only the direct call, made with the outer callback installed, was handed over.
    assert seen.count(current_callback.__code__) == 1


def tagged(x):
    return x, "orig"


def test_wrapped_function_frame_goes_to_the_callback(const_swap, hooked):
    backend = const_swap(tagged, "orig", "jit")
    compiled = _C.CompiledFunction(tagged, backend)
    assert compiled(1) == (1, "jit")
    assert compiled(2) == (2, "jit")
    assert backend.calls == 1
    assert tagged(3) == (3, "orig")


def keywords(a, *, b, c=3, **rest):
    return a, b, c, rest


def test_arguments_and_keywords_pass_through(hooked):
    compiled = _C.CompiledFunction(keywords, declining)
    assert compiled(1, b=2) == (1, 2, 3, {})
    assert compiled(a=1, b=2, c=4, d=5) == (1, 2, 4, {"d": 5})
    with pytest.raises(TypeError):
        compiled(1)


class Accumulator:
    def __init__(self):
        self.total = 0

    def add(self, amount, *, times=1):
        self.total += amount * times
        return self

    add_compiled = _C.CompiledFunction(add, declining)


def test_binds_as_a_method(hooked):
    accumulator = Accumulator()
    assert accumulator.add_compiled(2, times=3) is accumulator
    assert accumulator.total == 6
    assert Accumulator.add_compiled(accumulator, 1) is accumulator
    assert accumulator.total == 7


def documented(x, y=2):
    """Adds two numbers."""
    return x + y


def test_update_wrapper_and_wrapped(hooked):
    compiled = _C.CompiledFunction(documented, declining)
    assert compiled.__wrapped__ is documented
    assert compiled.callback is declining
    assert functools.update_wrapper(compiled, documented) is compiled
    assert compiled.__name__ == "documented"
    assert compiled.__qualname__ == "documented"
    assert compiled.__doc__ == "Adds two numbers."
    assert compiled.__module__ == documented.__module__
    assert compiled.__wrapped__ is documented
    assert inspect.signature(compiled) == inspect.signature(documented)
    assert compiled(1) == 3
