"""The `aot_eager` backend: the forward and backward graphs of AOTAutograd, run eagerly."""

from .. import config
from ..autograd import Tensor
from ..autograd.aot import aot_function
from .eager import eager
from .registry import register_backend


@register_backend(tags=("debug",))
def aot_eager(graph_module, example_inputs):
    """With inputs that require grad, the graph's joint graph is cut into a forward and
    a backward graph (NOTE(partitioners); `pyjit.config.aot_partitioner`, "default"
    unless set), each run by the eager backend, with one tape node per call
    (NOTE(aot-node)); otherwise the graph module itself. It checks AOTAutograd apart
    from code generation."""
    if not any(isinstance(example, Tensor) for example in example_inputs or ()):
        return graph_module
    return aot_function(graph_module, example_inputs, fw_compiler=eager, bw_compiler=eager,
                        partitioner=config.aot_partitioner or "default", memory_budget=config.aot_memory_budget)
