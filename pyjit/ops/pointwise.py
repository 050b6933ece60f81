"""Pointwise ops: NumPy's ufuncs (and erf), with their derivatives and scalar formulas."""

from __future__ import annotations

import numpy as np

from .formula import F
from .gradients import input_grad
from .registry import Op, op, register
from .shape_rules import ufunc_meta


def ufunc_op(name: str, *, vjp, formula, ufunc: np.ufunc | None = None, doc: str = "") -> Op:
    """Register the pointwise op `name` computed by the ufunc of that name (or `ufunc`)
    of the argument's array module."""
    ufunc = ufunc if ufunc is not None else getattr(np, name)
    ufunc_name = ufunc.__name__

    def impl(xp, *args):
        return getattr(xp, ufunc_name)(*args)

    return register(Op(name, category="pointwise", impl=impl, meta=ufunc_meta(ufunc), vjp=vjp,
                       formula=formula, doc=doc or f"numpy.{ufunc_name}, elementwise with broadcasting."))


ufunc_op("add", formula=F.add,
         vjp=lambda grad, out, a, b: (input_grad(a, grad), input_grad(b, grad)))
ufunc_op("exp", formula=F.exp,
         vjp=lambda grad, out, x: (input_grad(x, op.multiply(grad, out)),))
ufunc_op("multiply", formula=F.mul,
         vjp=lambda grad, out, a, b: (input_grad(a, op.multiply(grad, b)), input_grad(b, op.multiply(grad, a))))
