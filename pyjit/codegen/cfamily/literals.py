"""Constants as C literals, shared by the C and CUDA renderers."""

from __future__ import annotations

import numpy as np

from .types import ctype, suffix


def float_literal(value: float, dtype: np.dtype) -> str:
    tail = suffix(dtype)
    if value != value:
        return f'__builtin_nan{tail}("")'
    if value in (float("inf"), float("-inf")):
        return f"{'-' if value < 0 else ''}__builtin_inf{tail}()"
    return float(value).hex() + tail


def literal(value, dtype: np.dtype) -> str:
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return float_literal(value, dtype)
    value = int(value)
    if dtype.kind == "b":
        return "1" if value else "0"
    if dtype == np.int64 and value == -(1 << 63):
        return "(-9223372036854775807LL - 1)"
    if dtype.itemsize == 8:
        return f"{value}{'ULL' if dtype.kind == 'u' else 'LL'}"
    return f"(({ctype(dtype)}){value})"
