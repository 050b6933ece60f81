"""Running a graph ahead-of-time differentiated: compiled forward, one tape node, compiled backward.

NOTE(aot-runtime): `aot_function(graph_module, example_inputs, fw_compiler=…,
bw_compiler=…)` returns a callable that runs the graph on pyjit.Tensor (and array)
arguments. When grad mode is on and an argument requires grad, it runs the compiled
forward on the arguments' arrays, wraps the outputs as Tensors and gives the
differentiable ones one shared grad_fn, a `CompiledFunctionBackward` node
(NOTE(aot-node)), which runs the compiled backward. Otherwise it runs `inference`
(the backend's graph without autograd). Each pattern of requires_grad among the
arguments gets its own joint graph and partition, made on first use; a graph the joint
graph cannot model (NOTE(joint-graph)) runs its ops on the tape, counted in
counters["aot"]["tape_fallbacks"], which is always correct.

Outputs that are views of inputs (chains of view ops from a placeholder) are not
computed by the compiled forward: they are rebuilt at run time by running their view
ops on the input tensors, so they share memory, version counter and `_base` with the
input and carry the view's own grad_fn, exactly as without the compiler.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ... import logs
from ...graph import GraphModule, Node
from ...utils import capture_disabled, counters
from ..device import array_module
from ..grad_mode import is_grad_enabled
from ..nodes import (FREED_MESSAGE, AccumulateGrad, BackwardNode, PartialBackward, Saved, UnusableValue,
                     backward_name, modified_message)
from ..tensor import Tensor, wrap_array
from .joint import JointUnsupported, build_joint, requiring_grad
from .partition import extract, partition, saved_bytes

_aot_log = logs.get_logger("aot_graphs")


def aot_function(graph_module: GraphModule, example_inputs, *, fw_compiler: Callable, bw_compiler: Callable,
                 inference: Callable | None = None, partitioner: str = "default", memory_budget: float = 1.0):
    """`graph_module` differentiated ahead of time (NOTE(aot-runtime)); the compilers
    are backends' `fn(graph_module, example_inputs)` on arrays (the backward's example
    inputs are None: no values exist before the first backward)."""
    return AOTFunction(graph_module, list(example_inputs or ()), fw_compiler, bw_compiler,
                       inference if inference is not None else graph_module, partitioner, memory_budget)


class AOTFunction:
    def __init__(self, graph_module, examples, fw_compiler, bw_compiler, inference, partitioner, memory_budget):
        self.graph_module = graph_module
        self.compilers = (fw_compiler, bw_compiler)
        self.inference = inference
        self.partitioner, self.memory_budget = partitioner, memory_budget
        self.compiled: dict[tuple, _Compiled | None] = {}
        mask = _mask(examples)
        if is_grad_enabled() and any(mask):
            self._compiled_for(mask, examples)

    def __call__(self, *args):
        if not is_grad_enabled():
            return self.inference(*args)
        mask = _mask(args)
        if not any(mask):
            return self.inference(*args)
        compiled = self.compiled[mask] if mask in self.compiled else self._compiled_for(mask, args)
        return self.graph_module(*args) if compiled is None else compiled(args)

    def _compiled_for(self, mask: tuple, examples) -> _Compiled | None:
        try:
            with capture_disabled():  # NOTE(compile-without-capture)
                compiled = _Compiled.make(self, mask, examples)
        except JointUnsupported as error:
            counters["aot"]["tape_fallbacks"] += 1
            _aot_log.debug("graph %s runs on the tape: %s", self.graph_module.graph.name, error)
            compiled = None
        self.compiled[mask] = compiled
        return compiled


def _mask(args) -> tuple:
    return tuple(isinstance(arg, Tensor) and arg._requires_grad for arg in args)


class _Compiled:
    """One requires_grad pattern: forward and backward graphs, compiled."""

    @classmethod
    def make(cls, owner: AOTFunction, mask: tuple, examples) -> _Compiled:
        graph = owner.graph_module.graph
        output = graph.output_node.args[0]
        outputs = [output] if isinstance(output, Node) else list(output)
        aliases = [index for index, value in enumerate(outputs) if _view_of_input(value)]
        kept = [value for index, value in enumerate(outputs) if index not in aliases]
        self = cls()
        self.single = isinstance(output, Node)
        self.aliases = aliases
        self.views = GraphModule(extract("views", graph, graph.placeholders,
                                         tuple(outputs[index] for index in aliases))) if aliases else None
        forward = extract(graph.name, graph, graph.placeholders, tuple(kept), impure=True)
        joint = build_joint(forward, list(mask))
        self.forward_graph, self.mask, self.tangent_modules = forward, mask, {}
        cut = partition(joint, owner.partitioner, owner.memory_budget)
        self.joint, self.partition = joint, cut
        self.forward_module, self.backward_module = GraphModule(cut.forward), GraphModule(cut.backward)
        arrays = [arg._array if isinstance(arg, Tensor) else arg for arg in examples]
        fw_compiler, bw_compiler = owner.compilers
        self.forward = fw_compiler(self.forward_module, arrays)
        self.backward = bw_compiler(self.backward_module, None)
        self.tensor_outputs = tensor_outputs(graph, examples, kept)
        self.viewed, self.view_checks, self.viewed_outputs = _recorded_views(graph, mask, kept)
        self.primal_index = {node: index for index, node in enumerate(joint.primals)}
        # NOTE(unreached-inputs): per primal, the differentiable outputs computed from it.
        outputs = [value for value, differentiable in zip(joint.outputs, joint.differentiable) if differentiable]
        self.reaching = [[index for index, value in enumerate(outputs) if value.depends_on({primal})]
                         for primal in joint.primals]
        self.cones = [joint.backward_path(value) for value in outputs]  # NOTE(partial-release)
        self.freeing = [{call for call in cone if joint.vjp_calls[call].reads} for cone in self.cones]
        output_index = {}
        for index, value in enumerate(joint.outputs):
            if isinstance(value, Node):
                output_index.setdefault(value, index)
        self.output_index = output_index
        order = {node: index for index, node in enumerate(joint.graph.nodes)}
        self.reads = [self._reads(sorted(cone, key=order.__getitem__, reverse=True)) for cone in self.cones]
        self.watched = sorted({where for reads in self.reads for _, _, where in reads})
        counters["aot"]["graphs"] += 1
        _log(owner.graph_module.graph.name, self)
        return self

    def tangent_module(self, seeded: frozenset, skipped: int, targets: tuple) -> GraphModule | None:
        """The gradients of primals `targets` from the tangents alone, flowing back from
        the outputs `seeded` through the VJPs of all calls but the first `skipped`; None
        where they would read a forward value (NOTE(tape-order))."""
        key = (seeded, skipped, targets)
        if key not in self.tangent_modules:
            try:
                with capture_disabled():  # NOTE(compile-without-capture)
                    joint = build_joint(self.forward_graph, list(self.mask), set(seeded), skipped)
                    grads = tuple(joint.grads[index] for index in targets)  # None: no path from `seeded`
                    module = GraphModule(extract("tangents", joint.graph, joint.tangents, grads))
            except (JointUnsupported, AssertionError):  # it reads a primal: the tape needs saved values
                module = None
            self.tangent_modules[key] = module
        return self.tangent_modules[key]

    def _reads(self, calls: list[Node]) -> list[tuple[str, str, tuple]]:
        """(node name, label, input or output) for each graph input and output that the
        VJPs of `calls` read, in the order the tape runs them (NOTE(vjp-reads))."""
        reads = []
        for call in calls:
            for value in self.joint.vjp_calls[call].reads:
                if value in self.primal_index:
                    where = ("input", self.primal_index[value])
                elif value in self.output_index:
                    where = ("output", self.output_index[value])
                else:
                    continue
                reads.append((backward_name(call.target.name), _label(call, value), where))
        return reads

    def __call__(self, args: tuple):
        arrays = [arg._array if isinstance(arg, Tensor) else arg for arg in args]
        results = [_array(value) for value in self.forward(*arrays)]
        self._mark_views(args, arrays)
        joint = self.joint
        count = len(joint.outputs)
        node = CompiledFunctionBackward(self, args)
        wrapped, tangent = [], 0
        for value, differentiable, tensor in zip(results[:count], joint.differentiable, self.tensor_outputs):
            if differentiable:
                out = wrap_array(value, True)
                out.grad_fn, out._output_nr = node, tangent
                node.outputs.append((value.shape, value.dtype))
                tangent += 1
                wrapped.append(out)
            else:
                wrapped.append(wrap_array(value) if tensor else value)
        for index in self.viewed_outputs:
            wrapped[index]._version_counter.recorded_views = True
        node.keep(self._saved(args, results, wrapped))
        node.watch({where: (args if where[0] == "input" else wrapped)[where[1]] for where in self.watched})
        if self.views is not None:
            for index, view in zip(self.aliases, self.views(*args)):
                wrapped.insert(index, view)
        return wrapped[0] if self.single else tuple(wrapped)

    def _mark_views(self, args: tuple, arrays: list) -> None:
        """NOTE(recorded-views): as the tape's view ops would have flagged these inputs."""
        for position in self.viewed:
            args[position]._version_counter.recorded_views = True
        for position, module in self.view_checks:
            if not args[position]._version_counter.recorded_views and any(
                    array_module(arrays[position]).may_share_memory(view, arrays[position])
                    for view in module(*arrays)):
                args[position]._version_counter.recorded_views = True

    def _saved(self, args: tuple, results: tuple, wrapped: list) -> list[tuple[str, object]]:
        """(label, Saved or a Python value) for each saved value, in the backward's order:
        a primal or an output keeps its tensor's version counter (NOTE(saved-values))."""
        slots, extra = [], len(self.joint.outputs)
        for node in self.partition.saved:
            if node in self.primal_index:
                arg = args[self.primal_index[node]]
                if isinstance(arg, Tensor):
                    slots.append((f"input {self.primal_index[node]}", Saved(arg._array, arg._version_counter)))
                elif hasattr(arg, "shape"):
                    slots.append((f"input {self.primal_index[node]}", Saved(arg.copy(), None)))
                else:
                    slots.append((f"input {self.primal_index[node]}", arg))
            elif node in self.output_index:
                index = self.output_index[node]
                out = wrapped[index]
                counter = out._version_counter if isinstance(out, Tensor) else None
                slots.append((f"output {index}", Saved(results[index], counter)))
            else:
                slots.append((f"saved {node.name}", Saved(results[extra], None)))
                extra += 1
        return slots


