"""The reverse pass: running the tape's nodes from outputs back to leaves.

NOTE(engine): `run` takes root edges (node, output_nr) with their gradients and
  1. walks the graph from the roots and counts, for every node, the edges into it;
  2. with `inputs` (autograd.grad), keeps only the nodes from which an input's node
     can be reached, and runs none of the others;
  3. runs nodes whose every incoming edge has delivered (a dependency count at zero),
     the most recently created first (PyTorch's order), each on the sum of the
     gradients that arrived: first its pre-hooks (tensor hooks), then the capture of
     an input's gradient, then the node itself; gradients flow along its
     next_functions to the nodes they name;
  4. releases each node's saved values once it ran, unless retain_graph
     (NOTE(saved-values) in nodes.py).
A node that received no gradient at all passes none on without running. Leaves are
reached through their AccumulateGrad nodes, which add to `.grad` in backward() and
only capture in grad(). The engine sits below Tensor, whose `backward` runs it
(NOTE(tensor-class) in nodes.py).
"""

from __future__ import annotations

import heapq
import itertools
from typing import Sequence

import numpy as np

from ..ops import REGISTRY
from .grad_mode import no_grad
from .nodes import AccumulateGrad, BackwardNode, PartialBackward, tensor_type


def backward(tensors, grad_tensors=None, retain_graph: bool | None = None, create_graph: bool = False) -> None:
    """Accumulate into the leaves' `.grad` the gradient of the sum of `tensors`, each
    weighted by its entry of `grad_tensors` (ones for single-element tensors)."""
    tensors = _as_tuple(tensors)
    roots, grads = _roots(tensors, grad_tensors, create_graph)
    with no_grad():  # hooks compute on gradients; as in PyTorch, that is not recorded
        _execute(roots, grads, create_graph if retain_graph is None else retain_graph, None)


def grad(outputs, inputs, grad_outputs=None, retain_graph: bool | None = None, create_graph: bool = False,
         allow_unused: bool = False) -> tuple:
    """The gradients of `outputs` (weighted by `grad_outputs`) with respect to
    `inputs`, returned instead of accumulated into `.grad`; None for an input that
    the outputs do not depend on, when `allow_unused`."""
    tensor_class, _ = tensor_type()
    outputs, inputs = _as_tuple(outputs), _as_tuple(inputs)
    for index, tensor in enumerate(inputs):
        if not isinstance(tensor, tensor_class) or not tensor.requires_grad:
            raise RuntimeError(f"element {index} of the differentiated tensors does not require grad")
    roots, grads = _roots(outputs, grad_outputs, create_graph)
    with no_grad():
        captured = _execute(roots, grads, create_graph if retain_graph is None else retain_graph,
                            [tensor._gradient_edge() for tensor in inputs])
    results = []
    for tensor, value in zip(inputs, captured):
        if value is None and not allow_unused:
            raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                               "Set allow_unused=True if this is the desired behavior.")
        results.append(None if value is None else tensor_class(value))
    return tuple(results)


# NOTE(backward-executor): backward() and grad() hand the reverse pass to the executor
# set here, `run` (the tape) unless compiled autograd is enabled, which sets its own
# (pyjit/autograd/compiled_autograd/, NOTE(compiled-autograd)). It is called as `run` is.
_executor = None


def set_executor(executor):
    """Make `executor(roots, grads, retain_graph=…, inputs=…)` run the reverse passes
    (None: the tape's `run`); returns the one it replaces."""
    global _executor
    previous, _executor = _executor, executor
    return previous


def _execute(roots: list, grads: list, retain_graph: bool, inputs: list | None):
    executor = run if _executor is None else _executor
    return executor(roots, grads, retain_graph=retain_graph, inputs=inputs)


def _as_tuple(value) -> tuple:
    return (value,) if isinstance(value, tensor_type()[0]) else tuple(value)


def _roots(tensors: tuple, grad_tensors, create_graph: bool) -> tuple[list, list]:
    if create_graph:
        raise NotImplementedError("create_graph=True (higher-order gradients) is not supported: the tape runs its "
                                  "VJPs on arrays")
    if grad_tensors is None or isinstance(grad_tensors, tensor_type()[0]):
        grad_tensors = [grad_tensors] * len(tensors) if grad_tensors is None else [grad_tensors]
    if len(grad_tensors) != len(tensors):
        raise RuntimeError(f"got {len(grad_tensors)} gradients for {len(tensors)} tensors")
    roots, grads = [], []
    for index, (tensor, gradient) in enumerate(zip(tensors, grad_tensors)):
        edge = tensor._gradient_edge()
        if edge[0] is None:
            raise RuntimeError(f"element {index} of tensors does not require grad and does not have a grad_fn")
        roots.append(edge)
        grads.append(_root_gradient(tensor, gradient, index))
    return roots, grads


