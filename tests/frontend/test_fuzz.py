"""A differential fuzzer for the frontend: seeded random programs, each run plainly and
compiled under every backend `pyjit.list_backends(exclude_tags=None)` names, must agree.

NOTE(differential-fuzzer): a program is a function `f(x, y, state)` written from a seed:
NumPy (or pyjit.Tensor) arithmetic, `if` on data and on shapes, `for` and `while` loops
(with `break`), loops over ranges with array bodies (slices that move with the index,
recurrences, accumulators, a triangular nest: what loop nodes capture), graph breaks
(`print`, `.item()`, `float()`, `pyjit.graph_break()`, `.copy()`), list, dict,
attribute and global side effects, closures and an inlined module-level helper,
exceptions raised and caught, NumPy's own errors caught, handlers that re-raise, and,
for Tensor programs, inputs that require grad, `no_grad` blocks and `backward()` inside
and after the call. Each program is called four times (two inputs
of one size, then two other sizes, so cache hits, recompiles and dynamic sizes all run),
plainly and compiled, and every call must give the same outcome: the result (arrays by
dtype, shape and value to a relative 1e-6, 1e-4 for arrays of float32, and an absolute tenth of
that, since values are of order 1 and a sum that cancels keeps its terms' rounding: the
fused kernels reorder and use vector math, docs/codegen.md), the exception type, what it printed, the state object, the
module's globals, the inputs afterwards (in-place changes), the gradients, and the
warnings. Values stay bounded (no overflow, no division by zero) so that NumPy's own
floating-point warnings never enter the comparison.

The suite runs a small budget (`test_random_programs_agree_with_plain_python`: about 10 s
here with the kernel cache warm, 30 s cold). For longer (the installed pyjit, or the
source tree with PYTHONPATH):

    python tests/frontend/test_fuzz.py --seconds 600 [--seed 0] [--count N] [--backend eager]

prints each mismatch (its seed, backend, call and the program) as it is found, and the
counts at the end; `--seed S --count 1 --show` prints one program.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import io
import random
import sys
import time
import traceback
import warnings

import numpy as np
import pytest

import pyjit
from pyjit.utils import counters

SUITE_PROGRAMS = 60  # the budget the normal suite runs (every backend)
# What the fuzzer found became tests of the module it concerns (a seed names a program
# only for one version of the generator): tests/codegen/test_glue.py (a symbolic size
# the guards pinned to a number) and tests/frontend/test_resume.py (a method bound to a
# computed array left below a split call).
# The one warning left out of the comparison is the recompile limit's: a closure called
# with a new `state.count` each time sees a new constant for its guards and reaches the
# limit, which is the documented policy (docs/frontend/guards.md), not a change in what runs.


# -- the programs ----------------------------------------------------------------------------
@dataclasses.dataclass
class Scope:
    arrays: list[str]
    ints: list[str]
    floats: list[str]


class Program:
    """The source of one random program, from `seed` (NOTE(differential-fuzzer))."""

    MAX_STATEMENTS = 20

    def __init__(self, seed: int):
        self.seed = seed
        self.rng = random.Random(seed)
        self.tensors = self.rng.random() < 0.35
        self.dtype = self.rng.choice(["float64", "float64", "float32"])
        self.dynamic = self.rng.choice([None, None, True])
        self.lines: list[str] = []
        self.fresh = 0
        self.statements = 0
        self.backward_done = False
        self.helpers: list[str] = []
        self.source = self._write()

    # -- writing -----------------------------------------------------------------------------
    def _write(self) -> str:
        scope = Scope(["x", "y"], ["n"], [])
        self._emit(1, "n = x.shape[0]")
        self._emit(1, "acc = []")
        self._emit(1, "table = {}")
        self._block(1, scope, depth=0, loop=False, size=self.rng.randint(3, 8))
        self._emit(1, self._return(scope))
        header = ["import numpy as np", "import pyjit", "", "SCALE = 1.5", "TALLY = {'calls': 0}", "",
                  "def helper(a, b):", "    return np.tanh(a) * b + SCALE", ""]
        if self.rng.random() < 0.3:
            header += ["helper = pyjit.allow_in_graph(helper)", ""]
        return "\n".join(header + self.helpers + ["def f(x, y, state):"] + self.lines) + "\n"

    def _emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def _name(self, prefix: str) -> str:
        self.fresh += 1
        return f"{prefix}{self.fresh}"

    def _block(self, indent: int, scope: Scope, depth: int, loop: bool, size: int) -> None:
        before = len(self.lines)
        for _ in range(size):
            if self.statements >= self.MAX_STATEMENTS:
                break
            self.statements += 1
            self._statement(indent, scope, depth, loop)
        if len(self.lines) == before or self.rng.random() < 0.2:
            self._emit(indent, f"state.count += {self.rng.randint(1, 3)}")

    def _statement(self, indent: int, scope: Scope, depth: int, loop: bool) -> None:
        choices = ["assign"] * 6 + ["update"] * 3 + ["print", "item", "graph_break", "effect", "effect", "global",
                                                     "closure", "helper", "copy", "method", "swap", "comprehension",
                                                     "fstring", "nonlocal", "index", "dict_loop", "draw"]
        if depth < 2:
            choices += ["if_data", "if_data", "if_shape", "for", "for_items", "while", "try", "try_numpy",
                        "reraise", "array_loop", "array_loop"]
        if loop:
            choices += ["break"]
        if self.tensors:
            choices += ["no_grad"] + ([] if self.backward_done else ["backward"])
        getattr(self, "_" + self.rng.choice(choices))(indent, scope, depth, loop)

    def _define(self, indent: int, scope: Scope, value: str) -> None:
        """A new array variable set to `value`."""
        name = self._name("v")
        self._emit(indent, f"{name} = {value}")
        scope.arrays.append(name)

    def _assign(self, indent, scope, depth, loop):
        self._define(indent, scope, self.expr(scope, 2))

    def _update(self, indent, scope, depth, loop):
        name = self.rng.choice(scope.arrays)
        operator = "+=" if name in ("x", "y") else self.rng.choice(["=", "+=", "-="])
        if name in ("x", "y") and self.tensors:  # a leaf that requires grad refuses in-place ops
            operator = "="
        value = self.expr(scope, 2)
        self._emit(indent, f"{name} {operator} {value}" if operator != "=" else f"{name} = {value} + {name}")

    def _print(self, indent, scope, depth, loop):
        self._emit(indent, f"print('p{self.fresh}', {self.rng.choice(scope.ints)}, len(acc), state.count)")

    def _item(self, indent, scope, depth, loop):
        name = self._name("s")
        how = self.rng.choice(["float({})", "({}).item()", "float(np.tanh({}))"])
        self._emit(indent, f"{name} = {how.format(self.reduction(scope))}")
        scope.floats.append(name)

    def _graph_break(self, indent, scope, depth, loop):
        self._emit(indent, "pyjit.graph_break()")

    def _copy(self, indent, scope, depth, loop):
        source = self.rng.choice(scope.arrays)
        self._define(indent, scope, f"{source}.copy()" if not self.tensors else f"{source} * 1.0")

    def _effect(self, indent, scope, depth, loop):
        value = self.expr(scope, 1)
        self._emit(indent, self.rng.choice([
            f"state.log.append({value})", f"state.d['k{self.fresh}'] = {value}", "state.count += 1",
            f"state.last = {value}", f"acc.append({value})", f"table['t{self.fresh % 3}'] = {value}",
            "state.log.extend(acc)", "table.pop('t1', None)"]))
        self.fresh += 1
        if self.rng.random() < 0.3:
            self._define(indent, scope, f"acc[-1] + {self.rng.choice(scope.arrays)} if acc else "
                                        f"{self.rng.choice(scope.arrays)}")

    def _global(self, indent, scope, depth, loop):
        self._emit(indent, self.rng.choice(["TALLY['calls'] += 1", f"TALLY['last'] = {self.expr(scope, 1)}"]))

    def _closure(self, indent, scope, depth, loop):
        name, captured = self._name("g"), self.rng.choice(scope.arrays)
        self._emit(indent, f"def {name}(z):")
        if self.rng.random() < 0.5:
            self._emit(indent + 1, "state.count += 1")
        self._emit(indent + 1, f"return z * {self.constant()} + {captured}")
        self._define(indent, scope, f"{name}({self.expr(scope, 1)})")

    def _method(self, indent, scope, depth, loop):
        self._define(indent, scope, f"state.scaled({self.expr(scope, 1)}, by={self.constant()})")

    def _swap(self, indent, scope, depth, loop):
        first, second = self._name("v"), self._name("v")
        self._emit(indent, f"{first}, {second} = {self.expr(scope, 1)}, {self.expr(scope, 1)}")
        self._emit(indent, f"{first}, {second} = {second}, {first}")
        scope.arrays += [first, second]

    def _comprehension(self, indent, scope, depth, loop):
        items = ", ".join(self.rng.sample(scope.arrays, min(len(scope.arrays), 3)))
        how = self.rng.choice(["sum([np.sin(a) for a in ({},)])", "np.stack([a * 2.0 for a in ({},)]).sum(axis=0)",
                               "max({},  key=lambda a: float(a.sum()))"])
        self._define(indent, scope, how.format(items))

    def _fstring(self, indent, scope, depth, loop):
        value = self.rng.choice(scope.ints + [f"{self.rng.choice(scope.arrays)}.shape", "state.count"])
        self._emit(indent, self.rng.choice([f"state.log.append(f'at {{{value}}}')",
                                            f"state.log.append('n={{}}'.format({value}))"]))

    def _nonlocal(self, indent, scope, depth, loop):
        name, counter = self._name("h"), self._name("c")
        self._emit(indent, f"{counter} = 0")
        self._emit(indent, f"def {name}(z):")
        self._emit(indent + 1, f"nonlocal {counter}")
        self._emit(indent + 1, f"{counter} += 1")
        self._emit(indent + 1, f"return z - {counter}")
        self._define(indent, scope, f"{name}({name}({self.expr(scope, 1)}))")
        self._emit(indent, f"state.d['{counter}'] = {counter}")

    def _index(self, indent, scope, depth, loop):
        source = self.rng.choice(scope.arrays)
        self._define(indent, scope, self.rng.choice([
            f"{source}[::-1] + {source}", f"np.concatenate([{source}[1:], {source}[:1]])",
            f"{source}[0] * {source}", f"{source}[n // 2] + {source}"]))

    def _dict_loop(self, indent, scope, depth, loop):
        key, name = self._name("k"), self._name("v")
        self._emit(indent, f"table['t{self.fresh}'] = {self.expr(scope, 1)}")
        self._emit(indent, f"{name} = {self.rng.choice(scope.arrays)}")
        self._emit(indent, f"for {key}, item in table.items():")
        self._emit(indent + 1, f"{name} = {name} + item")
        scope.arrays.append(name)

    def _draw(self, indent, scope, depth, loop):
        draw = self.rng.choice(["pyjit.randn(n, dtype=x.dtype)", "pyjit.rand(x.shape, dtype=np.dtype(x.dtype))"])
        self._define(indent, scope, f"{self.expr(scope, 1)} + {draw}")

    def _helper(self, indent, scope, depth, loop):
        self._define(indent, scope, f"helper({self.expr(scope, 1)}, {self.expr(scope, 1)})")

    def _nested(self, indent, scope, depth, loop, size=None):
        inner = Scope(list(scope.arrays), list(scope.ints), list(scope.floats))
        self._block(indent, inner, depth + 1, loop, size or self.rng.randint(1, 3))

    def _if_data(self, indent, scope, depth, loop):
        self._emit(indent, f"if {self.reduction(scope)} > {self.constant()}:")
        self._nested(indent + 1, scope, depth, loop)
        if self.rng.random() < 0.6:
            self._emit(indent, "else:")
            self._nested(indent + 1, scope, depth, loop)

    def _if_shape(self, indent, scope, depth, loop):
        condition = self.rng.choice(["x.shape[0] > 4", "n % 2 == 0", "len(y) >= 5", "x.ndim == 1 and n < 6"])
        self._emit(indent, f"if {condition}:")
        self._nested(indent + 1, scope, depth, loop)
        self._emit(indent, "else:")
        self._nested(indent + 1, scope, depth, loop)

    def _for(self, indent, scope, depth, loop):
        index = self._name("i")
        self._emit(indent, f"for {index} in range({self.rng.choice(['2', '3', 'n - 2', '1, 3'])}):")
        inner = Scope(list(scope.arrays), scope.ints + [index], list(scope.floats))
        self._block(indent + 1, inner, depth + 1, True, self.rng.randint(1, 3))

    # Loops a loop node captures (NOTE(loop-capture)): index-dependent slices, recurrences,
    # accumulators, a triangular nest, carried arrays; over 4n elements, so that most are
    # too long to unroll (NOTE(short-loops)). tanh keeps the values bounded.
    ARRAY_LOOPS = {
        "recurrence": ["for {i} in range(1, len({z})):", "    {z}[{i}] = {z}[{i} - 1] * {c} + {z}[{i}]"],
        "prefix": ["for {i} in range({z}.shape[0]):", "    {z}[{i}] = {z}[{i}] + np.tanh({z}[:{i}].sum()) * {c}"],
        "suffix": ["for {i} in range(len({z})):", "    {z}[{i} + 1:] = np.tanh({z}[{i} + 1:] + {z}[{i}] * {c})"],
        "window": ["for {i} in range(2, len({z}) - 1):",
                   "    {z}[{i}:{i} + 2] = {z}[{i} - 2:{i}] * {c} + {z}[{i}:{i} + 2] * 0.5"],
        "triangle": ["for {i} in range(len({z})):", "    for {j} in range({i}):",
                     "        {z}[{i}] = np.tanh({z}[{i}] + {z}[{j}] * {c})"],
        "accumulate": ["{s} = 0.0", "for {i} in range(len({z})):", "    {s} += {z}[{i}] * {c}"],
        "steps": ["for {i} in range({k}):", "    {z} = {z} * {c} + np.tanh({z}[::-1]) * 0.5"],
    }

    def _array_loop(self, indent, scope, depth, loop):
        name, source = self._name("z"), self.expr(scope, 1)
        self._emit(indent, f"{name} = np.concatenate([{source}, {source}, {source}, {source}])")
        kind = "steps" if self.tensors else self.rng.choice(sorted(self.ARRAY_LOOPS))
        names = dict(z=name, i=self._name("i"), j=self._name("i"), s=self._name("s"), k=self.rng.randint(8, 40),
                     c=repr(round(self.rng.uniform(-0.9, 0.9), 3)))
        self._emit(indent, f"# {kind} loop")
        for line in self.ARRAY_LOOPS[kind]:
            self._emit(indent, line.format(**names))
        scope.arrays.append(name)
        if kind == "accumulate":
            scope.floats.append(names["s"])

    def _for_items(self, indent, scope, depth, loop):
        item = self._name("w")
        items = ", ".join(self.rng.sample(scope.arrays, min(len(scope.arrays), 2)))
        self._emit(indent, f"for {item} in ({items},):")
        inner = Scope(scope.arrays + [item], list(scope.ints), list(scope.floats))
        self._block(indent + 1, inner, depth + 1, True, self.rng.randint(1, 2))

    def _while(self, indent, scope, depth, loop):
        counter = self._name("j")
        self._emit(indent, f"{counter} = 0")
        self._emit(indent, f"while {counter} < {self.rng.randint(1, 3)}:")
        self._emit(indent + 1, f"{counter} += 1")  # first, so that a `continue` cannot loop forever
        inner = Scope(list(scope.arrays), scope.ints + [counter], list(scope.floats))
        self._block(indent + 1, inner, depth + 1, True, self.rng.randint(1, 2))

    def _break(self, indent, scope, depth, loop):
        self._emit(indent, f"if {self.reduction(scope)} > {self.constant()}:")
        self._emit(indent + 1, self.rng.choice(["break", "continue"]))

    def _try(self, indent, scope, depth, loop):
        error = self.rng.choice(["ValueError", "KeyError", "RuntimeError"])
        self._emit(indent, "try:")
        self._nested(indent + 1, scope, depth, loop, 1)
        self._emit(indent + 1, f"raise {error}('e{self.fresh}')")
        self._emit(indent, f"except {error} as error:")
        self._emit(indent + 1, "state.log.append(str(error))")

    def _try_numpy(self, indent, scope, depth, loop):
        name = self.rng.choice([n for n in scope.arrays if n not in ("x", "y")] or [self._name("v")])
        self._emit(indent, "try:")
        self._emit(indent + 1, f"{name} = {self.rng.choice(scope.arrays)} + np.ones(n + 1)")
        self._emit(indent, "except ValueError:")
        self._emit(indent + 1, f"{name} = {self.expr(scope, 1)} * 0.5")
        if name not in scope.arrays:
            scope.arrays.append(name)

    def _reraise(self, indent, scope, depth, loop):
        self._emit(indent, "try:")
        self._emit(indent + 1, f"if {self.reduction(scope)} > {self.constant()}:")
        self._emit(indent + 2, "raise KeyError('too big')")
        self._emit(indent + 1, "state.count += 100")
        self._emit(indent, "except KeyError:")
        self._emit(indent + 1, "state.log.append('reraised')")
        self._emit(indent + 1, "raise")
        self._emit(indent, "finally:")
        self._emit(indent + 1, "TALLY['finally'] = TALLY.get('finally', 0) + 1")

    def _no_grad(self, indent, scope, depth, loop):
        self._emit(indent, "with pyjit.no_grad():")
        self._define(indent + 1, scope, self.expr(scope, 2))

    def _backward(self, indent, scope, depth, loop):
        if depth > 0:  # one backward() per call: a loop would free the graph the next one needs
            return self._assign(indent, scope, depth, loop)
        self.backward_done = True
        self._emit(indent, f"({self.expr(scope, 2)}).sum().backward()")

    def _return(self, scope: Scope) -> str:
        picks = self.rng.sample(scope.arrays, min(len(scope.arrays), self.rng.randint(1, 2)))
        extra = [self.rng.choice(scope.floats)] if scope.floats and self.rng.random() < 0.5 else []
        shape = self.rng.choice(["single", "tuple", "dict"])
        if shape == "single" and not extra:
            return f"return {picks[0]}"
        if shape == "dict":
            return "return {" + ", ".join(f"'r{i}': {v}" for i, v in enumerate(picks + extra)) + ", 'n': n}"
        return "return " + ", ".join(picks + extra) + ","

    # -- expressions ---------------------------------------------------------------------------
    def constant(self) -> str:
        return repr(round(self.rng.uniform(-2, 2), 3))

    def reduction(self, scope: Scope) -> str:
        operand = self.expr(scope, 1)
        return self.rng.choice([f"({operand}).sum()", f"np.mean({operand})", f"np.max({operand})",
                                f"({operand}).max()"])

    def expr(self, scope: Scope, depth: int) -> str:
        if depth <= 0 or self.rng.random() < 0.3:
            return self.rng.choice(scope.arrays)
        a = self.expr(scope, depth - 1)
        kind = self.rng.random()
        if kind < 0.35:
            return self.rng.choice([f"np.sin({a})", f"np.cos({a})", f"np.tanh({a})", f"np.abs({a})", f"-{a}",
                                    f"np.exp(np.tanh({a}))", f"np.log1p(np.abs({a}))",
                                    f"np.sqrt(np.abs({a}) + 1.0)"])
        if kind < 0.45:
            scalar = self.rng.choice(scope.ints + scope.floats + [self.constant(), "SCALE"])
            return self.rng.choice([f"({a} * {scalar})", f"({a} + {scalar})"])
        if kind < 0.55:
            return f"({self.reduction(scope)} + {a})"
        b = self.expr(scope, depth - 1)
        return self.rng.choice([f"({a} + {b})", f"({a} - {b})", f"({a} * np.tanh({b}))",
                                f"({a} / (np.abs({b}) + 1.0))", f"np.maximum({a}, {b})",
                                f"np.where({a} > {b}, {a}, {b})"])

    # -- inputs --------------------------------------------------------------------------------
    def calls(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Four calls' inputs: two of one size, then two others (NOTE(differential-fuzzer)).
        The last may have the other float dtype (a dtype guard fails), and NumPy inputs
        may be strided views (every other element of a buffer: another kernel layout)."""
        sizes = self.rng.sample(range(3, 9), 3)
        dtypes = [self.dtype] * 3 + [self.rng.choice([self.dtype, "float32", "float64"])]
        data = np.random.default_rng(self.seed)
        calls = [tuple(data.standard_normal(size).astype(dtype) for _ in range(2))
                 for size, dtype in zip((sizes[0], sizes[0], sizes[1], sizes[2]), dtypes)]
        if not self.tensors and self.rng.random() < 0.3:
            calls[-1] = tuple(np.repeat(array, 2)[::2] for array in calls[-1])
        return calls


