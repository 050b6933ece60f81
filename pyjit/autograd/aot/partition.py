"""Cutting a joint graph into a forward and a backward graph.

NOTE(partitioners): both partitioners choose the set of values the forward saves for
the backward; everything else follows from that choice (`split`):
  * the forward graph takes the primals and returns the user's outputs, then the saved
    values that are neither primals nor outputs (those the runtime takes from where
    they already are);
  * the backward graph takes the saved values, then the tangents, recomputes every
    forward-side value it needs that was not saved, and returns the input gradients.
`default` saves what the backward reads: every forward-side value (NOTE(joint-graph))
with a backward-side user. `min_cut` (NOTE(min-cut-cost)) saves the cheapest set that
separates the primals from the backward and recomputes the rest in the backward.
Constants are copied into both graphs, never saved. A size symbol the backward needs
but cannot read from the shape of a saved value or a tangent brings a primal that has it
into the saved values (the primal is alive anyway; it costs no copy).
"""

from __future__ import annotations

import dataclasses
import math

from ...graph import Graph, Node, SymInt, TensorMeta
from ...graph.node import map_nodes
from ...ops.views import permutation
from .joint import Joint
from .mincut import min_cut

PARTITIONERS = ("default", "min_cut")


@dataclasses.dataclass
class Partition:
    forward: Graph
    backward: Graph
    saved: list[Node]         # joint nodes, in the order of the backward's leading inputs
    saved_bytes: int          # at the example sizes


def partition(joint: Joint, partitioner: str = "default", memory_budget: float = 1.0) -> Partition:
    """The joint graph split by `partitioner` (NOTE(partitioners))."""
    if partitioner not in PARTITIONERS:
        raise ValueError(f"unknown partitioner {partitioner!r}; use one of {', '.join(PARTITIONERS)}")
    backward_side = joint.depends_on_tangents()
    saved = _default_saved(joint, backward_side)
    if partitioner == "min_cut":
        saved = _min_cut_saved(joint, backward_side, budget=memory_budget * saved_bytes(saved))
    return split(joint, saved)


def _default_saved(joint: Joint, backward_side: set[Node]) -> list[Node]:
    return [node for node in joint.graph.nodes if node.kind in ("placeholder", "call") and node not in backward_side
            and any(user in backward_side for user in node.users)]


# NOTE(min-cut-cost): the min-cut partitioner's cost model. Saving a value costs its
# size in bytes (at the example sizes; a primal costs one byte less than an
# intermediate of its size, so ties go to values the caller keeps alive anyway).
# Recomputing is free for ops of the categories in RECOMPUTABLE (pointwise and views:
# the backward's kernels fuse them), and forbidden for the others (matmul, reductions,
# gathers, concatenation, creation): those are computed once, in the forward. The cut
# is the cheapest set of values whose saving lets the backward recompute everything
# else it reads. With `memory_budget` below 1, when the cut saves more than that fraction
# of what the default partitioner saves, reductions and then matmuls become
# recomputable too (each step recomputes more and saves less), until the cut fits or
# every category is allowed.
# NOTE(compared-values): whatever the budget, a value an `equal` reads is never
# recomputed in the backward. A max or min reduction's backward (the tape's rule: the
# gradient to the elements equal to the result, split among ties) compares the values
# the forward reduced with its result; recomputed, they need not have the same bits (a
# compiled kernel's vector math is within 4 ulp, and which variant runs, vector or
# scalar, depends on how the compiler vectorizes each loop: NOTE(vector-math-accuracy)
# in pyjit/codegen/cpu/renderer.py), and one ulp off, no element equals the maximum and
# the gradient is lost (fuzzer seed 777874: `np.tanh(x).max()` under inductor).
RECOMPUTABLE = ("pointwise", "view")
RELAXED = (("reduction",), ("reduction", "matmul"), ("reduction", "matmul", "other"))


def _min_cut_saved(joint: Joint, backward_side: set[Node], budget: float) -> list[Node]:
    chosen = None
    for extra in ((), *RELAXED):
        chosen = _cut(joint, backward_side, set(RECOMPUTABLE) | set(extra))
        if saved_bytes(chosen) <= budget:
            break
    return chosen


