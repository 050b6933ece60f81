"""A graph as runnable Python source, with a map from its lines back to nodes.

NOTE(printed-code): the printed module defines one function named after the graph,
taking the placeholders in order. Call targets are reached through their modules
(`import pyjit.ops as ops` … `ops.exp(x)`), so the text runs on its own; a target or
constant with no importable name or literal form is read from a module-level dict
`constants` that whoever runs the text provides (GraphModule does). Size symbols are
bound from the input shapes (`s0 = x.shape[0]`) before the first node, so a reshape to
`(2*s0, 4)` computes the size of the call it is in. Node names never collide with these
names: the graph's namer keeps clear of RESERVED_NAMES and of `s<N>`. Each computed value
is `del`eted after its last use (`_last_uses`).

NOTE(straight-line-code): `python_code(graph, resolve=...)` prints each call target as
`resolve(target)` instead (the `eager` backend resolves registry ops to their NumPy
implementations, so nothing dispatches per call), with `prologue` lines ahead of the
body (an input check that returns early) and, with `catch`, the body inside a `try`
whose handler calls `catch(error)` and re-raises: a `try` costs nothing until something
raises (CPython 3.11+), so a caller can annotate errors without a frame of its own.
"""

from __future__ import annotations

import dataclasses
import math
import re
import sys
from typing import Any, Callable

import numpy as np

from .meta import TensorMeta
from .node import Node
from .symbolic import SymInt

# Every name the printed code reads besides node names, module aliases and symbols.
RESERVED_NAMES = frozenset({"constants", "numpy", "int", "float", "bool", "complex", "slice", "Ellipsis",
                            "None", "True", "False", "type", "error", "fallback", "annotate", "input_types"})
_SYMBOL_NAME = re.compile(r"s\d+")


def is_reserved(name: str) -> bool:
    return name in RESERVED_NAMES or _SYMBOL_NAME.fullmatch(name) is not None


@dataclasses.dataclass
class PythonCode:
    text: str
    line_map: dict[int, Node]  # line number in `text` -> the node that line computes
    constants: dict[str, Any]


def python_code(graph, resolve: Callable | None = None, prologue: tuple[str, ...] = (),
                catch: str | None = None) -> PythonCode:
    """The graph's printed code (NOTE(printed-code)); `resolve`, `prologue` and `catch`:
    NOTE(straight-line-code)."""
    return _Printer(graph, resolve).print(prologue, catch)


def literal_text(value: Any) -> str | None:
    """Python source that evaluates to `value`, or None when it has no literal form."""
    if value is None or value is Ellipsis or type(value) in (bool, int, str, bytes):
        return repr(value)
    if type(value) is float:
        return repr(value) if math.isfinite(value) else f"float('{value}')"
    if type(value) is complex:
        return f"complex({literal_text(value.real)}, {literal_text(value.imag)})"
    if type(value) is slice:
        parts = [literal_text(part) for part in (value.start, value.stop, value.step)]
        return None if None in parts else f"slice({', '.join(parts)})"
    if type(value) is tuple:
        items = [literal_text(item) for item in value]
        return None if None in items else f"({', '.join(items)}{',' if len(items) == 1 else ''})"
    if isinstance(value, np.dtype) and value.names is None:
        return f"numpy.dtype({value.str!r})"
    if isinstance(value, type) and issubclass(value, np.generic):
        return f"numpy.{value.__name__}"
    if isinstance(value, np.generic) and value.dtype.kind in "biufc":
        # long double values have no Python scalar that holds them exactly (item()
        # returns the NumPy scalar itself): those go through `constants`.
        item = value.item()
        return f"numpy.{type(value).__name__}({literal_text(item)})" if type(item) in (bool, int, float, complex) else None
    if isinstance(value, type) and value in (int, float, bool, complex):
        return value.__name__
    return None