# -- running and comparing ---------------------------------------------------------------------
class State:
    """What a program's side effects change; one per sequence of calls, so later calls
    see what earlier ones left (and guards on it change)."""

    def __init__(self):
        self.log, self.d, self.count, self.last = [], {}, 0, None

    def scaled(self, value, by=2.0):
        self.count += 1
        return value * by


@dataclasses.dataclass
class Outcome:
    result: object
    error: str | None
    printed: str
    state: object
    tally: object
    inputs: object
    grads: object
    warnings: list[str]
    internal_errors: int  # errors pyjit's callback reported through sys.unraisablehook
    trace: str = ""


def load(program: Program) -> dict:
    namespace = {"__name__": f"fuzz_{program.seed}"}
    exec(compile(program.source, f"<fuzz program {program.seed}>", "exec"), namespace)
    return namespace


def run(fn, namespace: dict, program: Program, inputs, state: State) -> Outcome:
    """One call of `fn` on fresh copies of `inputs`, everything it changed snapshotted."""
    if program.tensors:
        x, y = (pyjit.tensor(array.copy(), requires_grad=True) for array in inputs)
    else:  # a strided view stays one, of a buffer of its own
        x, y = (array.copy() if array.flags.c_contiguous else np.repeat(array, 2)[::2] for array in inputs)
    printed, error, trace, result, unraisable = io.StringIO(), None, "", None, []
    hook, sys.unraisablehook = sys.unraisablehook, lambda report: unraisable.append(_report(report))
    try:
        with contextlib.redirect_stdout(printed), warnings.catch_warnings(record=True) as caught, \
                np.errstate(all="ignore"):
            warnings.simplefilter("always")
            pyjit.manual_seed(program.seed)  # random draws: the same stream for both runs
            try:
                result = fn(x, y, state)
                if program.tensors:
                    _backward_of(result)
            except Exception as exc:  # compared by type; the trace is shown on a mismatch
                error, trace = type(exc).__name__, traceback.format_exc()
    finally:
        sys.unraisablehook = hook
    trace += "".join(unraisable)
    grads = (x.grad, y.grad) if program.tensors else None
    return Outcome(snapshot(result, (x, y)), error, printed.getvalue(), snapshot(vars(state)),
                   snapshot(namespace["TALLY"]), snapshot((x, y)), snapshot(grads),
                   sorted(f"{w.category.__name__}: {w.message}" for w in caught
                          if "recompile_limit" not in str(w.message)), len(unraisable), trace)


