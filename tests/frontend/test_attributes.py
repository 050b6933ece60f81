"""pyjit/frontend/attributes.py: attributes of objects, classes, constants and Tensors are
read through their sources and guarded, never baked in."""

import numpy as np
from frontend.test_array_calls import tensor_pair

import pyjit


def test_user_object_attributes_are_read_through_sources(jit):
    class Config:
        scale = 2.0

        def __init__(self, shift):
            self.shift = shift

    def shifted(x, cfg):
        return x * cfg.scale + cfg.shift

    compiled = jit(shifted)
    x = np.ones(2)
    np.testing.assert_array_equal(compiled(x, Config(1.0)), x * 2 + 1)
    np.testing.assert_array_equal(compiled(x, Config(3.0)), x * 2 + 3)  # cfg.shift is guarded
    guard = pyjit.cache_entries(compiled)[0][0]
    assert "cfg.shift == 3.0" in guard and "type(cfg) is" in guard


class Settings:
    scale = 2.0
    offsets = [1.0]


def test_class_attributes_are_guarded_not_baked_in(jit):
    def scaled(x):
        return x * Settings.scale + Settings.offsets[0]

    compiled, x = jit(scaled), np.ones(1)
    try:
        np.testing.assert_array_equal(compiled(x), [3.0])
        Settings.scale, Settings.offsets[0] = 3.0, 5.0
        np.testing.assert_array_equal(compiled(x), [8.0])
    finally:
        Settings.scale, Settings.offsets[0] = 2.0, 1.0
    guards = [guard for guard, _ in pyjit.cache_entries(compiled)]
    assert len(guards) == 2 and any("Settings.scale == 3.0" in g and "Settings.offsets[0] == 5.0" in g for g in guards)


def test_attributes_of_constants_keep_their_identity(jit):
    def bounds(x, s):
        return x + 1, s.start, s.stop

    compiled, x = jit(bounds), np.zeros(2)
    first, second = slice([1], 2), slice([1], 2)  # equal, so one entry serves both
    for s in (first, second):
        _, start, stop = compiled(x, s)
        assert start is s.start and stop == 2
    assert len(pyjit.cache_entries(compiled)) == 1


def test_requires_grad_and_grad_mode_are_guarded(jit):
    compiled = jit(lambda t: (t * 2).sum())
    with_grad, without_grad = tensor_pair()[0], tensor_pair(requires_grad=False)[0]
    assert compiled(with_grad).requires_grad
    assert not compiled(without_grad).requires_grad
    with pyjit.no_grad():
        assert not compiled(with_grad).requires_grad
    assert len(pyjit.cache_entries(compiled)) == 3