class _Printer:
    def __init__(self, graph, resolve: Callable | None = None):
        self.graph = graph
        self.resolve = resolve
        self.constants: dict[str, Any] = {}
        self.module_aliases: dict[str, str] = {}
        self.taken = {node.name for node in graph.nodes} | set(RESERVED_NAMES) | {graph.name}

    def print(self, prologue: tuple[str, ...] = (), catch: str | None = None) -> PythonCode:
        body: list[tuple[str, Node | None]] = []
        bindings = self._symbol_bindings()
        body += [(f"{name} = {source}", None) for name, source in bindings.items()]
        freed_after = _last_uses(self.graph.nodes)
        for node in self.graph.nodes:
            line = self._node_line(node)
            if line is not None:
                body.append((line, node))
            if freed_after.get(node):
                body.append((f"del {', '.join(value.name for value in freed_after[node])}", None))
        parameters = ", ".join(node.name for node in self.graph.placeholders)
        head = ["import numpy"]
        head += [f"import {module} as {alias}" for module, alias in self.module_aliases.items()]
        if self.constants:
            head.append("# `constants` (supplied by GraphModule) holds values with no literal form.")
        head += ["", "", f"def {self.graph.name}({parameters}):"]
        if not body:
            body.append(("return None", None))
        head += [f"    {line}" for line in prologue]
        indent = "    "
        if catch is not None:
            head.append("    try:")
            indent = "        "
        line_map = {}
        lines = list(head)
        for text, node in body:
            lines.append(indent + text)
            if node is not None:
                line_map[len(lines)] = node
        if catch is not None:
            lines += ["    except Exception as error:", f"        {catch}(error)", "        raise"]
        return PythonCode("\n".join(lines) + "\n", line_map, self.constants)

    def _node_line(self, node: Node) -> str | None:
        if node.kind == "placeholder":
            return None
        if node.kind == "output":
            return f"return {self._argument(node.args[0])}"
        if node.kind == "constant":
            return f"{node.name} = {self._argument(node.target, node.name)}"
        pieces = [self._argument(arg) for arg in node.args]
        pieces += [f"{key}={self._argument(value)}" for key, value in node.kwargs.items()]
        target = self.resolve(node.target) if self.resolve is not None else node.target
        call = f"{node.name} = {self._target(target, node.name)}({', '.join(pieces)})"
        return f"{call}  # {node.loc}" if node.loc is not None else call

    def _argument(self, value: Any, hint: str = "const") -> str:
        """Source for an argument (or a constant's value): nodes by name, sizes as
        expressions over the bound symbols, containers item by item, and the rest as
        literals or `constants` entries keyed after `hint`."""
        if isinstance(value, Node):
            return value.name
        if isinstance(value, SymInt):
            return value.python()
        if type(value) is tuple:
            inner = ", ".join(self._argument(item) for item in value)
            return f"({inner}{',' if len(value) == 1 else ''})"
        if type(value) is list:
            return "[" + ", ".join(self._argument(item) for item in value) + "]"
        if type(value) is dict and all(literal_text(key) is not None for key in value):
            return "{" + ", ".join(f"{literal_text(key)}: {self._argument(item)}" for key, item in value.items()) + "}"
        if isinstance(value, slice):
            return f"slice({self._argument(value.start)}, {self._argument(value.stop)}, {self._argument(value.step)})"
        text = literal_text(value)
        return text if text is not None else self._constant(value, hint)

    def _constant(self, value: Any, hint: str) -> str:
        for key, existing in self.constants.items():
            if existing is value:
                return f"constants[{key!r}]"
        key, counter = hint, 0
        while key in self.constants:
            counter += 1
            key = f"{hint}_{counter}"
        self.constants[key] = value
        return f"constants[{key!r}]"

    def _target(self, target: Any, hint: str) -> str:
        module_name = getattr(target, "__module__", None)
        qualname = getattr(target, "__qualname__", None)
        module = sys.modules.get(module_name) if isinstance(module_name, str) else None
        if module is not None and isinstance(qualname, str) and "<" not in qualname:
            found = module
            for part in qualname.split("."):
                found = getattr(found, part, None)
            if found is target:
                return f"{self._alias(module_name)}.{qualname}"
        return self._constant(target, hint)

    def _alias(self, module_name: str) -> str:
        if module_name == "numpy":
            return "numpy"  # imported by every printed module
        if module_name not in self.module_aliases:
            base = module_name.rsplit(".", 1)[-1]
            alias, counter = base, 0
            while alias in self.taken:
                counter += 1
                alias = f"{base}_{counter}"
            self.taken.add(alias)
            self.module_aliases[module_name] = alias
        return self.module_aliases[module_name]

    def _symbol_bindings(self) -> dict[str, str]:
        """`s0 = x.shape[0]` for every size symbol, taken from the first input that has it;
        `s3 = i` for a symbol that is an int input itself (a loop body's induction variable)."""
        bindings = {node.meta.python(): node.name for node in self.graph.placeholders if isinstance(node.meta, SymInt)}
        return bindings | {name: f"{node.name}.shape[{axis}]" for name, (node, axis) in symbol_axes(self.graph).items()}


def symbol_axes(graph) -> dict[str, tuple[Node, int]]:
    """Where each size symbol can be read: the first input and axis whose size it is."""
    axes: dict[str, tuple[Node, int]] = {}
    for node in graph.placeholders:
        if not isinstance(node.meta, TensorMeta):
            continue
        for axis, size in enumerate(node.meta.shape):
            if isinstance(size, SymInt):
                for name in size.symbols():
                    if name not in axes and size.same_as(_lone(size, name)):
                        axes[name] = (node, axis)
    return axes


def _last_uses(nodes: list[Node]) -> dict[Node, list[Node]]:
    """node -> the computed values to drop right after it: those it is the last to read,
    or itself when nothing reads it. NOTE(printed-code): the printed function `del`s each
    intermediate after its last use, as torch.fx does, so a long chain holds no more
    arrays at once than NumPy evaluating it step by step would."""
    last_use: dict[Node, Node] = {}
    for node in nodes:
        for used in node.inputs():
            last_use[used] = node
    freed: dict[Node, list[Node]] = {}
    for node in nodes:
        if node.kind in ("call", "constant"):
            freed.setdefault(last_use.get(node, node), []).append(node)
    return {node: values for node, values in freed.items() if node.kind != "output"}


def _lone(size: SymInt, name: str) -> SymInt:
    return SymInt({(name,): 1}, size.env)
