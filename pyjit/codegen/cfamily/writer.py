"""The base of the C and CUDA kernel writers: the lines of one kernel's function, its
buffer parameters, and values written as text, each load and call a named temporary."""

from __future__ import annotations

from ..ir.index import Index
from ..ir.kernel_ir import Constant, IndexValue, Kernel, Load, Store, Var, unnamed_values
from .dialect import index_text


class KernelWriter:
    """What a C-family kernel writer shares. A writer says how its dialect declares a
    temporary (`_temporary_type(dtype)`), writes a constant (`_literal(value, dtype)`),
    and reads a buffer element or applies a scalar op (`_definition`)."""

    _temporary_type: staticmethod
    _literal: staticmethod

    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        self.lines: list[str] = []
        self.params = {buffer.name: f"b{position}" for position, buffer in enumerate(kernel.buffers)}
        self.temps = 0

    def _definition(self, node, scope: dict) -> str:
        raise NotImplementedError

    def _index(self, index: Index) -> str:
        return index_text(index)

    def _element(self, access: Load | Store) -> str:
        """The buffer element a load reads or a store writes, as stored."""
        return f"{self.params[access.buffer]}[{self._index(access.index)}]"

    def _value(self, value, depth: int, scope: dict) -> str:
        """The text of `value`, each load and call it needs that `scope` does not name
        defined first as a temporary (arguments before calls: NOTE(flat-walks))."""
        for node in unnamed_values(value, scope):
            text = self._definition(node, scope)
            scope[node] = f"t{self.temps}"
            self.temps += 1
            self._emit(depth, f"const {self._temporary_type(node.dtype)} {scope[node]} = {text};")
        return self._text(value, scope)

    def _text(self, value, scope: dict) -> str:
        """The text of a value written in place (a constant, an index, a reduction's
        result) or named in `scope`."""
        if isinstance(value, Constant):
            return self._literal(value.value, value.dtype)
        if isinstance(value, IndexValue):
            return f"((int64_t)({self._index(value.index)}))"
        if isinstance(value, Var):
            return value.name
        return scope[value]

    def _emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)