def _report(report) -> str:
    lines = traceback.format_exception(report.exc_type, report.exc_value, report.exc_traceback)
    return f"reported through sys.unraisablehook ({report.object!r}):\n" + "".join(lines)


def _backward_of(result) -> None:
    """The user's backward() after the call: through the first result that has a grad_fn."""
    values = result.values() if isinstance(result, dict) else result if isinstance(result, tuple) else [result]
    for value in values:
        if isinstance(value, pyjit.Tensor) and value.grad_fn is not None:
            (value * value).sum().backward()
            return


def snapshot(value, inputs=()):
    """`value` as plain data to compare; an input itself (`return x`) is named, not copied."""
    for position, given in enumerate(inputs):
        if value is given:
            return ("input", position)
    if isinstance(value, pyjit.Tensor):
        return ("Tensor", value.requires_grad, snapshot(value.detach().numpy()))
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, value.copy())
    if isinstance(value, np.generic):
        return ("scalar", value.dtype.str, np.array(value))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [snapshot(item, inputs) for item in value])
    if isinstance(value, dict):
        return ("dict", [(key, snapshot(item, inputs)) for key, item in value.items()])
    if isinstance(value, float):
        return ("float", np.array(value))
    if value is None or isinstance(value, (int, str, bool)):
        return value
    return ("object", type(value).__name__)


