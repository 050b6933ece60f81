"""The joint graph of a captured forward graph: (primals, tangents) -> (outputs, input grads).

NOTE(joint-graph): the forward graph's nodes are copied into a new graph whose
placeholders are the forward's inputs (the primals) followed by one tangent per
differentiable output. The reverse pass then walks the copied calls from last to
first and calls each op's registry VJP on graph nodes, so the VJP records itself into
the joint graph (NOTE(dispatch-protocol)): no derivative is written here. Which values
get gradients follows the tape exactly: a call's result requires grad when its op has a
VJP, its dtype is floating or complex and one of its inputs requires grad; gradients
flow to positional arguments and items of list arguments only. Calls that nothing
reads (the gradients of arguments that need none) are dropped. Everything that does
not depend on a tangent is "forward-side"; the partitioners (partition.py) decide which
of it the forward computes and saves and which the backward recomputes.

NOTE(vjp-reads): the tape saves each op's inputs and output and raises when a VJP
reads one that was modified in place since (NOTE(saved-values)). The joint graph
records, per forward call, which forward values its VJP reads, so the compiled node
can raise the same error for a graph input or output the user modified after the call,
whatever the partitioner chose to save (NOTE(aot-node) in runtime.py).
"""

from __future__ import annotations

import dataclasses

from ...graph import Graph, Node, TensorMeta
from ...graph.node import map_nodes
from ...ops.registry import op
from ..nodes import UnusableValue


class JointUnsupported(Exception):
    """The graph cannot be differentiated ahead of time; it runs on the tape instead."""


@dataclasses.dataclass
class VjpCall:
    """What one forward call's VJP did in the joint graph (NOTE(vjp-reads))."""
    reads: set[Node]       # the forward values it reads for their data
    flows_to: list[Node]   # the arguments it gave a gradient to


@dataclasses.dataclass
class Joint:
    graph: Graph
    primals: list[Node]            # the forward's inputs, in order
    outputs: list                  # the forward's outputs (nodes or constants), in order
    differentiable: list[bool]     # per output: it gets a tangent and a grad_fn
    tangents: list[Node]           # one per differentiable output, in order
    grads: list[Node | None]       # per primal: its gradient, None where none flows
    vjp_calls: dict[Node, VjpCall]  # per forward call whose VJP ran (NOTE(vjp-reads))
    forward_calls: list[Node]      # the copies of the forward's calls, in order (as the tape made their nodes)

    def backward_path(self, output: Node) -> set[Node]:
        """The forward calls whose VJP a gradient into `output` runs through, as the tape
        runs their nodes (NOTE(vjp-reads))."""
        found, todo = set(), [output]
        while todo:
            node = todo.pop()
            call = self.vjp_calls.get(node)
            if call is not None and node not in found:
                found.add(node)
                todo.extend(call.flows_to)
        return found

    def depends_on_tangents(self) -> set[Node]:
        """The nodes computed from a tangent: the backward-side of the graph."""
        found: set[Node] = set(self.tangents)
        for node in self.graph.nodes:
            if node.kind == "call" and any(used in found for used in node.inputs()):
                found.add(node)
        return found


def build_joint(forward: Graph, requires_grad: list[bool], seeded: set[int] | None = None,
                skipped: int = 0) -> Joint:
    """The joint graph of `forward` (NOTE(joint-graph)); `requires_grad[i]` says
    whether placeholder i is a tensor that requires grad. `seeded`: only the tangents of
    these differentiable outputs (by their order among them) flow back; `skipped`: the
    VJPs of the first `skipped` calls do not run (NOTE(tape-order) in runtime.py)."""
    requiring_forward = requiring_grad(forward, requires_grad)
    output = forward.output_node.args[0]
    outputs = [output] if isinstance(output, Node) else list(output)
    differentiable = [isinstance(value, Node) and value in requiring_forward for value in outputs]
    joint = Graph("joint", shape_env=forward.shape_env)
    copies: dict[Node, Node] = {}
    for node in forward.placeholders:
        copies[node] = joint.placeholder(node.name, node.meta)
    primals = [copies[node] for node in forward.placeholders]
    tangents = [joint.placeholder(f"tangents_{index}", value.meta)
                for index, (value, wanted) in enumerate(zip(outputs, differentiable)) if wanted]
    for node in forward.nodes:
        if node.kind == "constant":
            copies[node] = joint.constant(node.target, node.name)
        elif node.kind == "call":
            with joint.at(node.loc):
                copies[node] = joint.call(node.target, *map_nodes(node.args, copies.__getitem__),
                                          **map_nodes(node.kwargs, copies.__getitem__))
    outputs = [map_nodes(value, copies.__getitem__) for value in outputs]
    seeds = list(zip([value for value, wanted in zip(outputs, differentiable) if wanted], tangents))
    if seeded is not None:
        seeds = [seed for index, seed in enumerate(seeds) if index in seeded]
    forward_calls = [copies[node] for node in forward.calls()]
    vjp_calls: dict[Node, VjpCall] = {}
    gradients = _reverse(joint, {copies[node] for node in requiring_forward}, seeds, vjp_calls,
                         set(forward_calls[:skipped]))
    grads = [gradients.get(primal) if wanted else None for primal, wanted in zip(primals, requires_grad)]
    joint.output((*outputs, *[grad for grad in grads if grad is not None]))
    joint.eliminate_dead_code()
    joint.lint()
    return Joint(joint, primals, outputs, differentiable, tangents, grads, vjp_calls, forward_calls)


