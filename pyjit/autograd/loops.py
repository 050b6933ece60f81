"""Gradients through a loop node (NOTE(loop-capture) in pyjit/frontend/loops.py).

NOTE(loop-gradient): a captured loop whose body reads pyjit.Tensor values is one op of
one result, as every op the tape records is (NOTE(packed-eigh) packs eigh the same
way): `loop` returns its carries raveled and concatenated into one 1-D array, and the
enclosing graph takes each carry back out with `getitem`, `reshape` and `copy`, whose
VJPs are the registry's. The carries, and the invariants that get a gradient, share
one floating dtype (otherwise the loop unrolls).

The op's VJP is one call of a second op, `loop_gradient(start, stop, step, *carries,
*invariants, grad)`, whose result packs the gradients of the carries' values before
the loop and of the invariants that require grad. Its impl runs the loop forward
again keeping each iteration's incoming carries, then runs the body's backward for
each index in reverse: the body's joint graph (NOTE(joint-graph)) cut down to
`(index, *carries, *invariants, *tangents) -> (carry grads, invariant grads)`,
compiled by the capture's backend, whose carry gradients are the next (earlier)
iteration's tangents and whose invariant gradients are summed over the iterations.

The choice (measured in docs/autograd.md, "Loops"): recompute the forward in the
backward rather than save each iteration's carries in the forward. Between forward
and backward the node keeps only its inputs, as any op node does (the unrolled tape
keeps every intermediate of every iteration); during the backward it holds one copy
of the carries per iteration, and the body's forward runs three times per index in
all (forward, recomputation, and again inside the joint graph, which recomputes its
own intermediates from the carries). Checkpointing every few iterations would bound
the backward's memory too; it is not built.

Both ops are built per loop from the frontend's body. Where a value the loop reads
requires grad, the body's joint graph is built and compiled when the loop is captured,
so a body the joint graph cannot model (a keyword argument that requires grad) makes
the loop unroll, never a backward that fails; the joint graph gives gradients to the
carries and to those invariants only.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

from ..graph import Graph, GraphModule, TensorMeta
from ..ops.registry import Op, op
from .aot.joint import build_joint


class LoopNotDifferentiable(Exception):
    """The loop's gradient is not built for this body; the frontend unrolls it."""


def differentiable_loop(loop: Op, body: GraphModule, carries: int, wanted: Sequence[bool], examples: list,
                        compile_body: Callable) -> Op:
    """`loop` (the frontend's op: a tuple of carries) as one op of one packed result,
    with a VJP where an input requires grad (NOTE(loop-gradient)). `wanted[k]`: the
    body's input k + 1 (a carry, then the invariants) requires grad; `examples` are the
    body's (index, carries, invariants) examples; `compile_body` compiles a GraphModule
    as the loop's body was compiled."""
    if not carries:
        raise LoopNotDifferentiable("the loop carries no array")
    placeholders = body.graph.placeholders
    metas = [node.meta for node in placeholders[1:1 + carries]]
    invariant_metas = [node.meta for node in placeholders[1 + carries:]]
    dtype, invariants_wanted = metas[0].dtype, list(wanted[carries:])
    if dtype.kind not in "fc" or any(meta.dtype != dtype for meta in metas) or any(
            meta.dtype != dtype for meta, want in zip(invariant_metas, invariants_wanted) if want):
        raise LoopNotDifferentiable("the loop's carries, and the Tensors it reads that require grad, have more "
                                    "than one dtype, or one that is not floating")

    def run(xp, start, stop, step, *arrays):
        return _packed(xp, loop.impl(xp, start, stop, step, *arrays))

    def meta(start, stop, step, *arrays):
        return _packed_meta(arrays[:carries])

    vjp = None
    if any(wanted):
        gradient = _gradient_op(loop, body, carries, invariants_wanted, examples, compile_body)

        def vjp(grad, out, start, stop, step, *arrays):
            targets = [*arrays[:carries], *(value for value, want in zip(arrays[carries:], invariants_wanted) if want)]
            grads = iter(unpacked(gradient(start, stop, step, *arrays, grad), targets))
            return (None, None, None, *[next(grads) for _ in range(carries)],
                    *[next(grads) if want else None for want in invariants_wanted])

    packed = Op("loop", category="other", impl=run, meta=meta, vjp=vjp,
                doc="a captured loop whose carries are packed into one array (NOTE(loop-gradient))")
    packed.pure = loop.pure
    return packed


