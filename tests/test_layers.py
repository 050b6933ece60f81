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


# -- codegen's wings and what backends may see ------------------------------------------------
def pyjit_sources() -> dict[str, str]:
    """relative path -> text of every module of the package."""
    return {path.relative_to(PACKAGE_ROOT.parent).as_posix(): path.read_text(encoding="utf-8")
            for path in sorted(PACKAGE_ROOT.rglob("*.py"))}


def tree_problems(check, under: str = "pyjit/") -> list[str]:
    """What `check(path, source, modules)` finds in each module of the package under
    `under` (`modules`: the dotted names of every module and package)."""
    sources = pyjit_sources()
    modules = {module_name(path)[0] for path in sources}
    return [problem for path, source in sources.items() if path.startswith(under)
            for problem in check(path, source, modules)]


def wing_violations(relative_path: str, source: str, modules=None) -> list[str]:
    """The imports of the other wing in a module of codegen's cpu/ or cuda/."""
    module, is_package = module_name(relative_path)
    wing = relative_path.split("/")[2] if relative_path.startswith("pyjit/codegen/") else None
    other = {"cpu": "pyjit.codegen.cuda", "cuda": "pyjit.codegen.cpu"}.get(wing)
    if other is None:
        return []
    return [f"{relative_path}:{line}: imports {dotted}"
            for line, dotted in imported_modules(ast.parse(source, relative_path), module, is_package)
            if dotted == other or dotted.startswith(f"{other}.")]


def test_the_cpu_and_cuda_wings_never_import_each_other():
    assert wing_violations("pyjit/codegen/cuda/build.py", "from ..cpu import build\n")
    assert not wing_violations("pyjit/codegen/cuda/build.py", "from .. import cache\nfrom . import nvrtc\n")
    assert tree_problems(wing_violations, "pyjit/codegen/") == []


def entry_point_violations(relative_path: str, source: str, entry_points: set[str]) -> list[str]:
    """The imports of codegen in a module of backends/ that are not `from pyjit.codegen
    import <one of entry_points>` (relative or absolute)."""
    module, is_package = module_name(relative_path)
    problems = []
    for node in ast.walk(ast.parse(source, relative_path)):
        if isinstance(node, ast.Import):
            problems += [f"{relative_path}:{node.lineno}: import {alias.name}" for alias in node.names
                         if subpackage_of(alias.name) == "codegen"]
        elif isinstance(node, ast.ImportFrom):
            package = module.split(".") if is_package else module.split(".")[:-1]
            base = (".".join(package[: len(package) - (node.level - 1)] + ([node.module] if node.module else []))
                    if node.level else node.module)
            if subpackage_of(base) != "codegen" and not (base == "pyjit" and any(a.name == "codegen"
                                                                                 for a in node.names)):
                continue
            names = [alias.name for alias in node.names]
            if base != "pyjit.codegen" or not set(names) <= entry_points:
                problems.append(f"{relative_path}:{node.lineno}: from {base} import {', '.join(names)}")
    return problems


def codegen_entry_points() -> set[str]:
    tree = ast.parse((PACKAGE_ROOT / "codegen" / "__init__.py").read_text(encoding="utf-8"))
    (names,) = [node.value for node in tree.body if isinstance(node, ast.Assign)
                and any(getattr(target, "id", None) == "__all__" for target in node.targets)]
    return set(ast.literal_eval(names))


def test_backends_import_only_the_entry_points_of_codegen():
    entry_points = codegen_entry_points()
    assert {"schedule", "glue_source", "TARGETS", "c_launcher"} <= entry_points
    assert tree_problems(lambda path, source, modules: entry_point_violations(path, source, entry_points),
                         "pyjit/backends/") == []


@pytest.mark.parametrize(("source", "caught"), [
    ("from ..codegen import schedule, glue_source\n", False),
    ("from pyjit.codegen import TARGETS\n", False),
    ("from ..codegen.cpu import build\n", True),
    ("from ..codegen import cpu\n", True),
    ("import pyjit.codegen.glue\n", True),
    ("def f():\n    from ..codegen.scheduling.scheduler import schedule\n", True),
    ("from .. import codegen\n", True),
])
def test_the_entry_point_checker(source, caught):
    entry_points = {"schedule", "glue_source", "TARGETS"}
    assert bool(entry_point_violations("pyjit/backends/inductor.py", source, entry_points)) == caught


def private_name_violations(relative_path: str, source: str, modules: set[str]) -> list[str]:
    """Where the module at `relative_path` takes a `_private` name of another pyjit
    module: `from x import _name`, or `x._name` on a module it imported (the native
    core, pyjit._C, is public under its underscore)."""
    module, is_package = module_name(relative_path)
    tree = ast.parse(source, relative_path)
    private = lambda name: name.startswith("_") and not name.startswith("__") and name != "_C"  # noqa: E731
    problems, aliases = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            package = module.split(".") if is_package else module.split(".")[:-1]
            base = (".".join(package[: len(package) - (node.level - 1)] + ([node.module] if node.module else []))
                    if node.level else node.module)
            if base.split(".")[0] != "pyjit":
                continue
            for alias in node.names:
                if private(alias.name):
                    problems.append(f"{relative_path}:{node.lineno}: from {base} import {alias.name}")
                elif f"{base}.{alias.name}" in modules:
                    aliases.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            aliases |= {alias.asname for alias in node.names if alias.asname and alias.name in modules}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and private(node.attr)):
            problems.append(f"{relative_path}:{node.lineno}: {node.value.id}.{node.attr}")
    return problems


def test_no_module_takes_another_modules_private_names():
    assert tree_problems(private_name_violations) == []


@pytest.mark.parametrize(("source", "caught"), [
    ("from . import build\nbuild.load('')\n", False),
    ("from .. import _C\n_C.KernelLibrary\n", False),
    ("from . import build\nbuild._write_atomic('', b'')\n", True),
    ("from .build import _write_atomic\n", True),
    ("import pyjit.codegen.cpu.build as build\nbuild._lock\n", True),
    ("from numpy import _core\n", False),
])
def test_the_private_name_checker(source, caught):
    modules = {"pyjit.codegen.cpu.build", "pyjit.codegen.cpu"}
    assert bool(private_name_violations("pyjit/codegen/cpu/threads.py", source, modules)) == caught