def same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if type(a) is not type(b) or a.shape != b.shape:
            return False
        rtol = 1e-4 if a.dtype.itemsize <= 4 else 1e-6  # by the array's own dtype (a call may change it)
        # atol: a difference of a sum that cancels is the ULPs of its terms (values are O(1)).
        return bool(np.allclose(a, b, rtol=rtol, atol=rtol / 10, equal_nan=True))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(same(p, q) for p, q in zip(a, b))
    return type(a) is type(b) and a == b


def differences(plain: Outcome, compiled: Outcome) -> list[str]:
    fields = ("error", "result", "printed", "state", "tally", "inputs", "grads", "warnings", "internal_errors")
    return [name for name in fields if not same(getattr(plain, name), getattr(compiled, name))]


@dataclasses.dataclass
class Mismatch:
    seed: int
    backend: str
    call: int
    fields: list[str]
    plain: Outcome
    compiled: Outcome
    source: str

    def __str__(self) -> str:
        shown = [f"seed {self.seed}, backend {self.backend!r}, call {self.call}: {', '.join(self.fields)} differ"]
        for name in self.fields:
            shown.append(f"  plain    {name}: {getattr(self.plain, name)!r}"[:600])
            shown.append(f"  compiled {name}: {getattr(self.compiled, name)!r}"[:600])
        if self.compiled.trace:
            shown.append("compiled tracebacks:\n" + self.compiled.trace)
        return "\n".join(shown + ["program:", self.source])


