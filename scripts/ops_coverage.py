"""The coverage table of docs/ops.md: NumPy's routines, by the groups of NumPy's own
reference ("Routines and objects by topic"), each with whether a call of it inside a
compiled function is captured (the registry entry the frontend maps it to) or why not.

    .venv-3.11/bin/python -P scripts/ops_coverage.py          # rewrite the table
    .venv-3.11/bin/python -P scripts/ops_coverage.py --check  # exit 1 if it is stale

The table is generated from the registry, through the frontend's own mapping of NumPy
functions to entries (pyjit.frontend.values.registry_entry), so a new entry shows up as
captured once the table is regenerated; tests/test_ops_coverage.py fails while the
committed table is stale. A function that is not captured gets its reason from the
frontend's table of calls whose results the values shape (VALUE_SHAPED), else from
WHY_NOT below (default: not in the registry yet).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from pyjit.ops import Composite
from pyjit.frontend.array_calls import VALUE_SHAPED
from pyjit.frontend.values import registry_entry

DOC = Path(__file__).resolve().parents[1] / "docs" / "ops.md"
BEGIN, END = "<!-- coverage:begin (scripts/ops_coverage.py) -->", "<!-- coverage:end -->"

# NumPy's routine lists (numpy.org/doc/stable/reference/routines.*.html), by topic; a
# name with a dot is in that submodule.
ROUTINES = {
    "Array creation": """empty empty_like eye identity ones ones_like zeros zeros_like full full_like array asarray
        asanyarray ascontiguousarray asfortranarray copy frombuffer fromfile fromfunction fromiter fromstring loadtxt
        arange linspace logspace geomspace meshgrid diag diagflat tri tril triu vander""",
    "Array manipulation": """copyto shape reshape ravel moveaxis rollaxis swapaxes transpose permute_dims
        matrix_transpose atleast_1d atleast_2d atleast_3d broadcast_to broadcast_arrays expand_dims squeeze
        asarray_chkfinite concatenate concat stack block vstack hstack dstack column_stack split array_split dsplit
        hsplit vsplit tile repeat delete insert append resize trim_zeros unique pad flip fliplr flipud roll rot90""",
    "Mathematical functions": """sin cos tan arcsin arccos arctan hypot arctan2 degrees radians unwrap deg2rad rad2deg
        sinh cosh tanh arcsinh arccosh arctanh round around rint fix floor ceil trunc prod sum nanprod nansum cumprod
        cumsum nancumprod nancumsum diff ediff1d gradient cross trapezoid exp expm1 exp2 log log10 log2 log1p logaddexp
        logaddexp2 i0 sinc signbit copysign frexp ldexp nextafter spacing lcm gcd add reciprocal positive negative
        multiply divide power subtract true_divide floor_divide float_power fmod mod modf remainder divmod angle real
        imag conj conjugate maximum max amax fmax nanmax minimum min amin fmin nanmin convolve clip sqrt cbrt square
        absolute fabs sign heaviside nan_to_num real_if_close interp bitwise_and bitwise_or bitwise_xor invert
        left_shift right_shift""",
    "Logic": """all any isfinite isinf isnan isnat isneginf isposinf iscomplex iscomplexobj isfortran isreal isrealobj
        isscalar logical_and logical_or logical_not logical_xor allclose isclose array_equal array_equiv greater
        greater_equal less less_equal equal not_equal""",
    "Statistics": """ptp percentile nanpercentile quantile nanquantile median average mean std var nanmedian nanmean
        nanstd nanvar corrcoef correlate cov histogram histogram2d histogramdd bincount histogram_bin_edges digitize""",
    "Sorting, searching, counting": """sort lexsort argsort sort_complex partition argpartition argmax nanargmax argmin
        nanargmin argwhere nonzero flatnonzero where searchsorted extract count_nonzero""",
    "Linear algebra": """dot linalg.multi_dot vdot inner outer matmul tensordot einsum einsum_path linalg.matrix_power
        kron linalg.cholesky linalg.qr linalg.svd linalg.svdvals linalg.eig linalg.eigh linalg.eigvals
        linalg.eigvalsh linalg.norm linalg.matrix_norm linalg.vector_norm linalg.cond linalg.det linalg.matrix_rank
        linalg.slogdet trace linalg.solve linalg.tensorsolve linalg.lstsq linalg.inv linalg.pinv linalg.tensorinv""",
    "Generating index arrays": """indices ix_ ravel_multi_index unravel_index diag_indices diag_indices_from
        mask_indices tril_indices tril_indices_from triu_indices triu_indices_from""",
    "Window functions": "bartlett blackman hamming hanning kaiser",
    "Discrete Fourier transform": """fft.fft fft.ifft fft.fft2 fft.ifft2 fft.fftn fft.ifftn fft.rfft fft.irfft
        fft.rfft2 fft.irfft2 fft.rfftn fft.irfftn fft.hfft fft.ihfft fft.fftfreq fft.rfftfreq fft.fftshift
        fft.ifftshift""",
}

_PYTHON_INPUT = "reads files, buffers or Python objects: runs in Python"
WHY_NOT = {
    **dict.fromkeys(["frombuffer", "fromfile", "fromfunction", "fromiter", "fromstring", "loadtxt"], _PYTHON_INPUT),
    **dict.fromkeys(["shape", "iscomplexobj", "isrealobj", "isfortran", "isscalar"],
                    "a question about the object, not its values: runs in Python"),
    "copyto": "writes into its first argument in place",
    "einsum_path": "plans an einsum and computes nothing",
    "nanmedian": "not in the registry yet (median, with NaNs dropped per slice)",
}


def _function(qualified: str):
    module = np
    *submodules, name = qualified.split(".")
    for submodule in submodules:
        module = getattr(module, submodule)
    return getattr(module, name, None)


def status(qualified: str) -> tuple[str, str]:
    """(captured: the entry, or "no"; why not) for one NumPy routine."""
    function = _function(qualified)
    if function is None:
        return "no", f"not in NumPy {np.__version__}"
    entry = registry_entry(function)
    if entry is not None:
        kind = "composite" if isinstance(entry, Composite) else entry.category
        return f"`{entry.name}` ({kind})", ""
    if function in VALUE_SHAPED:
        return "no", f"{VALUE_SHAPED[function]}: a graph break"
    return "no", WHY_NOT.get(qualified, "not in the registry yet")


def table() -> str:
    """The generated part of docs/ops.md."""
    lines = []
    for topic, names in ROUTINES.items():
        rows = [(name, *status(name)) for name in names.split()]
        captured = sum(1 for _, entry, _ in rows if entry != "no")
        lines += [f"### {topic}: {captured} of {len(rows)} captured", "",
                  "| function | captured as | why not |", "| --- | --- | --- |"]
        lines += [f"| `numpy.{name}` | {entry} | {why} |" for name, entry, why in rows]
        lines.append("")
    return "\n".join(lines).rstrip("\n")


def with_table(text: str) -> str:
    """docs/ops.md's text with the part between the markers regenerated."""
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[:start] + "\n" + table() + "\n" + text[end:]


def main(argv: list[str]) -> int:
    text = DOC.read_text(encoding="utf-8")
    fresh = with_table(text)
    if "--check" in argv:
        if fresh != text:
            print(f"{DOC} is stale: run python -P scripts/ops_coverage.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(fresh, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
