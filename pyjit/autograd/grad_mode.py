"""Grad mode: whether operations on tensors record on the tape, per thread.

`no_grad`, `enable_grad` and `set_grad_enabled(mode)` are context managers and
decorators (`@no_grad` and `@no_grad()` both work, as in PyTorch); the mode they set
holds for the thread that entered them and is restored on exit, exceptions included.
"""

from __future__ import annotations

import functools
import threading

class _State(threading.local):
    enabled = True  # each thread starts recording (a class attribute: no failing lookup per op)


_state = _State()


def is_grad_enabled() -> bool:
    """True when operations on tensors that require grad record on the tape."""
    return _state.enabled


def _set_enabled(mode: bool) -> None:
    _state.enabled = mode


class _GradMode:
    """Grad mode `mode` for a block or, used as a decorator, for each call."""

    def __init__(self, mode: bool):
        self.mode = mode
        self._previous: list[bool] = []  # a stack: the same object may be entered again inside

    def __enter__(self):
        self._previous.append(is_grad_enabled())
        _set_enabled(self.mode)
        return self

    def __exit__(self, *exc_info):
        _set_enabled(self._previous.pop())
        return False

    def __call__(self, function):
        mode = self.mode

        @functools.wraps(function)
        def decorated(*args, **kwargs):
            with _GradMode(mode):
                return function(*args, **kwargs)
        return decorated


class no_grad(_GradMode):  # noqa: N801  (PyTorch's spelling)
    """Operations do not record on the tape; their results do not require grad."""

    def __new__(cls, function=None):
        if function is None:
            return super().__new__(cls)
        return _GradMode(False)(function)  # the bare decorator form: @no_grad

    def __init__(self, function=None):
        super().__init__(False)


class enable_grad(_GradMode):  # noqa: N801
    """Operations record again (inside a `no_grad` block, say)."""

    def __new__(cls, function=None):
        if function is None:
            return super().__new__(cls)
        return _GradMode(True)(function)

    def __init__(self, function=None):
        super().__init__(True)


class set_grad_enabled(_GradMode):  # noqa: N801
    """Grad mode on or off by `mode`. As in PyTorch it takes effect when called, so that
    `set_grad_enabled(False)` works as a plain statement too; as a decorator it puts the
    mode back at once and sets it for each call instead."""

    def __init__(self, mode: bool):
        super().__init__(bool(mode))
        self._previous.append(is_grad_enabled())
        _set_enabled(self.mode)

    def __enter__(self):
        return self  # already set; __exit__ restores what was there before the call

    def __call__(self, function):
        _set_enabled(self._previous.pop())
        return super().__call__(function)
