"""`gradcheck`: the tape's gradients against central finite differences in float64.

NOTE(gradcheck): as torch.autograd.gradcheck, the check compares two Jacobians of `fn`
for every input that requires grad and every floating output: the numerical one, column
by column from central differences `(f(x + eps) - f(x - eps)) / 2 eps`, and the
analytical one, row by row from one `autograd.grad` per output element. An entry
matches when |analytical - numerical| <= atol + rtol * |numerical|. `fast_mode` compares
projections instead, `v^T J` for a random `v` per output: one backward in all, for the
same forward evaluations. The report names the input, the output, and the worst entry.
"""

from __future__ import annotations

import numpy as np

from .engine import grad as autograd_grad
from .grad_mode import no_grad
from .tensor import Tensor


class GradcheckError(RuntimeError):
    """The analytical and numerical gradients differ; the message says where and by how much."""


def numerical_jacobian(function, points: list, index: int, eps: float = 1e-6) -> list[np.ndarray]:
    """Central differences of `function(*points)` (arrays in, an array or a tuple/list
    of arrays out) with respect to `points[index]`: for each output, a matrix
    (points[index].size, output.size)."""
    point = np.asarray(points[index])
    if point.size == 0:
        return [np.zeros((0, np.size(output))) for output in _as_list(function(*points))]
    columns = []
    for flat in range(point.size):
        shifted = []
        for sign in (1, -1):
            moved = point.copy()
            moved.flat[flat] += sign * eps
            trial = list(points)
            trial[index] = moved
            shifted.append([np.asarray(output, dtype=np.float64) for output in _as_list(function(*trial))])
        columns.append([(plus - minus).ravel() / (2 * eps) for plus, minus in zip(*shifted)])
    return [np.array([column[k] for column in columns]) for k in range(len(columns[0]))]


def numerical_vjp(function, points: list, index: int, cotangent: list, eps: float = 1e-6) -> np.ndarray:
    """The gradient of sum(cotangent[k] * function(*points)[k]) with respect to
    points[index], from central differences."""
    jacobians = numerical_jacobian(function, points, index, eps)
    point = np.asarray(points[index])
    total = sum(jacobian @ np.ravel(part) for jacobian, part in zip(jacobians, cotangent))
    return np.reshape(total, point.shape) if point.size else np.zeros_like(point, dtype=np.float64)


def gradcheck(fn, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, fast_mode: bool = False) -> bool:
    """Check the gradients of `fn(*inputs)` against finite differences (NOTE(gradcheck)).

    `inputs`: a tensor or a tuple of arguments; the tensors among them that require
    grad are checked and must be float64. Returns True, or on a mismatch raises
    GradcheckError naming the input, the output and the worst entry (returns False
    with raise_exception=False).
    """
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    checked = _checked_inputs(inputs)
    outputs = _floating_outputs(fn(*inputs))
    rng = np.random.default_rng(0)
    projections = [rng.uniform(-1, 1, output.shape) for output in outputs.values()] if fast_mode else None
    analytical = _analytical(outputs, [inputs[index] for index in checked], projections)
    for position, index in enumerate(checked):
        numerical = numerical_jacobian(_on_arrays(fn, inputs, index), [inputs[index].numpy()], 0, eps)
        for k, output_index in enumerate(outputs):
            expected = numerical[k]
            if fast_mode:
                expected = (expected @ np.ravel(projections[k]))[:, None]
            report = _mismatch(analytical[position][k], expected, atol, rtol, inputs[index].shape,
                               outputs[output_index].shape if not fast_mode else None)
            if report is not None:
                what = "the projection v^T J (fast_mode)" if fast_mode else "the Jacobian"
                message = f"gradcheck: {what} of output {output_index} with respect to input {index} differs:\n{report}"
                if raise_exception:
                    raise GradcheckError(message)
                return False
    return True


def _checked_inputs(inputs: tuple) -> list[int]:
    checked = [index for index, value in enumerate(inputs) if isinstance(value, Tensor) and value.requires_grad]
    if not checked:
        raise ValueError("gradcheck expects at least one input tensor that requires grad")
    for index in checked:
        if inputs[index].dtype != np.float64:
            raise ValueError(f"gradcheck: input {index} requires grad and is {inputs[index].dtype}; finite "
                             f"differences need float64 inputs (use .double())")
    return checked