# NOTE(recorded-views): on the tape, a view op whose result requires grad flags the
# memory it shares (its version counter's `recorded_views`), and a later in-place op on
# that memory, or on the view, raises (NOTE(inplace) in tensor.py): pyjit does not rebase
# views. A view taken inside a compiled graph leaves no tape node, so the compiled call
# flags what the tape's view ops would have: an input that requires grad and that a
# chain of view ops in the graph starts from, and the outputs that are such a chain's
# links or the intermediate it starts from. Transposes, broadcasts, diagonals and basic
# indexing that keeps an axis always share their operand's memory; a chain from an
# input with another link (a reshape, which copies what it cannot view) is run on the
# arrays at each call and flags the input only where it shares its memory, as the tape's
# dispatch checks. Such a chain from an intermediate flags no output (the compiled
# forward's layouts need not be the tape's).
_ALWAYS_VIEWS = frozenset({"transpose", "broadcast_to", "diagonal"})


def _recorded_views(graph, mask: tuple, outputs: list) -> tuple[list[int], list[tuple[int, GraphModule]], list[int]]:
    """(inputs always flagged, [(input, module computing the views to check)], outputs
    flagged: indices among `outputs`) (NOTE(recorded-views))."""
    positions = {node: index for index, node in enumerate(graph.placeholders)}
    recorded = requiring_grad(graph, list(mask))  # what the tape would record, view ops included
    always, checked, linked = set(), {}, set()
    for node in graph.calls():
        if getattr(node.target, "category", "") != "view" or node not in recorded:
            continue
        chain, static = [node], _always_a_view(node)
        while isinstance(chain[-1].args[0], Node) and chain[-1].args[0].kind == "call" \
                and getattr(chain[-1].args[0].target, "category", "") == "view":
            chain.append(chain[-1].args[0])
            static = static and _always_a_view(chain[-1])
        root = chain[-1].args[0]
        if not isinstance(root, Node):
            continue
        if root.kind == "call" and static:
            linked.update((*chain, root))
        elif root.kind != "placeholder" or not mask[positions[root]]:
            continue
        elif static:
            always.add(positions[root])
        else:
            checked.setdefault(positions[root], []).append(node)
    checks = [(position, GraphModule(extract("views", graph, graph.placeholders, tuple(nodes))))
              for position, nodes in sorted(checked.items()) if position not in always]
    flagged = [index for index, value in enumerate(outputs) if isinstance(value, Node) and value in linked]
    return sorted(always), checks, flagged


