"""Tracing a walked autograd graph into one GraphModule (NOTE(compiled-autograd)).

NOTE(compiled-autograd-trace): the walk (NOTE(autograd-walk)) is replayed as the tape
would run it, on traced arrays of a `TapeTracer` in "fake" mode (tracing.py,
NOTE(make-fx)): no value is computed and no hook runs while tracing, each registry op
a backward calls records itself. The graph's inputs are `hooks` (the walk's hooks, a
tuple), `nodes` (the walk's nodes, for opaque calls) — each dropped when unused — and
then one placeholder per lifted value, in the walk's order, with the sizes the cache
marked dynamic as symbols. Per node:

  * an op node calls its registry VJP on the lifted saved arrays;
  * a Function node calls the user's backward, its saved tensors the lifted arrays;
  * an AOT node runs its `backward_graph`'s printed code on traced arrays, so its ops
    are copied in; they are renamed `aot{N}_<name>` (N counts the AOT nodes inlined);
  * a leaf's AccumulateGrad, in backward(), computes its new `.grad`: the gradient
    cast to the leaf's dtype (a copy), or the current `.grad` plus it, a node named
    `accumulate_grad`; the graph returns these, and nothing is written while it runs;
  * each tensor hook is a `call_hook` node calling `hooks[i]` on the gradient (but
    retain_grad()'s, whose gradient the graph returns, to be kept after it ran), each
    post hook of a node a `call_post_hook` node on the gradients it sends on and those
    it received.

A node whose backward cannot be traced (a Python decision on a value, an array op that
is not a registry op, a saved value the tape refuses) is rolled back and becomes an
opaque `call_node` node that runs `nodes[i].apply` on the real gradients: the tape's
own code, so its result or error is the tape's. Its outputs are cast to the dtype of
the tensor each edge leads to.

NOTE(compiled-autograd-absent): an opaque node and a post hook are Python run by the
graph, and which of their gradients are None decides what the rest of the graph
computes (a leaf reached only through a None keeps `.grad` None, as on the tape). The
graph is traced for what its structure has shown so far (`absent`: per site,
("node", position) or ("post", hook index), a flag per gradient): by default an opaque
node gives a gradient on every edge and a post hook keeps the node's. At run time the
call checks what it got; where it differs, it raises GradientsChanged before anything
is written, the structure learns the new pattern and drops its graphs, and that
backward runs again on the tape (so the hooks and opaque nodes that ran before in the
graph run a second time); the next backward is traced with the pattern.
"""

from __future__ import annotations

import operator

import numpy as np

from ... import logs
from ...graph import GraphModule, TensorMeta
from ...ops import REGISTRY
from .. import engine
from ..aot import CompiledFunctionBackward
from ..function import FunctionCtx
from ..nodes import AccumulateGrad, OpNode, Saved, UnusableValue, at_path
from ..tensor import RetainGrad, Tensor
from ..tracing import TapeTracer, TracedArray
from .capture import NodeCall, Walk

_verbose_log = logs.get_logger("compiled_autograd_verbose")


class Traced:
    """A traced walk: the graph, and what running it needs from the walk."""

    def __init__(self, module: GraphModule, takes_hooks: bool, takes_nodes: bool, ran: list[int],
                 outputs: list[int], retained: list[int], lifted_nodes: list):
        self.module = module
        self.takes_hooks, self.takes_nodes = takes_hooks, takes_nodes
        self.ran = ran  # positions of the nodes that ran: released without retain_graph
        self.outputs = outputs  # backward(): the position of each leaf's accumulator the graph returns
        self.retained = retained  # the retain_grad hooks (indices into Walk.hooks) whose gradients follow
        self.lifted_nodes = lifted_nodes  # the placeholders of the lifted values


def trace(walk: Walk, dynamic: set[tuple[int, int]], absent: dict) -> Traced:
    """`walk` as one graph; `dynamic` holds (lifted value index, axis) pairs made symbolic,
    `absent` the gradients each site gives (NOTE(compiled-autograd-absent))."""
    return _Tracing(walk, dynamic, absent).run()


