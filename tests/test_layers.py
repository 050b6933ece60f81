"""The layering rule of SPEC section 1, checked on the source with `ast`.

Each subpackage of pyjit/ imports only the layers before it in LAYERS (nn and optim may
import each other); the base modules (pyjit/*.py but __init__.py) import no subpackage.
pyjit/_C and the base modules come before every layer, so anyone may import them, and
pyjit/__init__.py (the public API) comes after all of them, so it is not checked.
"""

import ast
from pathlib import Path

import pytest

LAYERS = ("graph", "ops", "autograd", "frontend", "codegen", "backends", "nn", "optim")
RANK = {layer: index for index, layer in enumerate(LAYERS)} | {"optim": LAYERS.index("nn")}
PACKAGE_ROOT = Path(__file__).resolve().parents[1] / "pyjit"


def module_name(relative_path: str) -> tuple[str, bool]:
    """('pyjit.graph.node', False) for 'pyjit/graph/node.py'; packages name themselves."""
    parts = relative_path.removesuffix(".py").split("/")
    is_package = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_package else parts), is_package


def imported_modules(tree: ast.Module, module: str, is_package: bool):
    """(line, dotted name) of every module an import statement may load, relative ones resolved.

    `from pkg import name` yields both `pkg` and `pkg.name`, since `name` may be a submodule.
    """
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join(package + ([node.module] if node.module else []))
            else:
                base = node.module
            yield node.lineno, base
            for alias in node.names:
                if alias.name != "*":
                    yield node.lineno, f"{base}.{alias.name}"


def subpackage_of(dotted: str) -> str | None:
    """The pyjit subpackage a dotted module name lies in, or None (stdlib, _C, a base module)."""
    parts = dotted.split(".")
    if len(parts) >= 2 and parts[0] == "pyjit" and parts[1] in LAYERS:
        return parts[1]
    return None


def layer_violations(relative_path: str, source: str) -> list[str]:
    """What is wrong with the imports of the pyjit module at `relative_path` (e.g.
    'pyjit/graph/node.py') whose text is `source`; an empty list if nothing is."""
    module, is_package = module_name(relative_path)
    parts = module.split(".")
    if module == "pyjit":
        return []  # the public API sits after every layer
    importer = parts[1] if len(parts) > 2 or is_package else None
    if importer is not None and importer not in RANK:
        return [f"{relative_path}: pyjit/{importer}/ is not a layer of SPEC section 1 ({', '.join(LAYERS)})"]
    problems = []
    for line, dotted in imported_modules(ast.parse(source, relative_path), module, is_package):
        imported = subpackage_of(dotted)
        if imported is None or imported == importer:
            continue
        if importer is None:
            problems.append(f"{relative_path}:{line}: a base module imports pyjit.{imported}; it may import no subpackage")
        elif RANK[imported] > RANK[importer]:
            problems.append(f"{relative_path}:{line}: {importer} imports pyjit.{imported}, a later layer")
    return sorted(set(problems))


def test_the_source_tree_respects_the_layers():
    assert PACKAGE_ROOT.is_dir()
    problems = []
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        relative = path.relative_to(PACKAGE_ROOT.parent).as_posix()
        problems += layer_violations(relative, path.read_text(encoding="utf-8"))
    assert problems == []


ALLOWED = {
    "earlier-layer": ("pyjit/frontend/guards.py", "from pyjit.graph import Graph\nimport pyjit.ops.registry\n"),
    "same-layer-relative": ("pyjit/codegen/schedule.py", "from . import kernel_ir\nfrom .render import c\n"),
    "earlier-layer-relative": ("pyjit/backends/inductor.py", "from ..codegen import build\nfrom .. import graph\n"),
    "base-and-core": ("pyjit/graph/node.py", "from pyjit import _C, config\nfrom ..exc import Unsupported\n"),
    "nn-imports-optim": ("pyjit/nn/module.py", "from pyjit.optim import SGD\n"),
    "optim-imports-nn": ("pyjit/optim/adam.py", "from ..nn import Parameter\n"),
    "base-imports-base": ("pyjit/utils.py", "import logging\nfrom . import config\nfrom pyjit.exc import Unsupported\n"),
    "deep-module": ("pyjit/codegen/render/cuda.py", "from ...ops import registry\nfrom .. import kernel_ir\n"),
    "package-init": ("pyjit/ops/__init__.py", "from . import registry\nfrom ..graph import meta\n"),
    "public-api": ("pyjit/__init__.py", "from .nn import Module\nfrom .frontend import optimize\n"),
}