def _floating_outputs(result) -> dict[int, Tensor]:
    """output index -> output, for the floating tensors `fn` returned."""
    outputs = {index: value for index, value in enumerate(_as_list(result))
               if isinstance(value, Tensor) and value.dtype.kind == "f"}
    if not outputs:
        raise ValueError("gradcheck expects fn to return at least one floating tensor")
    return outputs


def _analytical(outputs: dict[int, Tensor], checked: list[Tensor], projections) -> list[list[np.ndarray]]:
    """[input][output] -> the Jacobian (input.size, output.size), or with projections
    the column v^T J (input.size, 1), from the tape."""
    jacobians = [[] for _ in checked]
    for k, output in enumerate(outputs.values()):
        if projections is not None:
            cotangents = [projections[k]]
        else:
            cotangents = [np.eye(1, output.size, j).reshape(output.shape) for j in range(output.size)]
        rows = [_gradients(output, checked, cotangent) for cotangent in cotangents]
        for position, tensor in enumerate(checked):
            matrix = np.array([row[position].ravel() for row in rows]).reshape(len(rows), tensor.size)
            jacobians[position].append(matrix.T)
    return jacobians


def _gradients(output: Tensor, checked: list[Tensor], cotangent: np.ndarray) -> list[np.ndarray]:
    if not output.requires_grad:
        return [np.zeros(tensor.shape) for tensor in checked]
    grads = autograd_grad(output, checked, grad_outputs=Tensor(cotangent.astype(output.dtype)), retain_graph=True,
                          allow_unused=True)
    for tensor, value in zip(checked, grads):
        if value is not None and (value.shape != tensor.shape or value.dtype != tensor.dtype):
            raise GradcheckError(f"gradcheck: the tape gave a {value.dtype}{list(value.shape)} gradient for a "
                                 f"{tensor.dtype}{list(tensor.shape)} input")
    return [np.zeros(tensor.shape) if value is None else value.numpy() for tensor, value in zip(checked, grads)]


def _on_arrays(fn, inputs: tuple, index: int):
    """`fn` as a function of the array of inputs[index] (the others fixed), returning
    its floating outputs as arrays, computed without recording."""
    def function(array):
        trial = list(inputs)
        trial[index] = Tensor(array)
        with no_grad():
            return [value.numpy() for value in _floating_outputs(fn(*trial)).values()]
    return function


def _mismatch(analytical: np.ndarray, numerical: np.ndarray, atol: float, rtol: float, input_shape: tuple,
              output_shape: tuple | None) -> str | None:
    """None when every entry is within tolerance; else a report of the worst one."""
    if analytical.shape != numerical.shape:
        return f"  shapes differ: analytical {analytical.shape}, numerical {numerical.shape}"
    allowed = atol + rtol * np.abs(numerical)
    excess = np.abs(analytical - numerical) - allowed
    bad = ~(excess <= 0)  # NaN in either counts as a mismatch
    if not bad.any():
        return None
    flat = int(np.argmax(np.where(np.isnan(excess), np.inf, excess)))
    row, column = np.unravel_index(flat, excess.shape)
    where = f"input element {_index(row, input_shape)}"
    if output_shape is not None:
        where += f", output element {_index(column, output_shape)}"
    return (f"  worst at {where}: numerical {numerical[row, column]:.8g}, analytical {analytical[row, column]:.8g} "
            f"(difference {abs(analytical[row, column] - numerical[row, column]):.3g} > atol + rtol * |numerical| "
            f"= {allowed[row, column]:.3g}); {int(bad.sum())} of {bad.size} entries differ\n"
            f"  numerical (a row per input element, a column per output element):\n{_indent(numerical)}\n"
            f"  analytical:\n{_indent(analytical)}")


def _index(flat: int, shape: tuple) -> tuple:
    return tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()


def _indent(matrix: np.ndarray) -> str:
    text = np.array2string(matrix, precision=6, threshold=64, max_line_width=100)
    return "\n".join("    " + line for line in text.splitlines())


def _as_list(value) -> list:
    return list(value) if type(value) in (tuple, list) else [value]
