"""pyjit/frontend/breaks.py: break reasons are records that print with their place."""

import pytest

from pyjit.frontend.breaks import Break, BreakReason
from pyjit.source import SourceLoc


def test_a_reason_prints_explanation_place_and_hint():
    reason = BreakReason("unsupported", SourceLoc(__file__, 1), "call to the function print", "remove it")
    text = str(reason)
    assert text.startswith("call to the function print") and f"{__file__}:1" in text and "hint: remove it" in text


def test_kinds_are_closed():
    with pytest.raises(ValueError, match="break kind"):
        BreakReason("other", None, "x")


def test_a_break_takes_the_place_it_is_given_unless_it_has_one():
    here, there = SourceLoc("a.py", 1), SourceLoc("b.py", 2)
    assert Break("unsupported", "x").reason(here).where == here
    assert Break("unsupported", "x", where=there).reason(here).where == there