def check(seed: int, backends: list[str], totals: collections.Counter | None = None) -> list[Mismatch]:
    """Run program `seed` plainly and under each backend; the calls that differ.
    `totals` counts programs, compiled calls, graphs captured and graph breaks."""
    program = Program(seed)
    counters.clear()
    calls = program.calls()
    mismatches = []
    for backend in backends:
        pyjit.reset()
        plain_namespace, compiled_namespace = load(program), load(program)
        compiled = pyjit.compile(compiled_namespace["f"], backend=backend, dynamic=program.dynamic)
        plain_state, compiled_state = State(), State()
        for number, inputs in enumerate(calls):
            plain = run(plain_namespace["f"], plain_namespace, program, inputs, plain_state)
            outcome = run(compiled, compiled_namespace, program, inputs, compiled_state)
            fields = differences(plain, outcome)
            if fields:
                mismatches.append(Mismatch(seed, backend, number, fields, plain, outcome, program.source))
                break
            if totals is not None:
                totals["calls"] += 1
    if totals is not None:
        totals["programs"] += 1
        totals["with gradients"] += program.tensors
        totals["graphs"] += counters["stats"]["unique_graphs"]
        totals["breaks"] += sum(counters["graph_break"].values())
    pyjit.reset()  # which clears the counters too
    return mismatches


