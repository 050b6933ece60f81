"""AOTAutograd: a captured graph differentiated ahead of time.

The joint graph (joint.py, NOTE(joint-graph)) is cut by a partitioner (partition.py,
NOTE(partitioners), NOTE(min-cut-cost)) into a forward and a backward graph, which the
caller's compilers compile; the runtime (runtime.py, NOTE(aot-runtime)) runs them with
one tape node per call (NOTE(aot-node)). Backends hand in their compilers: this package
imports nothing of frontend, codegen or backends.
"""

from .joint import Joint, JointUnsupported, build_joint
from .partition import PARTITIONERS, Partition, partition
from .runtime import AOTFunction, CompiledFunctionBackward, aot_function, tensor_outputs

__all__ = ["AOTFunction", "CompiledFunctionBackward", "Joint", "JointUnsupported", "PARTITIONERS", "Partition",
           "aot_function", "build_joint", "partition",
           "tensor_outputs"]
