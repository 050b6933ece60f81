"""The C types of NumPy dtypes, shared by the C and CUDA renderers."""

from __future__ import annotations

import numpy as np

C_TYPES = {np.dtype(name): ctype for name, ctype in [
    ("bool", "uint8_t"), ("int8", "int8_t"), ("int16", "int16_t"), ("int32", "int32_t"), ("int64", "int64_t"),
    ("uint8", "uint8_t"), ("uint16", "uint16_t"), ("uint32", "uint32_t"), ("uint64", "uint64_t"),
    ("float32", "float"), ("float64", "double")]}


def ctype(dtype: np.dtype) -> str:
    return C_TYPES[np.dtype(dtype)]


def utype(dtype: np.dtype) -> str:
    """The unsigned type integer arithmetic of `dtype` wraps around in (C promotes
    narrower types to int, whose overflow would be undefined)."""
    return "uint64_t" if np.dtype(dtype).itemsize == 8 else "uint32_t"


def suffix(dtype: np.dtype) -> str:
    return "f" if np.dtype(dtype) == np.float32 else ""