def requiring_grad(forward: Graph, requires_grad: list[bool]) -> set[Node]:
    """The forward's values that require grad, as the tape would decide."""
    requiring = {node for node, wanted in zip(forward.placeholders, requires_grad) if wanted}
    for node in forward.calls():
        meta = node.meta
        if getattr(node.target, "vjp", None) is not None and isinstance(meta, TensorMeta) \
                and meta.dtype.kind in "fc" and any(used in requiring for used in node.inputs()):
            requiring.add(node)
    return requiring


def _reverse(joint: Graph, requiring: set[Node], seeds, vjp_calls: dict, skipped: set[Node]) -> dict[Node, Node]:
    """The gradient of every requiring placeholder, from the tangents back through the
    VJPs; each VJP is called once per call node and gives every argument's gradient.
    Fills `vjp_calls` (NOTE(vjp-reads))."""
    gradients: dict[Node, Node] = {}
    forward_side = {node for node in joint.nodes if node.kind in ("placeholder", "call")}
    forward_side.difference_update(tangent for _, tangent in seeds)
    for value, tangent in seeds:
        _accumulate(joint, gradients, value, tangent)
    for node in reversed(joint.calls()):
        grad = gradients.pop(node, None)
        if grad is None or node not in requiring or node in skipped:
            continue
        arguments = [(position, item, value) for position, item, value in _tensor_arguments(node)
                     if value in requiring]
        if any(position is None for position, _, _ in arguments):
            raise JointUnsupported(f"{node.target.name}: a keyword argument requires grad (NOTE(op-entry))")
        if not arguments:
            continue
        with joint.at(node.loc):
            start = len(joint.nodes)
            results = node.target.vjp(grad, node, *node.args, **node.kwargs)
            call = vjp_calls[node] = VjpCall(_reads(joint.nodes[start:], forward_side), [])
            for position, item, value in arguments:
                gradient = _at(results, position, item)
                if gradient is not None:
                    call.flows_to.append(value)
                _accumulate(joint, gradients, value, gradient)
    return gradients


def _reads(vjp_nodes: list[Node], forward_side: set[Node]) -> set[Node]:
    """The forward values `vjp_nodes` read for their data: as on the tape, a shape-only
    op (zeros_like …) does not read its first argument's data (UnusableValue)."""
    reads = set()
    for node in vjp_nodes:
        inputs = list(node.inputs())
        if getattr(node.target, "name", None) in UnusableValue.SHAPE_ONLY_OPS and node.args:
            inputs = [value for value in inputs if value is not node.args[0]]
        reads.update(value for value in inputs if value in forward_side)
    return reads


def _tensor_arguments(node: Node) -> list[tuple]:
    """(position, item, node) for each node among the arguments: item is the index in a
    list or tuple argument (None for a direct one); position is None for keywords."""
    found = []
    for position, arg in enumerate(node.args):
        if isinstance(arg, Node):
            found.append((position, None, arg))
        elif type(arg) in (list, tuple):
            found += [(position, item, value) for item, value in enumerate(arg) if isinstance(value, Node)]
    found += [(None, None, value) for value in node.kwargs.values() if isinstance(value, Node)]
    return found


def _at(results, position: int, item):
    if results is None or position >= len(results) or results[position] is None:
        return None
    return results[position] if item is None else results[position][item]


def _accumulate(joint: Graph, gradients: dict, node: Node, grad) -> None:
    if grad is None:
        return
    if not isinstance(grad, Node):  # a VJP that computed on constants alone
        grad = joint.constant(grad, "grad")
    previous = gradients.get(node)
    gradients[node] = grad if previous is None else op.add(previous, grad)