class GradientsChanged(Exception):
    """A site of the graph gave other gradients than it was traced for (NOTE(compiled-autograd-absent))."""

    def __init__(self, site: tuple, absent: tuple[bool, ...]):
        super().__init__(site, absent)
        self.site, self.absent = site, absent

    def __str__(self) -> str:
        kind, where = self.site
        what = f"NodeCall {where}" if kind == "node" else f"post hook {where}"
        return f"{what} gave gradients {['None' if gone else 'a value' for gone in self.absent]}"


class _Tracing:
    def __init__(self, walk: Walk, dynamic: set, absent: dict):
        self.walk, self.absent = walk, absent
        self.tracer = TapeTracer("fake")
        self.graph = graph = self.tracer.graph
        graph.name = "compiled_autograd"
        self.hooks_input = graph.placeholder("hooks", tuple)
        self.nodes_input = graph.placeholder("nodes", tuple)
        self.placeholders: list[list] = []
        index = 0
        for call in walk.calls:
            values = []
            for value in call.lifted:
                values.append(self._placeholder(call, value, {axis for k, axis in dynamic if k == index}))
                index += 1
            self.placeholders.append(values)
        self.ran: list[int] = []
        self.outputs: list[tuple[int, TracedArray]] = []
        self.retained: list[tuple[int, TracedArray]] = []
        self.aot_count = 0

    def _placeholder(self, call: NodeCall, value, dynamic_axes: set) -> TracedArray:
        name = "tangents" if call.node is None else "grad" if isinstance(call.node, AccumulateGrad) else "saved"
        if not hasattr(value, "shape"):
            return TracedArray(self.tracer, self.graph.placeholder(name, type(value)))
        meta = TensorMeta.of(value)
        env = self.graph.shape_env
        shape = tuple(env.create_symbol(size, f"{call.label}.shape[{axis}]") if axis in dynamic_axes and size >= 2
                      else size for axis, size in enumerate(meta.shape))
        traced = TracedArray(self.tracer, self.graph.placeholder(name, meta.with_(shape=shape)))
        self.tracer.placeholders.append(traced)
        return traced

    def run(self) -> Traced:
        walk, buffers, captured = self.walk, {}, {}
        for (node, output_nr), grad in zip(walk.roots, self.placeholders[0]):
            engine.deliver(buffers, node, output_nr, grad)
        wanted = set(walk.inputs or ())
        for call in walk.calls[1:]:
            node = call.node
            buffer = self._hooks(call, buffers.pop(node, None) or [None] * node.num_outputs)
            for output_nr, gradient in enumerate(buffer):
                if (node, output_nr) in wanted:
                    captured[(node, output_nr)] = gradient
            for (child, output_nr), gradient in zip(node.next_functions, self._node(call, buffer)):
                if child is not None and child in walk.position:
                    engine.deliver(buffers, child, output_nr, gradient)
        if walk.accumulate:
            result = [value.node for _, value in self.outputs]
        else:
            result = [None if captured.get(edge) is None else captured[edge].node for edge in walk.inputs]
        return self._finish(tuple(result + [value.node for _, value in self.retained]))

    def _finish(self, result: tuple) -> Traced:
        graph = self.graph
        graph.output(result)
        graph.eliminate_dead_code()
        takes = []
        for placeholder in (self.hooks_input, self.nodes_input):
            takes.append(bool(placeholder.users))
            if not placeholder.users:
                graph.erase(placeholder)
        lifted_nodes = [traced.node for values in self.placeholders for traced in values]
        return Traced(GraphModule(graph), takes[0], takes[1], self.ran, [position for position, _ in self.outputs],
                      [index for index, _ in self.retained], lifted_nodes)

    def _hooks(self, call: NodeCall, buffer: list) -> list:
        for output_nr, index in call.hooks:
            gradient = buffer[output_nr]
            if gradient is not None and isinstance(self.walk.hooks[index], RetainGrad):
                self.retained.append((index, gradient))  # a `.grad`: written once the graph returned
            elif gradient is not None:
                node = self.graph.call(call_hook, self.hooks_input, index, gradient.node)
                node.meta = gradient.meta
                buffer[output_nr] = TracedArray(self.tracer, node)
        return buffer

    def _node(self, call: NodeCall, buffer: list) -> list:
        """The gradients `call.node` sends on, as engine._run_node decides which run."""
        node, needed = call.node, self.walk.needed
        nothing = [None] * len(node.next_functions)
        if all(gradient is None for gradient in buffer):
            return nothing
        if needed is not None and (isinstance(node, AccumulateGrad)
                                   or not any(child in needed for child, _ in node.next_functions)):
            return nothing
        self.ran.append(call.position)
        gradients = self._backward(call, buffer)
        for index in call.post_hooks:
            gradients = self._post_hook(call, index, gradients, buffer)
        return gradients

    def _backward(self, call: NodeCall, buffer: list) -> list:
        node = call.node
        if isinstance(node, AccumulateGrad):
            return self._accumulate(call, buffer)
        if call.opaque:
            return self._opaque(call, buffer)
        mark = len(self.graph.nodes)
        try:
            return _TRACERS[type(node)](self, call, buffer)
        except Exception as error:  # NOTE(compiled-autograd-trace): what cannot be traced runs as on the tape
            for added in reversed(self.graph.nodes[mark:]):
                self.graph.erase(added)
            _verbose_log.debug("%s runs opaque: its backward cannot be traced (%s: %s)", call.label,
                               type(error).__name__, error)
            return self._opaque(call, buffer)

    def _post_hook(self, call: NodeCall, index: int, gradients: list, buffer: list) -> list:
        arguments = [None if gradient is None else gradient.node for gradient in (*gradients, *buffer)]
        absent = self.absent.get(("post", index))
        if absent is None:  # the default: the node's gradients kept
            node = self.graph.call(call_post_hook, self.hooks_input, index, len(gradients), *arguments)
            absent = tuple(gradient is None for gradient in gradients)
        else:
            node = self.graph.call(call_changing_post_hook, self.hooks_input, index, absent, len(gradients),
                                   *arguments)
        return self._items(node, call.node.next_functions, absent, gradients)

    def _opaque(self, call: NodeCall, buffer: list) -> list:
        arguments = [None if gradient is None else gradient.node for gradient in buffer]
        edges = call.node.next_functions
        absent = self.absent.get(("node", call.position), tuple(child is None for child, _ in edges))
        node = self.graph.call(call_node, self.nodes_input, call.position - 1, absent, *arguments)
        return self._items(node, edges, absent, [None] * len(edges))

    def _items(self, node, edges, absent: tuple, gradients: list) -> list:
        """The gradients a Python call site gives, those of `absent` None: each its
        gradient's meta, or the meta of the tensor its edge leads to."""
        results = []
        for position, ((child, output_nr), gone, gradient) in enumerate(zip(edges, absent, gradients)):
            if gone or (gradient is None and child is None):
                results.append(None)
                continue
            item = self.graph.call(operator.getitem, node, position)
            if gradient is None:
                shape, dtype, device = _edge_meta(child, output_nr)
                item.meta = TensorMeta(tuple(shape), np.dtype(dtype), device)
            else:
                item.meta = gradient.meta
            results.append(TracedArray(self.tracer, item))
        return results

    def _op(self, call: NodeCall, buffer: list) -> list:
        node: OpNode = call.node
        supply, owner = iter(self.placeholders[call.position]), node.name()
        args = tuple(_substituted(arg, supply, owner) for arg in node.args)
        kwargs = {key: _substituted(value, supply, owner) for key, value in node.kwargs.items()}
        out = _substituted(node.out, supply, owner)
        results = node.op.vjp(buffer[0], out, *args, **kwargs)
        return [at_path(results, path) for path in node.paths]

    def _function(self, call: NodeCall, buffer: list) -> list:
        ctx: FunctionCtx = call.node
        supply, original = iter(self.placeholders[call.position]), ctx._saved
        lifted = []
        for entry in original:
            usable = entry is not None and not isinstance(entry[1].unpack(ctx.name(), ""), UnusableValue)
            lifted.append((Tensor(next(supply)), entry[1]) if usable else entry)
        ctx._saved = lifted
        try:
            return ctx.apply(buffer)
        finally:
            ctx._saved = original

    def _aot(self, call: NodeCall, buffer: list) -> list:
        node: CompiledFunctionBackward = call.node
        supply = iter(self.placeholders[call.position])
        values = [next(supply) if hasattr(value, "shape") or type(value) in (int, float, bool, complex) else value
                  for value in node.saved_arguments()]
        tangents = node.tangents(buffer, self.tracer.empty)
        mark = len(self.graph.nodes)
        backward = node.backward_graph
        results = backward.forward(*values, *tangents)
        prefix = f"aot{self.aot_count}_"
        self.aot_count += 1
        for added in self.graph.nodes[mark:]:
            self.graph.rename(added, prefix + added.name)
            if added.loc is not None and added.loc.filename == backward.filename:  # the line it was copied from
                copied = backward.line_map.get(added.loc.lineno)
                added.loc = None if copied is None else copied.loc
        return node.input_grads(buffer, results)

    def _accumulate(self, call: NodeCall, buffer: list) -> list:
        variable = call.node.variable
        (gradient,) = buffer
        if variable._grad is not None:
            (current,) = self.placeholders[call.position]
            gradient = REGISTRY["add"](current, gradient)
        if variable._grad is None or gradient.dtype != variable.dtype:
            gradient = REGISTRY["astype"](gradient, variable.dtype)  # the first one a copy, as on the tape
        self.graph.rename(gradient.node, "accumulate_grad")
        self.outputs.append((call.position, gradient))
        return []


