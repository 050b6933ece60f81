"""The frontend: bytecode decoding and assembly, and (later) the symbolic interpreter
that turns Python frames into graphs, guards and resume functions."""

from .bytecode import Bytecode, ExceptHandler, FreeVar, Instr, Label, assemble, decode

__all__ = ["Bytecode", "ExceptHandler", "FreeVar", "Instr", "Label", "assemble", "decode"]
