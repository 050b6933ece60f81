"""The `eager` backend: run the graph's ops one by one, with NumPy or CuPy."""

from ..graph import TensorMeta
from ..ops import Op
from ..ops.registry import computes_with_numpy
from .registry import register_backend


# NOTE(eager-straight-line): a graph whose example inputs compute with NumPy runs as one
# straight-line function calling each op's NumPy implementation (`Op.numpy_impl`: the
# ufunc itself for ufunc ops), with no per-op dispatch, so the backend adds little more
# than one Python call to NumPy's own work. The function checks that each array input
# has its example's exact type, and runs the graph module (which dispatches per op) for
# anything else: an autograd Tensor, a CuPy array.
@register_backend(tags=("debug",))
def eager(graph_module, example_inputs):
    """NumPy inputs: the graph as straight-line NumPy calls (NOTE(eager-straight-line)).
    Otherwise the graph module itself: each registry op computes through the array
    module of its arguments, so CuPy inputs run on the GPU with the same code, and
    pyjit.Tensor inputs record on the tape."""
    examples = list(example_inputs or ())
    placeholders = graph_module.graph.placeholders
    if graph_module.check_sizes or len(examples) != len(placeholders) or not computes_with_numpy(examples):
        return graph_module
    input_types = [type(example) if isinstance(node.meta, TensorMeta) else None
                   for node, example in zip(placeholders, examples)]
    return graph_module.straight_line(_numpy_target, input_types)


def _numpy_target(target):
    return target.numpy_impl if isinstance(target, Op) else target