_TRACERS = {OpNode: _Tracing._op, FunctionCtx: _Tracing._function, CompiledFunctionBackward: _Tracing._aot}


def _substituted(value, supply, owner: str):
    """An op's saved argument for its VJP: the next lifted placeholder, or the unusable value."""
    if isinstance(value, Saved):
        array = value.unpack(owner, "")
        return array if isinstance(array, UnusableValue) else next(supply)
    if type(value) in (list, tuple):
        return type(value)(_substituted(item, supply, owner) for item in value)
    return value


def _edge_meta(node, output_nr: int) -> tuple:
    """(shape, dtype, device) of output `output_nr` of `node`: the tensor a gradient sent along that edge is for."""
    if isinstance(node, AccumulateGrad):
        variable = node.variable
        return variable.shape, variable.dtype, variable.device
    if isinstance(node, OpNode):
        return node.out.shape, node.out.dtype, "cpu" if node.out.array is None else TensorMeta.of(node.out.array).device
    if isinstance(node, FunctionCtx):
        return node._outputs[output_nr]
    if isinstance(node, CompiledFunctionBackward):
        shape, dtype = node.outputs[output_nr]
        return shape, dtype, "cpu"
    raise NotImplementedError(f"compiled autograd does not know the outputs of {type(node).__name__}")


