"""The IR: graphs of calls on array values, their metas, and their Python form."""

from .graph import Graph
from .meta import TensorMeta, broadcast_shapes
from .module import GraphModule
from .node import Node, map_nodes
from .symbolic import ShapeEnv, ShapeGuard, SymInt

__all__ = ["Graph", "GraphModule", "Node", "ShapeEnv", "ShapeGuard", "SymInt", "TensorMeta",
           "broadcast_shapes", "map_nodes"]
