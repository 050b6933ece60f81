"""pyjit/frontend/strings.py: f-strings and str.format on captured values are folded
(NOTE(string-formatting)); formatting an array breaks."""

import numpy as np
import pytest

from pyjit.utils import counters


def formats(x, n, scale, log):
    log.append(f"n={n} scale={scale:.2f} shape={x.shape} {n:>4}|{n!r}|{'s'!a}")
    log.append("size {} of {}".format(x.shape[0], n) + " " + str(n) + repr(scale) + format(n, "03d"))
    log.append("-".join(["a", str(n)]).upper())
    return np.sin(x) * n


@pytest.mark.parametrize("dynamic", [None, True])
def test_f_strings_and_str_format_on_captured_values_are_folded(jit, dynamic):
    compiled = jit(formats, dynamic=dynamic)
    for size, n in ((4, 3), (4, 3), (5, 7), (6, 7)):
        got, want = [], []
        np.testing.assert_allclose(compiled(np.ones(size), n, 0.5, got), formats(np.ones(size), n, 0.5, want))
        assert got == want  # a new n or size is a new constant: guarded, never stale
    assert not counters["graph_break"], dict(counters["graph_break"])


def test_formatting_an_array_breaks_and_gives_pythons_text(jit):
    def shows(x, log):
        y = np.cos(x)
        log.append(f"{y}")
        return y + 1

    got, want = [], []
    np.testing.assert_allclose(jit(shows)(np.zeros(3), got), shows(np.zeros(3), want))
    assert got == want
    assert any("formatting of an array needs its values" in reason for reason in counters["graph_break"])
