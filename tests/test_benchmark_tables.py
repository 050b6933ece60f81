"""scripts/benchmark_tables.py: docs/benchmarks.md's tables are what the script makes of
docs/benchmarks.json (the results file of the run they show), so the page cannot drift
from its figures; the script is deterministic and reads every figure from the file."""

import copy
import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tables():
    spec = importlib.util.spec_from_file_location("benchmark_tables", ROOT / "scripts" / "benchmark_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def record(tables):
    return json.loads(tables.RECORD.read_text(encoding="utf-8"))


def test_the_page_is_what_the_record_makes(tables, record):
    page = tables.PAGE.read_text(encoding="utf-8")
    assert tables.render(page, record) == page, "run: python scripts/benchmark_tables.py"
    assert tables.main(["--check"]) == 0


def test_the_page_has_one_block_per_benchmark_and_a_table_per_section(tables, record):
    page = tables.PAGE.read_text(encoding="utf-8")
    blocks = {match[2]: match[3] for match in tables.BLOCK.finditer(page)}
    assert list(blocks) == ["machine", *tables.TABLES]
    assert set(record) <= set(tables.TABLES)
    for name in tables.TABLES:  # a measured section has its table; a missing one says how to measure it
        assert ("| ---" in blocks[name]) == (name in record), name


def test_the_same_file_gives_the_same_page_and_a_changed_figure_changes_it(tables, record):
    page = tables.PAGE.read_text(encoding="utf-8")
    assert tables.render(page, copy.deepcopy(record)) == tables.render(page, record)
    changed = copy.deepcopy(record)
    changed["hook_overhead"]["summary"]["hit_overhead_ns"] = 123456.0
    rendered = tables.render(page, changed)
    assert rendered != page and "Cache-hit overhead 123456 ns" in rendered


def test_a_section_missing_from_the_file_says_so(tables, record):
    page = tables.PAGE.read_text(encoding="utf-8")
    partial = {name: section for name, section in record.items() if name != "hook_overhead"}
    rendered = tables.render(page, partial)
    said = "Not in the last run: `python -P benchmarks/hook_overhead.py` writes this table's figures."
    assert said not in page and said in rendered
    assert rendered.count("Not in the last run") == page.count("Not in the last run") + 1


def test_another_machines_section_is_named(tables, record):
    name = [name for name in tables.TABLES if name in record][-1]  # not the one the page's machine is read from
    moved = copy.deepcopy(record)
    moved[name]["machine"] = dict(moved[name]["machine"], cpu="Another CPU", cores=64)
    assert tables.blocks(moved)[name].startswith(f"Measured {moved[name]['machine']['date']}; Another CPU, 64 cores")
    assert not tables.blocks(record)[name].startswith("Measured")  # the page's machine: dated in its block


def test_numbers_keep_three_significant_digits(tables):
    assert [tables.number(value) for value in (1234.5, 12.345, 0.012345, 0, None, float("nan"))] == \
        ["1234", "12.3", "0.0123", "0", "-", "-"]


def test_the_page_is_short_and_current():
    """Under 400 lines, and about what exists: no history of past work."""
    text = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 400
    assert re.findall(r"\b(?:issue|round) \d+|\bissues? #?\d+", text, re.IGNORECASE) == []
