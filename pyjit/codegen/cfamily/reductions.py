"""Reductions as code generation sees them, read from the registry's rules
(NOTE(reduction-rule) in pyjit/ops/registry.py) by the scheduler, the glue, the C
launcher and both kernel writers.

NOTE(registry-reductions): the registry's category "reduction" is the one list of
reductions, and a `Reduce`'s kind is its entry's name. Code generation asks this module
what it needs to know of one (its rule, its accumulator, whether it refuses an empty
axis, whether its result is one of its values) and names none: a reduction added to the
registry with a rule fuses into C and CUDA kernels as the others do
(tests/codegen/cfamily/test_reductions.py registers one).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...ops.registry import REGISTRY, ReductionRule
from ..ir.kernel_ir import Reduce


def rule_of(kind: str) -> ReductionRule:
    """The rule of the reduction `kind` (a `Reduce`'s kind: the entry's name)."""
    return REGISTRY[kind].reduction


def node_rule(node) -> ReductionRule | None:
    """The rule of a graph node's op, None when the op is no reduction."""
    return getattr(node.target, "reduction", None)


def refuses_empty(node) -> bool:
    """Whether `node` reduces with an op NumPy refuses to apply to an empty axis."""
    rule = node_rule(node)
    return rule is not None and not rule.allows_empty


def selects(kind: str) -> bool:
    """Whether the result of the reduction `kind` is one of the values reduced (max and
    min: NOTE(selected-values) in scheduler.py), not a position or a value computed from them."""
    rule = rule_of(kind)
    return not rule.positional and rule.combine in ("maximum", "minimum")


def sums(kind: str) -> bool:
    """Whether the reduction `kind` adds its values (NOTE(one-pass-moments) rewrites such sums)."""
    rule = rule_of(kind)
    return not rule.positional and rule.combine == "add"


def kind_combining(op: str) -> str | None:
    """The first registered reduction (no positions) whose combine is the scalar op `op`:
    what a columnar accumulation `acc[k] = op(acc[k], value)` computes (NOTE(column-split))."""
    for name, entry in REGISTRY.items():
        rule = getattr(entry, "reduction", None)
        if rule is not None and not rule.positional and rule.combine == op:
            return name
    return None


# OpenMP's max and min operators compare with > and <: an accumulator of a reduction
# clause with one of them is `acc = v > acc ? v : acc`, which keeps a NaN out (the C
# renderer keeps a NaN flag beside a float one).
_SELECTING_OPERATORS = {"max": ">", "min": "<"}
# The OpenMP operator that keeps a positional reduction's first position (the smallest).
FIRST_POSITION = "min"


@dataclasses.dataclass(frozen=True)
class ReductionPlan:
    """How a kernel computes one `Reduce`: `source`, the dtype of the values folded (the
    value's for a positional reduction, whose result is a position; the result's
    otherwise), `accumulator`, the dtype they accumulate in, and `identity`, the
    accumulator's start as a value of `source`."""

    rule: ReductionRule
    source: np.dtype
    accumulator: np.dtype
    identity: object

    @property
    def relation(self) -> str | None:
        """The comparison of a select-form accumulator (`acc = v > acc ? v : acc`) where
        the rule's OpenMP operator selects, None where it does arithmetic."""
        return _SELECTING_OPERATORS.get(self.rule.openmp)


def plan_of(reduce: Reduce) -> ReductionPlan:
    """What the rule of `reduce`'s kind makes of its dtypes."""
    rule = rule_of(reduce.kind)
    source = np.dtype(reduce.value.dtype if rule.positional else reduce.dtype)
    return ReductionPlan(rule, source, np.dtype(rule.accumulator(source)), rule.identity(source))
