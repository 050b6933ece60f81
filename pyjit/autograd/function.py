"""`autograd.Function`: an operation whose forward and backward the user writes.

Both of PyTorch's styles work:

    class Cos(Function):                     class Cos(Function):
        @staticmethod                            @staticmethod
        def forward(x):                          def forward(ctx, x):
            return x.cos()                           ctx.save_for_backward(x)
        @staticmethod                                return x.cos()
        def setup_context(ctx, inputs, output):  @staticmethod
            ctx.save_for_backward(inputs[0])     def backward(ctx, grad):
        @staticmethod                                (x,) = ctx.saved_tensors
        def backward(ctx, grad):                     return -grad * x.sin()
            (x,) = ctx.saved_tensors
            return -grad * x.sin()

`Cos.apply(x)` runs forward without recording (grad mode off), then, when grad mode
is on and an input tensor requires grad, makes the outputs' grad_fn the context:
`ctx` *is* the node (kind "function", named CosBackward), as in PyTorch. backward runs
with grad mode off on tensors; it returns one gradient per forward argument (None for
non-tensors); a gradient is summed down to its input's shape when it broadcasts to it,
and cast to its dtype.
"""

from __future__ import annotations

import numpy as np

from ..ops import REGISTRY
from .grad_mode import is_grad_enabled, no_grad
from .nodes import BackwardNode, Saved, UnusableValue
from .tensor import Tensor, as_array


class FunctionCtx(BackwardNode):
    """The context of one Function.apply, and the node of its backward."""

    kind = "function"

    def __init__(self, function: type, args: tuple):
        super().__init__(())
        self._function = function
        self._inputs = [(index, arg.shape, arg.dtype, arg.device) for index, arg in enumerate(args)
                        if isinstance(arg, Tensor)]
        self._num_args = len(args)
        self.needs_input_grad = tuple(isinstance(arg, Tensor) and arg.requires_grad for arg in args)
        self._saved: list[tuple[Tensor, Saved] | None] = []
        self._non_differentiable: set[int] = set()
        self._outputs: list = []  # (shape, dtype, device) of each output
        self.materialize_grads = True

    # -- what forward and setup_context call -------------------------------------------
    def save_for_backward(self, *tensors) -> None:
        """Keep these tensors (or Nones) for backward, where `saved_tensors` gives them back."""
        for tensor in tensors:
            if tensor is not None and not isinstance(tensor, Tensor):
                raise TypeError(f"save_for_backward can only save tensors (or None), not {type(tensor).__name__}")
        self._saved = [None if tensor is None else (tensor, Saved(tensor.array, tensor._version_counter))
                       for tensor in tensors]

    @property
    def saved_tensors(self) -> tuple:
        result = []
        for entry in self._saved:
            if entry is None:
                result.append(None)
                continue
            tensor, saved = entry
            value = saved.unpack(self.name(), "a saved tensor")
            if isinstance(value, UnusableValue):
                raise RuntimeError(value.message)
            result.append(tensor)
        return tuple(result)

    def mark_non_differentiable(self, *outputs) -> None:
        """These outputs get no grad_fn and do not require grad (indices, masks)."""
        self._non_differentiable.update(id(output) for output in outputs)

    def set_materialize_grads(self, value: bool) -> None:
        """With False, backward gets None (not zeros) for outputs that received no gradient."""
        self.materialize_grads = value

    def mark_dirty(self, *tensors) -> None:
        raise NotImplementedError("pyjit's autograd.Function does not support in-place forwards (mark_dirty)")

    # -- the node ----------------------------------------------------------------------
    def name(self) -> str:
        return f"{self._function.__name__}Backward"

    def apply(self, grads: list) -> list:
        with no_grad():
            results = self._function.backward(self, *self._grad_outputs(grads))
        results = results if isinstance(results, tuple) else (results,)
        if len(results) < self._num_args or any(value is not None for value in results[self._num_args:]):
            raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients (expected "
                               f"{self._num_args}, got {len(results)})")
        tensor_positions = {index for index, *_ in self._inputs}
        for index, value in enumerate(results[:self._num_args]):
            if value is not None and index not in tensor_positions:
                raise RuntimeError(f"function {self.name()} returned a gradient different than None at position "
                                   f"{index}, but the corresponding forward input was not a Tensor")
        return [self._input_grad(results[index], index, shape, dtype, device)
                for index, shape, dtype, device in self._inputs]

    def _grad_outputs(self, grads: list) -> list:
        values = []
        for gradient, meta in zip(grads, self._outputs):
            if gradient is not None:
                values.append(Tensor(gradient))
            elif meta is not None and self.materialize_grads:
                shape, dtype, device = meta
                values.append(Tensor(as_array(np.zeros(shape, dtype), device=device)))
            else:
                values.append(None)
        return values

    def _input_grad(self, value, index: int, shape: tuple, dtype, device):
        if value is None:
            return None
        array = as_array(value, device=device)
        if array.shape != shape:
            try:
                np.broadcast_shapes(shape, array.shape)
                array = REGISTRY["sum_to_shape"](array, shape)
            except ValueError:
                array = None
            if array is None or array.shape != shape:
                raise RuntimeError(f"Function {self.name()} returned an invalid gradient at index {index} - got "
                                   f"{list(np.shape(value))} but expected shape compatible with {list(shape)}")
        return array if array.dtype == dtype else array.astype(dtype)

    def saved_values(self) -> list[tuple[str, object]]:
        return [(f"tensor {index}", entry[1].unpack(self.name(), "a saved tensor"))
                for index, entry in enumerate(self._saved) if entry is not None]

    def release(self) -> None:
        for entry in self._saved:
            if entry is not None:
                entry[1].release()
        self._saved = [None if entry is None else (None, entry[1]) for entry in self._saved]


class Function:
    """Subclass with static `forward`, `backward` and (new style) `setup_context`;
    call with `apply` (module docstring)."""

    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError("a Function subclass defines forward")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is for forwards without ctx: forward(*args)")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("a Function subclass defines backward")

    @classmethod
    def apply(cls, *args):
        ctx = FunctionCtx(cls, args)
        with no_grad():
            if cls.setup_context is not Function.setup_context:
                output = cls.forward(*args)
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *args)
        outputs = output if isinstance(output, tuple) else (output,)
        differentiable = [id(value) not in ctx._non_differentiable for value in outputs]
        outputs = tuple(_claimable(value, args) for value in outputs)
        if is_grad_enabled() and any(ctx.needs_input_grad):
            _connect(ctx, args, outputs, differentiable)
        return outputs if isinstance(output, tuple) else outputs[0]


def _claimable(value, args: tuple):
    """An output the node may take as its own: a tensor forward made, or else an alias
    of the tensor it returned (an input, or a tensor with a history of its own)."""
    if not isinstance(value, Tensor):
        return value
    if any(value is arg for arg in args) or value.grad_fn is not None or value.requires_grad:
        return value.detach()
    return value


def _connect(ctx: FunctionCtx, args: tuple, outputs: tuple, differentiable: list[bool]) -> None:
    ctx.next_functions = tuple(arg._gradient_edge() for arg in args if isinstance(arg, Tensor))
    ctx.num_outputs = len(outputs)
    ctx._outputs = [(value.shape, value.dtype, value.device) if isinstance(value, Tensor) else None
                    for value in outputs]
    for output_nr, (value, wanted) in enumerate(zip(outputs, differentiable)):
        if wanted and isinstance(value, Tensor) and value.dtype.kind in "fc":
            value.grad_fn, value._output_nr, value._requires_grad = ctx, output_nr, True