def _cut(joint: Joint, backward_side: set[Node], recomputable: set[str]) -> list[Node]:
    candidates = [node for node in joint.graph.nodes
                  if node.kind in ("placeholder", "call") and node not in backward_side]
    capacity: dict[tuple, int] = {}
    weights = {node: 2 * _bytes(node) + (0 if node.kind == "placeholder" else 1) for node in candidates}
    infinite = 2 * sum(weights.values()) + 1
    for node in candidates:
        capacity[((node, "in"), (node, "out"))] = weights[node]
        pinned = node.kind == "placeholder" or getattr(node.target, "category", "other") not in recomputable \
            or any(getattr(user.target, "name", None) == "equal" for user in node.users)  # NOTE(compared-values)
        if pinned:
            capacity[("source", (node, "in"))] = infinite
        for user in node.users:
            if user in backward_side:
                capacity[((node, "out"), "sink")] = infinite
            elif user.kind == "call":
                capacity[((node, "out"), (user, "in"))] = infinite
    reachable = min_cut(capacity, "source", "sink")
    return [node for node in candidates if (node, "in") in reachable and (node, "out") not in reachable]


def saved_bytes(saved: list[Node]) -> int:
    return sum(_bytes(node) for node in saved)


def _bytes(node: Node) -> int:
    meta = node.meta
    if not isinstance(meta, TensorMeta):
        return 0
    sizes = [size.hint if isinstance(size, SymInt) else size for size in meta.shape]
    return math.prod(sizes) * meta.dtype.itemsize


def split(joint: Joint, saved: list[Node]) -> Partition:
    """The forward and backward graphs for the values `saved` (NOTE(partitioners))."""
    tangents = set(joint.tangents)
    grads = [grad for grad in joint.grads if grad is not None]
    saved = saved + _symbol_sources(joint, saved, grads)
    backward_nodes = _ancestors(grads, stop=set(saved) | tangents)
    missing = [node for node in backward_nodes if node.kind == "placeholder" and node not in saved
               and node not in tangents]
    if missing:
        raise AssertionError(f"the backward would read {missing[0].name}, which is not saved")  # a partitioner bug
    outputs = joint.outputs
    extra = [node for node in saved if node.kind != "placeholder" and not any(node is value for value in outputs)]
    forward = extract("forward", joint.graph, joint.primals, (*outputs, *extra), impure=True)
    backward = extract("backward", joint.graph, [*saved, *joint.tangents], tuple(grads),
                       swapped=_transposed_products(grads))
    return Partition(forward, backward, saved, saved_bytes(saved))


# NOTE(gradient-layout): the gradient of a matrix used transposed (`x @ w.T`, a linear
# layer's weight) is the transpose of a product, (x.T @ g).T: a view in column order,
# which `.grad` copies into row order (NOTE(gradient-stealing) takes only a fresh
# C-ordered array). The backward graph computes such a gradient as g.T @ x instead, the
# same product with its operands transposed and swapped, which BLAS reads in place: it
# comes out fresh and C-ordered, and `.grad` takes it without a copy (in the harness's
# MLP training step, two 2 MB copies a step). The product is the same; its bits may
# differ from the tape's in the last place, as BLAS sums the swapped problem in another
# order (as it does for another thread count).
def _transposed_products(grads: list[Node]) -> set[Node]:
    """The gradients NOTE(gradient-layout) computes as swapped products: transposes of a
    2-D matmul of 2-D operands that nothing else reads."""
    found = set()
    for grad in grads:
        product = grad.args[0] if _full_transpose(grad) else None
        if (product is not None and getattr(product.target, "name", None) == "matmul" and not product.kwargs
                and len(product.users) == 1 and all(map(_matrix, product.args))):
            found.add(grad)
    return found


def _swapped_product(graph: Graph, transposed: Node, copies: dict[Node, Node]) -> Node:
    """`transposed`, (a @ b).T, as b.T @ a.T (NOTE(gradient-layout))."""
    def transpose(operand: Node) -> Node:
        if _full_transpose(operand) and operand.args[0] in copies:  # the transpose of a transpose is its operand
            return copies[operand.args[0]]
        return graph.call(transposed.target, copies[operand])

    second, first = map(transpose, transposed.args[0].args)
    return graph.call(transposed.args[0].target, first, second)