def _root_gradient(tensor, gradient, index: int):
    if gradient is None:
        if tensor.size != 1:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        return REGISTRY["ones_like"](tensor.array)  # a registry op: it records under make_fx (NOTE(make-fx))
    array = tensor_type()[1](gradient, dtype=tensor.dtype, device=tensor.device)
    if array.shape != tensor.shape:
        raise RuntimeError(f"Mismatch in shape: grad_output[{index}] has a shape of {array.shape} and "
                           f"output[{index}] has a shape of {tensor.shape}.")
    return array


def graph_nodes(*tensors) -> list[BackwardNode]:
    """The nodes behind `tensors`, in the order backward would run them (each after
    every node that sends it a gradient): the tape as compiled autograd sees it."""
    roots = [tensor._gradient_edge()[0] for tensor in tensors]
    return run_order([root for root in roots if root is not None])


def run_order(roots: list[BackwardNode], needed: set[BackwardNode] | None = None) -> list[BackwardNode]:
    """The nodes reachable from `roots` (only those in `needed`, when given) in the order
    `run` visits them: each after every node that sends it a gradient, then by _Ready."""
    dependencies = _count_dependencies(roots)
    ready = _Ready()
    for root in dict.fromkeys(roots):
        if not dependencies.get(root) and (needed is None or root in needed):
            ready.push(root)
    order = []
    while ready:
        node = ready.pop()
        order.append(node)
        for child, _ in node.next_functions:
            if child is not None and (needed is None or child in needed):
                dependencies[child] -= 1
                if dependencies[child] == 0:
                    ready.push(child)
    return order


def nodes_reaching(inputs: Sequence[tuple[BackwardNode, int]], roots) -> set[BackwardNode]:
    """The nodes grad() runs: those reachable from `roots` from which an input's node can be reached."""
    return _nodes_reaching({node for node, _ in inputs if node is not None}, roots)


def run(roots: Sequence[tuple[BackwardNode, int]], grads: Sequence, *, retain_graph: bool = False,
        inputs: Sequence[tuple[BackwardNode, int]] | None = None) -> list | None:
    """The reverse pass (NOTE(engine)); with `inputs`, the gradients that reach those
    edges (None where none does), and no `.grad` is touched."""
    dependencies = _count_dependencies([node for node, _ in roots])
    needed = None if inputs is None else nodes_reaching(inputs, roots)
    captured: dict[tuple[BackwardNode, int], object] = {}
    wanted = set() if inputs is None else set(inputs)
    buffers: dict[BackwardNode, list] = {}
    ready = _Ready()
    for (node, output_nr), gradient in zip(roots, grads):
        deliver(buffers, node, output_nr, gradient)
    for node in buffers:
        if not dependencies.get(node) and (needed is None or node in needed):
            ready.push(node)
    while ready:
        node = ready.pop()
        buffer = _run_pre_hooks(node, buffers.pop(node))
        for output_nr, gradient in enumerate(buffer):
            if (node, output_nr) in wanted:
                captured[(node, output_nr)] = gradient
        try:
            out_grads = _run_node(node, buffer, needed, retain_graph)
        except PartialBackward as partial:
            if inputs is None:
                _accumulate_before_error(node, partial.grads, buffers, dependencies, retain_graph)
            raise partial.error from None
        for (child, output_nr), gradient in zip(node.next_functions, out_grads):
            if child is None or (needed is not None and child not in needed):
                continue
            deliver(buffers, child, output_nr, gradient)
            dependencies[child] -= 1
            if dependencies[child] == 0:
                ready.push(child)
        buffer = out_grads = gradient = None  # no stale references: NOTE(gradient-stealing) in tensor.py
    if inputs is None:
        return None
    return [captured.get(edge) for edge in inputs]


def _accumulate_before_error(node: BackwardNode, grads: list, buffers: dict, dependencies: dict,
                             retain_graph: bool) -> None:
    """What the tape does before it raises partway through the nodes `node` stands for
    (PartialBackward): the leaves' accumulators those nodes made ready run, as they run
    before any other node."""
    for (child, output_nr), gradient in zip(node.next_functions, grads):
        if not isinstance(child, AccumulateGrad) or gradient is None:
            continue
        deliver(buffers, child, output_nr, gradient)
        dependencies[child] -= 1
        if dependencies[child] == 0:
            _run_node(child, _run_pre_hooks(child, buffers.pop(child)), None, retain_graph)