# -- what the graph calls at run time ----------------------------------------------------
def call_hook(hooks: tuple, index: int, gradient):
    """Tensor hook `hooks[index]` on `gradient`, as the tape runs it (engine.call_hook)."""
    return engine.call_hook(hooks[index], gradient)


def call_post_hook(hooks: tuple, index: int, count: int, *grads) -> tuple:
    """Node post hook `hooks[index]` on the `count` gradients a node sends on and those it
    received (engine.call_post_hook), traced for a hook that keeps which gradients exist."""
    return _post_hook(hooks, index, tuple(grad is None for grad in grads[:count]), count, grads)


def call_changing_post_hook(hooks: tuple, index: int, absent: tuple, count: int, *grads) -> tuple:
    """call_post_hook, traced for a hook that gives the gradients `absent` says (NOTE(compiled-autograd-absent))."""
    return _post_hook(hooks, index, absent, count, grads)


def _post_hook(hooks: tuple, index: int, absent: tuple, count: int, grads: tuple) -> tuple:
    results = engine.call_post_hook(hooks[index], list(grads[:count]), list(grads[count:]))
    got = tuple(result is None for result in results)
    if got != absent:
        raise GradientsChanged(("post", index), got)
    return tuple(results)


def call_node(nodes: tuple, index: int, absent: tuple, *grads) -> tuple:
    """An opaque node's backward, `nodes[index].apply`, on the real gradients
    (NOTE(compiled-autograd-trace)): one gradient per edge, each in its tensor's dtype,
    None where `absent` says (NOTE(compiled-autograd-absent))."""
    node = nodes[index]
    results = node.apply(list(grads))
    got = tuple(child is None or value is None for value, (child, _) in zip(results, node.next_functions))
    if got != absent:
        raise GradientsChanged(("node", index + 1), got)
    return tuple(None if gone else value.astype(_edge_meta(child, output_nr)[1], copy=False)
                 for value, gone, (child, output_nr) in zip(results, got, node.next_functions))
