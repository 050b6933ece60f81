"""pyjit/codegen/cache.py: autotuning records (NOTE(autotune-records)); the cache's files
and directories are exercised through the C kernels in tests/codegen/cpu/test_build.py."""

import os

import pytest

from pyjit.codegen.cache import stored_choice
from pyjit.utils import counters


def test_a_choice_is_timed_once_then_read_from_disk(tmp_path):
    timed = []

    def time_choice(choice):
        timed.append(choice)
        return {"a": 3.0, "b": 1.0, "c": 2.0}[choice]

    before = counters["inductor"]["autotuned"]
    assert stored_choice(str(tmp_path), "k1", "variant", ("a", "b", "c"), time_choice) == "b"
    assert timed == ["a", "b", "c"] and counters["inductor"]["autotuned"] == before + 1
    assert stored_choice(str(tmp_path), "k1", "variant", ("a", "b", "c"), None) == "b"  # not timed again
    assert (tmp_path / "k1.json").read_text() == '{"variant": "b"}'


@pytest.mark.parametrize("record", [b"not json", b'{"variant": "gone"}', b'{"block": "b"}', b'{"variant": ["b"]}',
                                    b"[" * 100_000 + b"]" * 100_000])
def test_a_record_that_is_not_a_choice_is_timed_again_and_replaced(tmp_path, record):
    (tmp_path / "k2.json").write_bytes(record)
    os.chmod(tmp_path / "k2.json", 0o600)
    assert stored_choice(str(tmp_path), "k2", "variant", ("a", "b"), {"a": 2.0, "b": 1.0}.get) == "b"
    assert (tmp_path / "k2.json").read_text() == '{"variant": "b"}'
