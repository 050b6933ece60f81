"""pyjit/frontend/codemap.py: a value per code object, by identity, dropped with the code."""

import gc

from pyjit.frontend.codemap import CodeMap


def code_of(source: str):
    return compile(source, "<codemap test>", "exec")


def test_values_are_kept_per_code_object_not_per_equal_code():
    kept = CodeMap()
    first, second = code_of("x = 1"), code_of("x = 1")
    assert first == second and first is not second
    assert kept.get(first, list) is kept.get(first, list)
    assert kept.get(second, list) is not kept.get(first, list)
    assert first in kept and second in kept


def test_a_value_goes_with_its_code():
    kept = CodeMap()
    code = code_of("y = 2")
    kept.get(code, list)
    del code
    gc.collect()
    assert not kept._entries
