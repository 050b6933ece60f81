"""pyjit.utils: the process-wide counters."""

import collections

import pyjit
from pyjit import utils


def test_counters_is_a_defaultdict_of_counters():
    assert pyjit.utils is utils
    assert isinstance(utils.counters, collections.defaultdict)
    group = utils.counters["test_utils_group"]
    assert isinstance(group, collections.Counter)
    assert group["never_counted"] == 0
    del utils.counters["test_utils_group"]


def test_counting_one_group_leaves_others_alone():
    before = dict(utils.counters)
    utils.counters["test_utils_a"]["x"] += 2
    utils.counters["test_utils_a"]["x"] += 1
    assert utils.counters["test_utils_a"] == {"x": 3}
    assert {name: group for name, group in utils.counters.items() if name != "test_utils_a"} == before
    del utils.counters["test_utils_a"]


def test_capture_disabled_removes_the_callback_and_restores_it():
    seen = []

    def callback(frame):
        seen.append(frame.f_code.co_name)
        return None

    def probe(value):  # a value stack: on 3.12+ a frame without one is never handed over
        return value + 1

    previous = pyjit._C.set_eval_frame(callback)
    try:
        with utils.capture_disabled():
            assert pyjit._C.get_eval_frame() is None
            probe(1)
        assert pyjit._C.get_eval_frame() is callback
        probe(1)
    finally:
        pyjit._C.set_eval_frame(previous)
    assert seen.count("probe") == 1  # seen once: with the callback, not inside the block
