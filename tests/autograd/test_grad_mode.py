"""pyjit/autograd/grad_mode.py: no_grad, enable_grad, set_grad_enabled, per thread."""

import threading

import pytest

import pyjit
from pyjit.autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled


def test_no_grad_and_enable_grad_nest_and_restore():
    x = pyjit.tensor([1.0], requires_grad=True)
    with pyjit.no_grad():
        assert not is_grad_enabled() and not (x * 2).requires_grad
        with pyjit.enable_grad():
            assert is_grad_enabled() and (x * 2).requires_grad
        assert not is_grad_enabled()
    assert is_grad_enabled()


def test_the_mode_is_restored_when_the_block_raises():
    with pytest.raises(ValueError):
        with no_grad():
            raise ValueError
    assert is_grad_enabled()


def test_decorators_with_and_without_parentheses():
    @no_grad
    def bare():
        return is_grad_enabled()

    @no_grad()
    def called():
        return is_grad_enabled()

    @enable_grad
    def enabled():
        return is_grad_enabled()

    assert bare.__name__ == "bare" and not bare() and not called()
    with no_grad():
        assert enabled()
    assert is_grad_enabled()


def test_one_context_object_may_be_entered_again_inside_itself():
    context = no_grad()
    with context:
        with enable_grad():
            with context:
                assert not is_grad_enabled()
            assert is_grad_enabled()
    assert is_grad_enabled()


def test_set_grad_enabled_as_a_statement_a_block_and_a_decorator():
    set_grad_enabled(False)
    assert not is_grad_enabled()
    set_grad_enabled(True)
    with set_grad_enabled(False):
        assert not is_grad_enabled()
    assert is_grad_enabled()

    @set_grad_enabled(False)
    def off():
        return is_grad_enabled()

    assert is_grad_enabled() and not off() and is_grad_enabled()


def test_the_mode_belongs_to_the_thread():
    seen = []
    with no_grad():
        thread = threading.Thread(target=lambda: seen.append(is_grad_enabled()))
        thread.start()
        thread.join()
    assert seen == [True]