# -- the suite's budget ------------------------------------------------------------------------
@pytest.fixture
def clean():
    pyjit.reset()
    yield
    pyjit.reset()


def test_random_programs_agree_with_plain_python(clean):
    mismatches = [mismatch for seed in range(SUITE_PROGRAMS) for mismatch in check(seed, pyjit.list_backends(exclude_tags=None))]
    assert not mismatches, "\n\n".join(map(str, mismatches[:3]))


def test_the_programs_reach_what_they_are_meant_to():
    """The generator writes each feature the fuzzer promises within the suite's budget."""
    sources = "\n".join(Program(seed).source for seed in range(SUITE_PROGRAMS))
    for feature in ("if np.", "if x.shape", "for i", "for w", "while j", "print(", ".item()", "float(",
                    "pyjit.graph_break()", "state.log.append", "state.d[", "state.last =", "acc.append",
                    "TALLY[", "def g", "helper(", "raise KeyError", "raise\n", "except ValueError",
                    "np.ones(n + 1)", "with pyjit.no_grad()", ".backward()", ".copy()", "break", "continue",
                    "return {", "state.scaled(", "nonlocal", "for a in", "lambda", "f'at", "'n={}'.format",
                    "[::-1]", "table.items()", "pyjit.randn(", "pyjit.allow_in_graph",
                    *(f"# {kind} loop" for kind in Program.ARRAY_LOOPS)):
        assert feature in sources, feature
    programs = [Program(seed) for seed in range(SUITE_PROGRAMS)]
    assert any(program.tensors for program in programs)
    last_calls = [program.calls()[-1][0] for program in programs]
    assert any(not array.flags.c_contiguous for array in last_calls)  # strided views
    assert any(array.dtype != program.dtype for array, program in zip(last_calls, programs))  # a dtype change