def _full_transpose(node: Node) -> bool:
    """Whether `node` is the transpose of a matrix (its two axes swapped)."""
    return (getattr(node.target, "name", None) == "transpose" and not node.kwargs and _matrix(node)
            and _matrix(node.args[0]) and permutation(node.args[1] if len(node.args) > 1 else None, 2) == (1, 0))


def _matrix(value) -> bool:
    return isinstance(value, Node) and isinstance(value.meta, TensorMeta) and value.meta.ndim == 2


def _symbol_sources(joint: Joint, saved: list[Node], grads: list[Node]) -> list[Node]:
    """Primals to save for the size symbols the backward cannot bind otherwise."""
    inputs = [*saved, *joint.tangents]
    bound = set().union(*(_lone_symbols(node) for node in inputs)) if inputs else set()
    needed: set[str] = set()
    for node in _ancestors(grads, stop=set(inputs)):
        needed |= _symbols_in((node.args, node.kwargs))
    extra = []
    for symbol in sorted(needed - bound):
        source = next((primal for primal in joint.primals if symbol in _lone_symbols(primal)), None)
        if source is not None and source not in saved and source not in extra:
            extra.append(source)
    return extra


def _lone_symbols(node: Node) -> set[str]:
    meta = node.meta
    if not isinstance(meta, TensorMeta):
        return set()
    return {str(size) for size in meta.shape if isinstance(size, SymInt) and str(size) in size.symbols()}


def _symbols_in(value) -> set[str]:
    if isinstance(value, SymInt):
        return set(value.symbols())
    if type(value) in (tuple, list):
        return set().union(*map(_symbols_in, value)) if value else set()
    if isinstance(value, dict):
        return _symbols_in(tuple(value.values()))
    if isinstance(value, slice):
        return _symbols_in((value.start, value.stop, value.step))
    return set()


def _ancestors(roots, stop: set[Node]) -> set[Node]:
    """The nodes `roots` are computed from, walking back no further than `stop`."""
    found: set[Node] = set()
    todo = [node for node in roots if isinstance(node, Node)]
    while todo:
        node = todo.pop()
        if node in found:
            continue
        found.add(node)
        if node not in stop:
            todo.extend(node.inputs())
    return found


def extract(name: str, source: Graph, inputs: list[Node], outputs: tuple, *, impure: bool = False,
            swapped: set[Node] = frozenset()) -> Graph:
    """A new graph computing `outputs` of `source` from `inputs` (its placeholders, in
    that order), with every node it needs copied in `source`'s order; `impure`: also
    every impure call (a random draw runs, and moves the stream, though nothing reads it);
    `swapped`: transposed products computed as swapped ones (NOTE(gradient-layout))."""
    graph = Graph(name, shape_env=source.shape_env)
    copies: dict[Node, Node] = {}
    for node in inputs:
        copies[node] = graph.placeholder(node.name, node.meta)
    roots = (*outputs, *source.impure_calls()) if impure else outputs
    needed = _ancestors(roots, stop=set(inputs))
    for node in source.nodes:
        if node not in needed or node in copies:
            continue
        if node.kind == "constant":
            copies[node] = graph.constant(node.target, node.name)
        elif node in swapped and all(operand in copies for operand in node.args[0].args):
            with graph.at(node.loc):
                copies[node] = _swapped_product(graph, node, copies)
        elif node.kind == "call":
            with graph.at(node.loc):
                copies[node] = graph.call(node.target, *map_nodes(node.args, copies.__getitem__),
                                          **map_nodes(node.kwargs, copies.__getitem__))
        else:
            raise AssertionError(f"graph {name} would read placeholder {node.name}, which it does not take")
    graph.output(map_nodes(outputs, copies.__getitem__))
    if swapped:
        graph.eliminate_dead_code()  # the products the swapped ones replace
    graph.lint()
    return graph
