"""The `eager` backend: run the graph's ops one by one, with NumPy or CuPy."""

from .registry import register_backend


@register_backend(tags=("debug",))
def eager(graph_module, example_inputs):
    """The graph module itself: each registry op computes through the array module of
    its arguments, so CuPy inputs run on the GPU with the same code."""
    return graph_module