def _always_a_view(node: Node) -> bool:
    name = getattr(node.target, "name", None)
    return name in _ALWAYS_VIEWS or (name == "getitem" and node.meta.ndim > 0)


def _view_of_input(value) -> bool:
    """Whether `value` is an input seen through view ops only (NOTE(aot-runtime))."""
    if not isinstance(value, Node) or value.kind != "call":
        return False
    while isinstance(value, Node) and value.kind == "call" and getattr(value.target, "category", "") == "view":
        value = value.args[0]
    return isinstance(value, Node) and value.kind == "placeholder"


def tensor_outputs(graph, examples, values) -> list[bool]:
    """For each of `values` (nodes of `graph`, or constants), whether it is computed from
    an input whose example is a Tensor, or from a random draw (an impure call: pyjit's
    random factories, NOTE(random-factories) in pyjit/frontend/allowed.py, make Tensors
    whatever their inputs): the ops then make it a Tensor."""
    tensors = {node for node, example in zip(graph.placeholders, examples) if isinstance(example, Tensor)}
    tensors |= {node for node in graph.calls() if not getattr(node.target, "pure", True)}
    return [isinstance(value, Node) and value.depends_on(tensors) for value in values]


# NOTE(aot-node): the one tape node of a compiled graph's call (NOTE(tape-nodes)):
# kind "aot", named CompiledFunctionBackward as in PyTorch; one output per
# differentiable output of the graph; one edge per tensor input of the graph, in
# argument order ((None, 0) for those that do not require grad, and for those no
# gradient flows to through the graph: on the tape no node of the graph's ops leads to
# them, so a leaf's accumulator does not wait for this node, NOTE(tape-order));
# `saved_values()` the partition's saved values, each a Saved slot carrying its tensor's
# version, so release after backward, a second backward and in-place changes give the
# tape's errors; and `backward_graph`, the GraphModule of the backward, for compiled
# autograd to inline.
# An output that received no gradient gets zeros (the compiled backward takes every
# tangent).
# NOTE(tape-order): the node stands for the tape nodes of the graph's ops, which the tape
# would run one by one, the most recently created first, with a leaf's accumulator
# running as soon as every edge into it has delivered. Two consequences the node keeps:
#   * a backward whose path reads no saved value works without them, as on the tape,
#     when they were freed or modified: the gradients then come from a backward graph
#     computed from the tangents alone (`tangent_module`, built on first need; a path
#     that would read a forward value raises the tape's error as before);
#   * where a backward raises (a second one, NOTE(partial-release), or one reading a
#     value modified in place, NOTE(vjp-reads)), the tape raises at the last-created op
#     on the path whose saved values are gone or modified, after the ops above it
#     ran: a leaf all of whose readers on the path lie above that op has received its
#     gradient by then. The node raises PartialBackward with those leaves' gradients
#     (computed from the tangents through the ops above alone), and the engine runs
#     their accumulators before raising the tape's error. Where the ops above read
#     saved values, nothing reaches the leaves (the error is the tape's, `.grad` may
#     differ from the tape's partial sums).
class CompiledFunctionBackward(BackwardNode):
    kind = "aot"

    def __init__(self, compiled: _Compiled, args: tuple):
        grads = compiled.joint.grads
        edges = tuple(arg._gradient_edge() if grads[index] is not None else (None, 0)
                      for index, arg in enumerate(args) if isinstance(arg, Tensor))
        super().__init__(edges, num_outputs=0)
        self.compiled = compiled
        self.outputs: list[tuple] = []  # (shape, dtype) of each differentiable output
        self._slots: list[tuple[str, object]] = []
        self._tensor_positions = [index for index, arg in enumerate(args) if isinstance(arg, Tensor)]
        self._arrived: set[int] = set()  # NOTE(partial-release)
        self._consumed: set[int] = set()
        self._versions: dict[tuple, tuple] = {}  # NOTE(vjp-reads)

    @property
    def backward_graph(self) -> GraphModule:
        return self.compiled.backward_module

    def keep(self, slots: list) -> None:
        self._slots = slots
        self.num_outputs = len(self.outputs)

    def watch(self, tensors: dict) -> None:
        """Remember the version of each graph input and output a VJP reads (NOTE(vjp-reads))."""
        self._versions = {where: (tensor._version_counter, tensor._version_counter.value, tensor.shape,
                                  tensor.dtype) for where, tensor in tensors.items() if isinstance(tensor, Tensor)}

    def name(self) -> str:
        return "CompiledFunctionBackward"

    def saved_values(self) -> list[tuple[str, object]]:
        owner = self.name()
        return [(label, slot.unpack(owner, label)) for label, slot in self._slots if isinstance(slot, Saved)]

    def apply(self, grads: list) -> list:
        arrived = {index for index, grad in enumerate(grads) if grad is not None}
        tangents = self.tangents(grads, lambda shape, dtype: _zeros(shape, dtype, grads))
        try:
            self.arrive(arrived)
        except RuntimeError as error:
            raise self._partial(error, arrived, tangents) from None
        try:
            saved = self.saved_arguments()
        except RuntimeError:
            # NOTE(tape-order): freed or modified saved values the path may not read.
            targets = tuple(index for index, grad in enumerate(self.compiled.joint.grads) if grad is not None)
            module = self.compiled.tangent_module(frozenset(arrived), 0, targets)
            if module is None:
                raise
            results = module(*tangents)
        else:
            results = self.compiled.backward(*saved, *tangents)
        return self.input_grads(grads, results)

    def _partial(self, error: RuntimeError, arrived: set, tangents: list) -> Exception:
        """NOTE(tape-order): the tape's error where a backward reaches an op whose saved
        values an earlier one freed, or that reads a value modified in place, carrying
        what the tape sends to leaves before it reaches that op."""
        compiled = self.compiled
        order = {node: index for index, node in enumerate(compiled.joint.forward_calls)}
        path = set().union(*(compiled.cones[index] for index in arrived))
        if str(error) == FREED_MESSAGE:
            failing_calls = path & set().union(*(compiled.freeing[index] for index in self._consumed))
        else:
            failing_calls = {call for call in path if self._reads_modified(call)}
        if not failing_calls:
            return error
        failing = max(order[call] for call in failing_calls)
        primals = compiled.joint.primals
        leaves = []
        for position, (edge, index) in enumerate(zip(self.next_functions, self._tensor_positions)):
            readers = [order[call] for call in path if primals[index] in call.inputs()]
            if isinstance(edge[0], AccumulateGrad) and readers and min(readers) > failing:
                leaves.append((position, index))
        module = compiled.tangent_module(frozenset(arrived), failing + 1, tuple(index for _, index in leaves))
        if not leaves or module is None:
            return error
        results = module(*tangents)
        grads = [None] * len(self.next_functions)
        for (position, _), result in zip(leaves, results):
            grads[position] = None if result is None else _array(result)
        return PartialBackward(error, grads)

    # The steps of `apply`, which compiled autograd also takes when it inlines backward_graph.
    def arrive(self, arrived: set[int]) -> None:
        """Gradients arrive at outputs `arrived`: the tape's error if one's path was used up
        (NOTE(partial-release)) or reads a value modified in place (NOTE(vjp-reads))."""
        self._arrived = arrived
        freeing = self.compiled.freeing
        used_up = set().union(*(freeing[index] for index in self._consumed))
        if any(freeing[index] & used_up for index in arrived):
            raise RuntimeError(FREED_MESSAGE)
        self._check_versions()

    def saved_arguments(self) -> list:
        """The backward graph's saved-value arguments; the tape's error for one released or modified."""
        owner = self.name()
        values = [slot.unpack(owner, label) if isinstance(slot, Saved) else slot for label, slot in self._slots]
        for value in values:
            if isinstance(value, UnusableValue):
                raise RuntimeError(value.message)
        return values

    def tangents(self, grads: list, zeros) -> list:
        """The backward graph's tangent arguments: `zeros(shape, dtype)` where no gradient arrived."""
        return [grad if grad is not None else zeros(shape, dtype) for grad, (shape, dtype) in zip(grads, self.outputs)]

    def input_grads(self, grads: list, results) -> list:
        """The gradients for next_functions from what the backward graph returned."""
        results = iter((results,) if not isinstance(results, tuple) else results)
        joint, arrived = self.compiled.joint, [grad is not None for grad in grads]
        # NOTE(unreached-inputs): as on the tape, an input gets no gradient (None, not
        # zeros) when no output computed from it received one: its tape node never runs.
        by_primal = [_array(next(results)) if grad is not None else None for grad in joint.grads]
        by_primal = [gradient if any(arrived[index] for index in reaching) else None
                     for gradient, reaching in zip(by_primal, self.compiled.reaching)]
        return [by_primal[position] for position in self._tensor_positions]

    def _reads_modified(self, call: Node) -> bool:
        """Whether the VJP of `call` reads a graph input or output modified since the call."""
        for value in self.compiled.joint.vjp_calls[call].reads:
            if value in self.compiled.primal_index:
                where = ("input", self.compiled.primal_index[value])
            elif value in self.compiled.output_index:
                where = ("output", self.compiled.output_index[value])
            else:
                continue
            watched = self._versions.get(where)
            if watched is not None and watched[0].value != watched[1]:
                return True
        return False

    def _check_versions(self) -> None:
        """The tape's error where a VJP on the arrived gradients' path reads a graph input
        or output modified in place since the call (NOTE(vjp-reads))."""
        for index in sorted(self._arrived):
            for owner, label, where in self.compiled.reads[index]:
                watched = self._versions.get(where)
                if watched is not None and watched[0].value != watched[1]:
                    counter, version, shape, dtype = watched
                    raise RuntimeError(modified_message(dtype, shape, label, owner, counter.value, version))

    def release(self) -> None:
        """NOTE(partial-release): one node stands for what the tape records as a node per
        op, so independent outputs (a loss and a value returned beside it) share it. A
        backward without retain_graph frees the saved values of the tape nodes it went
        through, and only a node whose VJP reads one raises when gone through again (an
        add's does not). So here a gradient raises the tape's error when its path runs
        through an op that an earlier backward's path ran through and whose VJP reads a
        saved value (NOTE(vjp-reads)). The saved values are freed once every output has
        received a gradient; a later backward whose path reads none of them runs from
        the tangents alone (NOTE(tape-order))."""
        self._consumed |= self._arrived
        if len(self._consumed) < self.num_outputs:
            return
        for _, slot in self._slots:
            if isinstance(slot, Saved):
                slot.release()


