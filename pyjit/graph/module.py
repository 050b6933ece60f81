"""`GraphModule`: a graph compiled from its printed Python, callable like the region it came from."""

from __future__ import annotations

import itertools
import linecache
import traceback

from .printer import python_code, symbol_axes

_serial = itertools.count()


class GraphModule:
    """Runs `graph` by executing its printed code (NOTE(printed-code)).

    `.code` is that source, `.graph` the graph (printing it gives the node table), and
    `.line_map` maps code lines to nodes. An exception raised while running a node keeps
    its type and gains a note naming the node and the user's source line.

    With `check_size_guards`, each call first checks the size guards of the graph's
    shape env on the inputs' sizes (the decisions symbolic sizes were traced under) and
    raises ValueError naming the one they break; without it, whoever runs the module
    checks them (the frontend does, in its guards).
    """

    def __init__(self, graph, check_size_guards: bool = False):
        graph.lint()
        self.graph = graph
        self._guarded_axes = None
        if check_size_guards and graph.shape_env.guards:
            positions = {node: index for index, node in enumerate(graph.placeholders)}
            self._guarded_axes = {name: (positions[node], axis) for name, (node, axis) in symbol_axes(graph).items()}
        printed = python_code(graph)
        self.code = printed.text
        self.line_map = printed.line_map
        self.constants = printed.constants
        self.filename = f"<pyjit graph {graph.name} #{next(_serial)}>"
        # Registered so tracebacks and debuggers show the generated lines.
        linecache.cache[self.filename] = (len(self.code), None, self.code.splitlines(True), self.filename)
        namespace = {"constants": self.constants}
        exec(compile(self.code, self.filename, "exec"), namespace)
        self.forward = namespace[graph.name]

    def __call__(self, *args):
        if self._guarded_axes is not None:
            self._check_size_guards(args)
        try:
            return self.forward(*args)
        except Exception as error:
            self._annotate(error)
            raise

    def _check_size_guards(self, args: tuple) -> None:
        sizes = {name: args[position].shape[axis] for name, (position, axis) in self._guarded_axes.items()}
        for guard in self.graph.shape_env.guards:
            if not guard.holds(sizes):
                given = ", ".join(f"{name}={size}" for name, size in sorted(sizes.items()))
                raise ValueError(f"the inputs' sizes ({given}) break the size guard {guard} that graph "
                                 f"{self.graph.name} was traced under: trace it again for these sizes")

    def _annotate(self, error: Exception) -> None:
        node = None
        for frame, lineno in traceback.walk_tb(error.__traceback__):
            if frame.f_code.co_filename == self.filename:
                node = self.line_map.get(lineno)
        if node is None:
            return
        where = f", from {node.loc.describe()}" if node.loc is not None else ""
        error.add_note(f"while running node {node.name} of graph {self.graph.name}{where}")

    def __repr__(self) -> str:
        return f"GraphModule({self.graph.name}, {len(self.graph.nodes)} nodes)"
