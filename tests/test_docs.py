"""docs/ for users cannot drift from the code: docs/troubleshooting.md lists every
graph-break reason the frontend can give and every guard failure a recompile names,
docs/api.md has an entry for every public name of `pyjit`, the Python on the user pages
runs, and links between pages lead somewhere."""

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pyjit
from pyjit.frontend import opcode_table

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PLACEHOLDER = "…"  # what the docs write for a part of a message that the case fills in


def _templates(node: ast.expr) -> list[str]:
    """The message texts an expression can give, each filled-in part as PLACEHOLDER."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return ["".join(part.value if isinstance(part, ast.Constant) else PLACEHOLDER for part in node.values)]
    if isinstance(node, ast.IfExp):
        return _templates(node.body) + _templates(node.orelse)
    return []  # a message passed on from another Break (inlining) is documented where it is made


def break_messages() -> set[str]:
    """Every explanation of a `Break(kind, explanation, ...)` in pyjit/frontend, and of
    the opcode table's reasons (NOTE(opcode-table))."""
    found = set()
    for path in sorted((ROOT / "pyjit" / "frontend").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        table = [node for node in ast.walk(tree) if getattr(node, "name", None) == "_unhandled_break"]
        skipped = {id(node) for function in table for node in ast.walk(function)}  # read from the table below
        for node in ast.walk(tree):
            called = getattr(node, "func", None)
            if isinstance(node, ast.Call) and getattr(called, "id", None) == "Break" and len(node.args) > 1 \
                    and id(node) not in skipped:
                found.update(_templates(node.args[1]))
    found.update(reason.explanation for reason in opcode_table.every_unhandled_reason(PLACEHOLDER))
    found.add(opcode_table.unhandled_reason(PLACEHOLDER).explanation)
    return found


def guard_failure_phrases() -> set[str]:
    """The fixed words of every guard failure csrc/guards.cpp can report (the `recompiles`
    log and the recompile-limit warning quote them)."""
    source = (ROOT / "csrc" / "guards.cpp").read_text(encoding="utf-8")
    phrases = set()
    for call in re.finditer(r"\bfail(?:_array)?\((.*?)\);", source, re.DOTALL):
        for literal in re.findall(r'"((?:[^"\\]|\\.)*)"', call.group(1)):
            phrase = literal.strip(" '\",:")
            if re.search(r"[a-z]{3}", phrase):
                phrases.add(phrase)
    phrases.update(re.findall(r'"\'" \+ source\.name \+ "\' ([a-z ]+)"', source))
    return phrases


def section(page: str, heading: str) -> str:
    text = (DOCS / page).read_text(encoding="utf-8")
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def listed(text: str) -> set[str]:
    """The code span that opens each list item (`- \\`message\\` ...`, or with double
    backticks around a message that has one), its line breaks read as spaces."""
    spans = re.findall(r"^- (``?)(.+?)\1(?!`)", text, re.MULTILINE | re.DOTALL)
    return {" ".join(span.split()) for _, span in spans}


def test_troubleshooting_lists_every_break_reason_and_no_other():
    documented = listed(section("troubleshooting.md", "Every graph-break reason"))
    messages = break_messages()
    assert sorted(messages - documented) == [], "reasons the code gives that the page lacks"
    assert sorted(documented - messages) == [], "reasons the page lists that the code no longer gives"


def test_troubleshooting_explains_every_guard_failure():
    text = section("troubleshooting.md", "Recompiles")
    assert sorted(phrase for phrase in guard_failure_phrases() if phrase not in text) == []


def test_api_has_an_entry_for_every_public_name():
    """Entries are level-three headings that name the object: `### \\`pyjit.compile(...)\\``.
    The list is read from `pyjit.__all__` when the test runs, so a new public name fails
    here until it has its entry."""
    text = (DOCS / "api.md").read_text(encoding="utf-8")
    entries = set(re.findall(r"^### `?pyjit\.([A-Za-z_][\w.]*)", text, re.MULTILINE))
    assert sorted(set(pyjit.__all__) - entries) == []


def test_links_between_pages_lead_to_files():
    pages = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([\w./-]+\.(?:md|py|png))(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert broken == []


@pytest.mark.parametrize("page", ["README.md", "docs/api.md", "docs/getting-started.md", "docs/frontend.md"])
def test_the_python_in_user_pages_runs(page, tmp_path):
    """A page's ```python blocks, in order, are one program that checks itself."""
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / page).read_text(encoding="utf-8"), re.DOTALL)
    assert blocks
    program = tmp_path / "page.py"
    program.write_text("\n".join(blocks), encoding="utf-8")
    environment = dict(os.environ, PYTHONPATH=str(Path(pyjit.__file__).parents[1]),
                       PYJIT_CACHE_DIR=str(tmp_path / "cache"))
    completed = subprocess.run([sys.executable, "-P", str(program)], capture_output=True, text=True,
                               cwd=tmp_path, env=environment, timeout=300)
    assert completed.returncode == 0, completed.stderr