def _array(value):
    """A forward output as the array a tensor holds (as the tape's dispatch makes it):
    NumPy computes 0-d results as scalars, and what a random draw in the graph computes
    is a Tensor (NOTE(random-factories) in pyjit/frontend/allowed.py)."""
    if isinstance(value, Tensor):
        value = value._array
    return np.asarray(value) if isinstance(value, np.generic) else value


def _label(call: Node, value: Node) -> str:
    """How the tape names `value` among what `call`'s node saved."""
    if value is call:
        return "output 0"
    for position, arg in enumerate(call.args):
        if arg is value or (type(arg) in (list, tuple) and any(item is value for item in arg)):
            return f"input {position}"
    return "input"


def _zeros(shape, dtype, grads: list):
    arrived = next((grad for grad in grads if grad is not None), None)
    return (array_module(arrived) if arrived is not None else np).zeros(shape, dtype)


def _log(name: str, compiled: _Compiled) -> None:
    if not logs.enabled("aot_graphs"):
        return
    cut = compiled.partition
    saved = "\n".join(f"  {node.name}: {node.meta} ({_bytes_text(node)})" for node in cut.saved) or "  (none)"
    _aot_log.debug("graph %s, joint graph:\n%s\nforward graph:\n%s\nbackward graph:\n%s\nsaved values, %d bytes:\n%s",
                   name, GraphModule(compiled.joint.graph).code, compiled.forward_module.code,
                   compiled.backward_module.code, cut.saved_bytes, saved)


def _bytes_text(node: Node) -> str:
    return f"{saved_bytes([node])} bytes"