def test_a_wrong_answer_is_seen():
    """The comparison is not blind: a value, an error type or a print that differs counts."""
    program = Program(0)
    namespace = load(program)
    plain = run(namespace["f"], namespace, program, program.calls()[0], State())
    wrong = dataclasses.replace(plain, result=snapshot(np.zeros(3)), error="TypeError", printed="extra\n")
    assert differences(plain, wrong) == ["error", "result", "printed"]
    assert differences(plain, plain) == []


# -- the command ---------------------------------------------------------------------------------
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Run the frontend's differential fuzzer (NOTE(differential-fuzzer)).")
    parser.add_argument("--seed", type=int, default=0, help="first program's seed")
    parser.add_argument("--count", type=int, default=None, help="programs to run (default: until --seconds)")
    parser.add_argument("--seconds", type=float, default=60.0, help="stop after this long")
    parser.add_argument("--backend", action="append", help="only these backends (default: pyjit.list_backends(exclude_tags=None))")
    parser.add_argument("--show", action="store_true", help="print each program before running it")
    args = parser.parse_args(argv)
    backends = args.backend or pyjit.list_backends(exclude_tags=None)
    started, seed, found, totals = time.monotonic(), args.seed, [], collections.Counter()
    while (args.count is None or totals["programs"] < args.count) and time.monotonic() - started < args.seconds:
        if args.show:
            print(Program(seed).source)
        for mismatch in check(seed, backends, totals):
            found.append(mismatch)
            print(mismatch, "\n", flush=True)
        seed += 1
    print(f"{totals['programs']} programs (seeds {args.seed}..{seed - 1}; {totals['with gradients']} on Tensors "
          f"that require grad, their gradients compared) x backends {backends}: "
          f"{totals['calls']} compiled calls, {totals['graphs']} graphs, {totals['breaks']} graph breaks; "
          f"{len(found)} mismatches in {len({m.seed for m in found})} programs, {time.monotonic() - started:.0f} s")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