def _run_node(node: BackwardNode, buffer: list, needed: set | None, retain_graph: bool) -> list:
    """The gradients `node` sends on: none when none arrived, when it is an
    accumulator of grad() (which captures instead), or when nothing needed lies past it."""
    nothing = [None] * len(node.next_functions)
    if all(gradient is None for gradient in buffer):
        return nothing
    if needed is not None:
        if isinstance(node, AccumulateGrad) or not any(child in needed for child, _ in node.next_functions):
            return nothing
    out_grads = node.apply(buffer)
    for _, hook in list(node.post_hooks.values()):
        out_grads = call_post_hook(hook, out_grads, buffer)
    if not retain_graph:
        node.release()
    return out_grads


def _count_dependencies(roots: list[BackwardNode]) -> dict[BackwardNode, int]:
    """For every node reachable from `roots`, how many edges lead into it."""
    dependencies: dict[BackwardNode, int] = {}
    seen = set(roots)
    stack = list(seen)
    while stack:
        node = stack.pop()
        for child, _ in node.next_functions:
            if child is None:
                continue
            dependencies[child] = dependencies.get(child, 0) + 1
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return dependencies


def _nodes_reaching(targets: set[BackwardNode], roots) -> set[BackwardNode]:
    """The nodes reachable from `roots` from which some target can be reached."""
    order = []  # depth-first post-order: children before parents
    seen: set[BackwardNode] = set()
    for root, _ in roots:
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(root.next_functions))]
        while stack:
            node, children = stack[-1]
            for child, _ in children:
                if child is not None and child not in seen:
                    seen.add(child)
                    stack.append((child, iter(child.next_functions)))
                    break
            else:
                order.append(stack.pop()[0])
    needed: set[BackwardNode] = set()
    for node in order:
        if node in targets or any(child in needed for child, _ in node.next_functions):
            needed.add(node)
    return needed


def deliver(buffers: dict, node: BackwardNode, output_nr: int, gradient) -> None:
    """Add `gradient` into `node`'s buffer at `output_nr` (the buffer is made even for None)."""
    buffer = buffers.get(node)
    if buffer is None:
        buffer = buffers[node] = [None] * node.num_outputs
    if gradient is None:
        return
    buffer[output_nr] = gradient if buffer[output_nr] is None else buffer[output_nr] + gradient


def _run_pre_hooks(node: BackwardNode, buffer: list) -> list:
    """Each tensor hook on the gradient of its output; a value it returns replaces it."""
    for output_nr, hook in list(node.pre_hooks.values()):
        if buffer[output_nr] is not None:
            buffer[output_nr] = call_hook(hook, buffer[output_nr])
    return buffer


def call_hook(hook, gradient):
    """`hook(gradient)` on a tensor hook's terms: the gradient it returns (same shape, cast
    to the gradient's dtype), or `gradient` when it returns None."""
    return _replaced(hook, gradient, hook(tensor_type()[0](gradient)))


def _replaced(hook, gradient, result):
    if result is None:
        return gradient
    replaced = tensor_type()[1](result, dtype=gradient.dtype)
    if replaced.shape != np.shape(gradient):
        raise RuntimeError(f"hook {getattr(hook, '__name__', hook)!r} has changed the size of value "
                           f"from {np.shape(gradient)} to {replaced.shape}")
    return replaced


def call_post_hook(hook, grad_inputs: list, grad_outputs: list) -> list:
    """A node's post hook on the gradients it sends on and those it received: the
    gradients it returns (as call_hook checks them), or `grad_inputs` when it returns None."""
    tensor_class, as_array = tensor_type()
    result = hook(tuple(None if gradient is None else tensor_class(gradient) for gradient in grad_inputs),
                  tuple(None if gradient is None else tensor_class(gradient) for gradient in grad_outputs))
    if result is None:
        return grad_inputs
    result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
    if len(result) != len(grad_inputs):
        raise RuntimeError(f"hook {getattr(hook, '__name__', hook)!r} has returned an incorrect number of values "
                           f"(got {len(result)}, but expected {len(grad_inputs)})")
    return [None if new is None else as_array(new) if old is None else _replaced(hook, old, new)
            for old, new in zip(grad_inputs, result)]


class _Ready:
    """The nodes ready to run, the most recently created first (PyTorch's order:
    leaves' accumulators before everything, then by decreasing sequence number)."""

    def __init__(self):
        self._heap: list = []
        self._pushed = itertools.count()  # ties (accumulators) in the order they became ready

    def push(self, node: BackwardNode) -> None:
        heapq.heappush(self._heap, (-node.sequence_nr, next(self._pushed), node))

    def pop(self) -> BackwardNode:
        return heapq.heappop(self._heap)[2]

    def __bool__(self) -> bool:
        return bool(self._heap)
