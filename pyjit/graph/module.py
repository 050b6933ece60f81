"""`GraphModule`: a graph compiled from its printed Python, callable like the region it came from."""

from __future__ import annotations

import itertools
import linecache
import traceback

from .printer import python_code

_serial = itertools.count()


class GraphModule:
    """Runs `graph` by executing its printed code (NOTE(printed-code)).

    `.code` is that source, `.graph` the graph (printing it gives the node table), and
    `.line_map` maps code lines to nodes. An exception raised while running a node keeps
    its type and gains a note naming the node and the user's source line.
    """

    def __init__(self, graph):
        graph.lint()
        self.graph = graph
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
        try:
            return self.forward(*args)
        except Exception as error:
            self._annotate(error)
            raise

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
