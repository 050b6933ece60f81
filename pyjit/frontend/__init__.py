"""The frontend: bytecode decoding and assembly, the sources of values and the guards
built on them, and the symbolic interpreter that turns Python frames into graphs,
guards and resume functions."""

from .allowed import allow_in_graph
from .breaks import BreakReason, graph_break
from .assemble import assemble
from .bytecode import Bytecode, ExceptHandler, FreeVar, Instr, Label, decode
from .convert import reset
from .entry import compile, disable, optimize
from .explain import ExplainOutput, explain
from .guards import ArrayGuard, DimChange, GuardSet, changed_dims
from .sources import AttrSource, BuiltinSource, ClosureSource, GlobalSource, ItemSource, LocalSource, Source

__all__ = ["ArrayGuard", "allow_in_graph", "AttrSource", "BreakReason", "BuiltinSource", "Bytecode", "ClosureSource",
           "DimChange", "ExceptHandler", "ExplainOutput", "FreeVar", "GlobalSource", "GuardSet", "Instr",
           "ItemSource", "Label", "LocalSource", "Source", "assemble", "changed_dims", "compile",
           "decode", "disable", "explain", "graph_break", "optimize", "reset"]
