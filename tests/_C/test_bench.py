"""The native timing loop (csrc/bench.cpp). No timing is asserted, only the contract."""

import pytest

from pyjit import _C


def counting():
    calls = []

    def fn(*args):
        calls.append(args)

    return fn, calls


def test_returns_one_positive_float_per_timed_call():
    fn, _ = counting()
    times = _C.bench(fn, (), 25)
    assert isinstance(times, list) and len(times) == 25
    assert all(type(t) is float and t > 0 for t in times)


@pytest.mark.parametrize(("n", "warmup"), [(1, 0), (7, 3), (10, 0), (3, 12)])
def test_calls_fn_warmup_plus_n_times_with_args(n, warmup):
    fn, calls = counting()
    assert len(_C.bench(fn, (1, "two"), n, warmup)) == n
    assert calls == [(1, "two")] * (warmup + n)


def test_warmup_by_keyword():
    fn, calls = counting()
    assert len(_C.bench(fn, (), 2, warmup=5)) == 2
    assert len(calls) == 7


@pytest.mark.parametrize("fail_at", [0, 2, 6])
def test_exception_from_fn_propagates_and_stops(fail_at):
    calls = []

    def fn():
        calls.append(None)
        if len(calls) > fail_at:
            raise KeyError("from fn")

    # Calls 0-2 are warm-up, so this covers a failing warm-up and a failing timed call.
    with pytest.raises(KeyError, match="from fn"):
        _C.bench(fn, (), 5, warmup=3)
    assert len(calls) == fail_at + 1