def unpacked(packed, like: Sequence) -> list:
    """The arrays (or graph nodes) of the shapes of `like` that `packed` holds one after
    another, each a fresh copy (not a view of the packed array)."""
    results, offset = [], 0
    for value in like:
        shape = tuple(value.shape)
        size = math.prod(shape, start=1)
        piece = op.getitem(packed, (slice(offset, offset + size),))
        results.append(op.copy(op.reshape(piece, shape)))
        offset = offset + size
    return results


def _packed(xp, arrays):
    return xp.concatenate([xp.ravel(array) for array in arrays])


def _packed_meta(metas) -> TensorMeta:
    return TensorMeta((sum(meta.numel for meta in metas),), metas[0].dtype, metas[0].device)


def _gradient_op(loop: Op, body: GraphModule, carries: int, wanted: list[bool], examples: list,
                 compile_body: Callable) -> Op:
    """`loop_gradient(start, stop, step, *carries, *invariants, grad)`: the packed
    gradients of the carries and of the wanted invariants (NOTE(loop-gradient))."""
    graph, differentiable = _body_gradient(body.graph, carries, wanted)
    tangents = [example for example, flows in zip(examples[1:1 + carries], differentiable) if flows]
    step_back = compile_body(GraphModule(graph), [*examples, *tangents])

    def run(xp, start, stop, step, *arrays):
        *arrays, grad = arrays
        state, invariants = list(arrays[:carries]), arrays[carries:]
        indices = range(start, stop, step)
        history = []
        for index in indices:
            history.append(state)
            state = loop.impl(xp, index, index + step, step, *state, *invariants)
        state = [xp.reshape(piece, array.shape) for piece, array in
                 zip(xp.split(grad, _offsets(state)), state)]
        sums = None
        for index, incoming in zip(reversed(indices), reversed(history)):
            grads = step_back(index, *incoming, *invariants,
                              *(tangent for tangent, flows in zip(state, differentiable) if flows))
            state, summed = list(grads[:carries]), grads[carries:]
            sums = list(summed) if sums is None else [total + part for total, part in zip(sums, summed)]
        if sums is None:  # no iteration: the carries pass through, the invariants get zeros
            sums = [xp.zeros_like(value) for value, want in zip(invariants, wanted) if want]
        return _packed(xp, [*state, *sums])

    def meta(start, stop, step, *arrays):
        *arrays, grad = arrays
        return _packed_meta([*arrays[:carries], *(value for value, want in zip(arrays[carries:], wanted) if want)])

    return Op("loop_gradient", category="other", impl=run, meta=meta,
              doc="the gradients of a captured loop's inputs (NOTE(loop-gradient))")


def _offsets(arrays) -> list[int]:
    offsets, total = [], 0
    for array in arrays[:-1]:
        total += array.size
        offsets.append(total)
    return offsets


def _body_gradient(body: Graph, carries: int, wanted: list[bool]) -> tuple[Graph, list[bool]]:
    """The body's backward: `(index, *carries, *invariants, *tangents) -> (carry grads,
    wanted invariant grads)`, zeros where no gradient flows; and which carries get a
    tangent (those the body's output differentiably depends on)."""
    joint = build_joint(body, [False, *[True] * carries, *wanted])
    graph = joint.graph
    primals = joint.primals[1:]
    grads = [grad if grad is not None else op.zeros_like(primal)
             for primal, grad, want in zip(primals, joint.grads[1:], [True] * carries + wanted) if want]
    graph.erase(graph.output_node)
    graph.output(tuple(grads))
    graph.eliminate_dead_code()
    graph.lint()
    return graph, joint.differentiable
