"""The `aot_eager` backends: the forward and backward graphs of AOTAutograd, run eagerly."""

from .. import config
from ..autograd import Tensor
from ..autograd.aot import aot_function
from .eager import eager
from .registry import register_backend


def _aot_eager(graph_module, example_inputs, partitioner: str):
    if not any(isinstance(example, Tensor) for example in example_inputs or ()):
        return graph_module
    return aot_function(graph_module, example_inputs, fw_compiler=eager, bw_compiler=eager,
                        partitioner=config.aot_partitioner or partitioner, memory_budget=config.aot_memory_budget)


@register_backend(tags=("debug",))
def aot_eager(graph_module, example_inputs):
    """With inputs that require grad, the graph's joint graph is cut into a forward and
    a backward graph by the min-cut partitioner, as torch's `aot_eager` does
    (NOTE(partitioners); `pyjit.config.aot_partitioner` overrides it), each run by the
    eager backend, with one tape node per call (NOTE(aot-node)); otherwise the graph
    module itself. It checks AOTAutograd apart from code generation."""
    return _aot_eager(graph_module, example_inputs, "min_cut")


@register_backend(tags=("debug",))
def aot_eager_default_partitioner(graph_module, example_inputs):
    """`aot_eager` with the default partitioner (it saves what the backward reads), as
    torch's backend of that name (`pyjit.config.aot_partitioner` overrides it)."""
    return _aot_eager(graph_module, example_inputs, "default")