FORBIDDEN = {
    "later-layer": ("pyjit/graph/node.py", "from pyjit.ops import registry\n"),
    "later-layer-plain-import": ("pyjit/ops/registry.py", "import pyjit.autograd.tensor as tensor\n"),
    "later-layer-relative": ("pyjit/autograd/engine.py", "from ..backends import lookup\n"),
    "later-layer-from-parent": ("pyjit/graph/printer.py", "from .. import frontend\n"),
    "later-layer-from-pyjit": ("pyjit/graph/printer.py", "from pyjit import codegen\n"),
    "later-layer-in-function": ("pyjit/autograd/compiled.py", "def compile():\n    from pyjit.backends import inductor\n"),
    "deep-module-reaches-down": ("pyjit/codegen/render/c.py", "from ...backends import registry\n"),
    "package-init-reaches-down": ("pyjit/frontend/__init__.py", "from ..nn import Module\n"),
    "base-imports-subpackage": ("pyjit/config.py", "import pyjit.graph\n"),
    "base-imports-subpackage-relative": ("pyjit/exc.py", "from .graph import Node\n"),
    "base-imports-subpackage-from-parent": ("pyjit/utils.py", "from . import ops\n"),
    "unknown-subpackage": ("pyjit/misc/helpers.py", "import os\n"),
}


@pytest.mark.parametrize(("path", "source"), ALLOWED.values(), ids=ALLOWED.keys())
def test_checker_allows(path, source):
    assert layer_violations(path, source) == []


@pytest.mark.parametrize(("path", "source"), FORBIDDEN.values(), ids=FORBIDDEN.keys())
def test_checker_catches(path, source):
    (problem,) = layer_violations(path, source)
    assert problem.startswith(path)


def test_nn_does_not_import_the_frontend():
    """nn declares how the frontend inlines it (NOTE(inline-declarations) in
    pyjit/frontend/policy.py), so of pyjit's layers it imports only graph, ops and
    autograd (and optim, its neighbour): no compiler layer."""
    known = {"graph", "ops", "autograd", "nn", "optim"}
    problems = []
    for path in sorted((PACKAGE_ROOT / "nn").rglob("*.py")):
        relative = path.relative_to(PACKAGE_ROOT.parent).as_posix()
        module, is_package = module_name(relative)
        tree = ast.parse(path.read_text(encoding="utf-8"), relative)
        problems += [f"{relative}:{line}: nn imports {dotted}"
                     for line, dotted in imported_modules(tree, module, is_package)
                     if subpackage_of(dotted) not in known | {None}]
    assert problems == []


# -- import circles ---------------------------------------------------------------------------
def import_edges(relative_path: str, source: str, modules: set[str]) -> set[str]:
    """The modules among `modules` that the module at `relative_path` imports, at any
    level of its code (an import inside a function is still an import). `from pkg import
    name` imports the submodule `pkg.name` when there is one, else `pkg` itself."""
    module, is_package = module_name(relative_path)
    edges = set()
    for node in ast.walk(ast.parse(source, relative_path)):
        if isinstance(node, ast.Import):
            edges |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join(package + ([node.module] if node.module else []))
            edges |= {f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names}
    return (edges & modules) - {module}


def import_circles(sources: dict[str, str]) -> list[list[str]]:
    """The import circles among modules of one subpackage of pyjit (`sources`: relative
    path -> text), each as the modules around it, from its smallest name."""
    modules = {module_name(path)[0]: path for path in sources}
    graph = {module: {other for other in import_edges(path, sources[path], set(modules))
                      if subpackage_of(other) == subpackage_of(module) is not None}
             for module, path in modules.items()}
    circles = []
    for start in sorted(graph):
        # The shortest way back to `start` through modules after it (each circle once).
        paths, seen = [[start]], {start}
        while paths and not any(start in graph[path[-1]] for path in paths):
            paths = [path + [nxt] for path in paths for nxt in sorted(graph[path[-1]])
                     if nxt > start and nxt not in seen and not seen.add(nxt)]
        circles += [path for path in paths if start in graph[path[-1]]][:1]
    return circles


def test_no_package_has_an_import_circle():
    sources = {path.relative_to(PACKAGE_ROOT.parent).as_posix(): path.read_text(encoding="utf-8")
               for path in sorted(PACKAGE_ROOT.rglob("*.py"))}
    assert [" -> ".join(circle + circle[:1]) for circle in import_circles(sources)] == []


def test_the_circle_checker_sees_imports_inside_functions():
    sources = {"pyjit/frontend/__init__.py": "from .a import f\n",
               "pyjit/frontend/a.py": "from .b import g\n",
               "pyjit/frontend/b.py": "def g():\n    from . import a\n",
               "pyjit/frontend/c.py": "from .a import f\nfrom ..graph import Graph\n",
               "pyjit/graph/__init__.py": "from ..frontend import c\n"}
    assert import_circles(sources) == [["pyjit.frontend.a", "pyjit.frontend.b"]]
    # Through another package it is the layering's concern (a later layer imported).
    sources["pyjit/frontend/b.py"] = "def g():\n    from ..graph import Graph\n"
    assert import_circles(sources) == []
