"""`GraphModule`: a graph compiled from its printed Python, callable like the region it came from."""

from __future__ import annotations

import itertools
import linecache
import traceback
from typing import Callable

import numpy as np

from .meta import TensorMeta
from .printer import python_code, symbol_axes
from .symbolic import SymInt

_serial = itertools.count()


class GraphModule:
    """Runs `graph` by executing its printed code (NOTE(printed-code)).

    `.code` is that source, `.graph` the graph (printing it gives the node table), and
    `.line_map` maps code lines to nodes. An exception raised while running a node keeps
    its type and gains a note naming the node and the user's source line.

    With `check_sizes`, each call first checks the inputs' shapes against the
    placeholders' (static sizes equal, symbolic ones 2 or more) and the size guards of
    the graph's shape env (the decisions symbolic sizes were traced under), and raises
    ValueError naming what they break; without it, whoever runs the module checks them
    (the frontend does, in its guards).
    """

    def __init__(self, graph, check_sizes: bool = False):
        graph.lint()
        self.graph = graph
        self.check_sizes = check_sizes
        self._symbol_axes = None
        if check_sizes:
            positions = {node: index for index, node in enumerate(graph.placeholders)}
            self._symbol_axes = {name: (positions[node], axis) for name, (node, axis) in symbol_axes(graph).items()}
        printed = python_code(graph)
        self.code = printed.text
        self.line_map = printed.line_map
        self.constants = printed.constants
        self.filename, self.forward = self._load(printed, {})

    def _load(self, printed, namespace: dict) -> tuple[str, Callable]:
        filename = f"<pyjit graph {self.graph.name} #{next(_serial)}>"
        # Registered so tracebacks and debuggers show the generated lines.
        linecache.cache[filename] = (len(printed.text), None, printed.text.splitlines(True), filename)
        namespace["constants"] = printed.constants
        exec(compile(printed.text, filename, "exec"), namespace)
        return filename, namespace[self.graph.name]

    def straight_line(self, resolve: Callable, input_types: tuple) -> Callable:
        """The graph as one function that calls `resolve(target)` for each node's target
        (NOTE(straight-line-code)): no dispatch and no frame besides its own. Each input
        must have exactly its type in `input_types` (None: any); a call with another runs
        this module instead. An error gets the note `__call__` gives it. `.code` is its
        source, `.graph_module` this module."""
        checks = [f"type({node.name}) is not input_types[{position}]"
                  for position, (node, kind) in enumerate(zip(self.graph.placeholders, input_types)) if kind is not None]
        parameters = ", ".join(node.name for node in self.graph.placeholders)
        prologue = (f"if {' or '.join(checks)}:", f"    return fallback({parameters})") if checks else ()
        printed = python_code(self.graph, resolve, prologue, catch="annotate")
        namespace = {"fallback": self, "input_types": tuple(input_types)}
        namespace["annotate"] = lambda error: self._annotate(error, filename, printed.line_map)
        filename, function = self._load(printed, namespace)
        function.code, function.graph_module = printed.text, self
        return function

    def __call__(self, *args):
        if self._symbol_axes is not None:
            self._check_sizes(args)
        try:
            return self.forward(*args)
        except Exception as error:
            self._annotate(error, self.filename, self.line_map)
            raise

    def _check_sizes(self, args: tuple) -> None:
        if len(args) != len(self.graph.placeholders):
            return  # calling the function raises Python's TypeError
        for node, arg in zip(self.graph.placeholders, args):
            if not isinstance(node.meta, TensorMeta):
                continue
            shape = np.shape(arg)
            if len(shape) != node.meta.ndim or any(size != expected for size, expected in zip(shape, node.meta.shape)
                                                   if not isinstance(expected, SymInt)):
                raise ValueError(f"input {node.name} of graph {self.graph.name} has shape {tuple(shape)}; the graph "
                                 f"was traced for {node.meta}: trace it again for this shape")
        sizes = {name: np.shape(args[position])[axis] for name, (position, axis) in self._symbol_axes.items()}
        # NOTE(symbolic-sizes): a symbol stands for a size of 2 or more; 0 and 1 broadcast differently.
        broken = [f"{name} >= 2" for name, size in sizes.items() if size < 2]
        broken += [str(guard) for guard in self.graph.shape_env.guards if not guard.holds(sizes)]
        if broken:
            given = ", ".join(f"{name}={size}" for name, size in sorted(sizes.items()))
            raise ValueError(f"the inputs' sizes ({given}) break the size guard {broken[0]} that graph "
                             f"{self.graph.name} was traced under: trace it again for these sizes")

    def _annotate(self, error: Exception, filename: str, line_map: dict) -> None:
        node = None
        for frame, lineno in traceback.walk_tb(error.__traceback__):
            if frame.f_code.co_filename == filename:
                node = line_map.get(lineno)
        if node is None:
            return
        where = f", from {node.loc.describe()}" if node.loc is not None else ""
        error.add_note(f"while running node {node.name} of graph {self.graph.name}{where}")

    def __repr__(self) -> str:
        return f"GraphModule({self.graph.name}, {len(self.graph.nodes)} nodes)"
