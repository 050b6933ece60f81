"""The `inductor` backend: a graph's pointwise ops and reductions as fused C kernels.

A graph is scheduled into kernels and eager steps (NOTE(fusion) in
pyjit/codegen/scheduling/scheduler.py), its kernels rendered as one C translation unit
(NOTE(c-renderer)), built and loaded through the disk cache (NOTE(kernel-cache)), and
run by generated glue (NOTE(glue)) that falls back to the graph module for any input it
was not compiled for. pyjit.Tensor inputs: NOTE(tensor-kernels).

NOTE(layouts): a kernel reads each input either as C-contiguous (strides computed from
the shape: unit-stride inner loops that vectorize) or as "strided" (its element strides
are size arguments: any layout, negative and zero strides included). The example
inputs decide which: C-contiguous ones are compiled as C, others as strided. A later
call whose inputs have other layouts runs another variant of the same graph, compiled
the first time it is needed (one variant per combination of layouts seen), so a
non-contiguous input never costs a copy and a contiguous one never loses the fast path.
Outputs are always new C-contiguous arrays (NumPy would keep an F-ordered input's order).
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

from .. import config, logs, trace
from ..autograd import Tensor
from ..autograd.aot import aot_function, tensor_outputs
from ..codegen import (TARGETS, BuildError, CompilerUnavailable, CpuTarget, CudaGraphed, CudaTarget, GlueError,
                       NotLowerable, TunedKernel, c_launcher, c_loop, glue_source, graph_device, is_dynamic, layout_of,
                       lowering_half, schedule, target_for)
from ..graph import Node, TensorMeta
from ..utils import capture_disabled, counters
from .eager import eager
from .registry import register_backend

_output_code = logs.get_logger("output_code")
MAX_BUFFERS, MAX_SIZES = 64, 512  # what one call of a pyjit._C.Kernel takes
_warned_no_compiler = False


# NOTE(modes): torch.compile's four modes, as the options each implies. What they do
# depends on the device (`mode_options(mode, device)` says it):
#   * CPU: "autotune" compiles each C kernel's variants (threads, vector width) and
#     times them at its first call, keeping the fastest on disk (NOTE(cpu-autotune));
#     "reuse_buffers" takes a graph's buffers from its previous call when nothing else
#     holds them (NOTE(buffer-reuse) in pyjit/codegen/glue.py), what CUDA graphs
#     save on a GPU without their overwritten outputs. CUDA graphs do not exist here.
#   * CUDA: "autotune" times each kernel's block sizes with CUDA events on its first call
#     at given sizes and keeps the fastest (NOTE(cuda-autotune)); "cuda_graphs" replays a
#     graph's launches as one CUDA graph (NOTE(cuda-graphs) in
#     pyjit/codegen/cuda/graphs.py); CuPy's memory pool already reuses buffers.
# Unknown modes or options are refused.
MODES = {"default": {}, "reduce-overhead": {"cuda_graphs": True, "reuse_buffers": True},
         "max-autotune": {"autotune": True, "cuda_graphs": True, "reuse_buffers": True},
         "max-autotune-no-cudagraphs": {"autotune": True, "cuda_graphs": False, "reuse_buffers": False}}
OPTIONS = frozenset({"cuda_graphs", "autotune", "reuse_buffers"})
# What each option does per device (NOTE(modes)).
DEVICE_SUPPORT = {"cpu": frozenset({"autotune", "reuse_buffers"}), "cuda": frozenset({"autotune", "cuda_graphs"})}


def mode_options(mode: str | None = None, device: str | None = None) -> dict:
    """The options `mode` implies (NOTE(modes)); with `device` ("cpu" or "cuda"), those
    that take effect there (True) and those that do nothing there (False).
    RuntimeError for an unknown mode or device."""
    if mode is None:
        mode = "default"
    if mode not in MODES:
        raise RuntimeError(f"Unrecognized mode={mode!r}, should be one of: {', '.join(MODES)}")
    if device is None:
        return dict(MODES[mode])
    kind = str(device).partition(":")[0]
    if kind not in DEVICE_SUPPORT:
        raise RuntimeError(f"Unrecognized device={device!r}, should be 'cpu' or 'cuda'")
    return {option: bool(value) and option in DEVICE_SUPPORT[kind] for option, value in MODES[mode].items()}


@register_backend
def inductor(graph_module, example_inputs, mode: str | None = None, options: dict | None = None):
    """Fused C kernels for the CPU (OpenMP threads, vector math); the compiled callable
    has `.kernels` (kernel IR), `.allocations` (arrays allocated per call), `.source` (C)
    and `.glue` (Python). Graphs it cannot compile (or with no kernel work) run as the
    `eager` backend runs them: NumPy graphs as straight-line NumPy calls.
    `mode` and `options`: NOTE(modes)."""
    chosen = {**mode_options(mode), **(options or {})}
    unknown = sorted(set(options or ()) - OPTIONS)
    if unknown:
        raise RuntimeError(f"Unexpected optimization option {unknown[0]!r}, known options are {sorted(OPTIONS)}")
    tuning = {"autotune": bool(chosen.get("autotune")), "reuse_buffers": bool(chosen.get("reuse_buffers"))}
    examples = list(example_inputs or ())
    output = graph_module.graph.output_node.args[0]
    outputs = [output] if isinstance(output, Node) else list(output)
    if not any(isinstance(example, Tensor) for example in examples) and not any(
            tensor_outputs(graph_module.graph, examples, outputs)):
        compiled = compile_graphs([(graph_module, examples)], **tuning)[0]
        if compiled is graph_module:  # no kernel work, or none that compiles: NOTE(eager-straight-line)
            return eager(graph_module, examples)
        if (chosen.get("cuda_graphs") and compiled is not graph_module and target_for(graph_module.graph) is CudaTarget
                and not is_dynamic(graph_module)):
            return CudaGraphed(compiled, CudaTarget.array_module())
        return compiled
    arrays = [example._array if isinstance(example, Tensor) else example for example in examples]
    inference = _Lazy(lambda: _on_tensors(
        graph_module, compile_graphs([(graph_module, arrays)], **tuning)[0], examples))
    return aot_function(graph_module, examples, fw_compiler=_on_arrays, bw_compiler=_on_arrays, inference=inference,
                        partitioner=config.aot_partitioner or "min_cut", memory_budget=config.aot_memory_budget)


def _on_arrays(graph_module, example_inputs):
    """AOTAutograd's forward and backward graphs (NOTE(aot-runtime)) compute on arrays."""
    return compile_graphs([(graph_module, list(example_inputs or ()))])[0]


class _Lazy:
    """The no-grad variant of a graph of Tensors, compiled the first time it runs: with
    guards on grad mode and requires_grad, a graph compiled for training never needs it."""

    def __init__(self, make):
        self.make, self.compiled = make, None

    def __call__(self, *args):
        if self.compiled is None:
            with capture_disabled():  # NOTE(compile-without-capture)
                self.compiled = self.make()
        return self.compiled(*args)


def _on_tensors(graph_module, compiled, examples: list):
    """NOTE(tensor-kernels): a graph of pyjit.Tensor inputs that records no gradient
    (grad mode off, or no input requires grad) runs its kernels on the tensors' arrays:
    the tape would record nothing, so the result is the same Tensors holding the
    kernels' arrays. An output is a Tensor when it depends on a Tensor input, as the ops
    would make it, and so is one that depends on a random draw. With gradients,
    AOTAutograd runs compiled forward and backward graphs (NOTE(aot-runtime))."""
    if compiled is graph_module:
        return graph_module
    output = graph_module.graph.output_node.args[0]
    single = isinstance(output, Node)
    wrap = tensor_outputs(graph_module.graph, examples, [output] if single else output)

    def run(*args):
        results = compiled(*(arg._array if isinstance(arg, Tensor) else arg for arg in args))
        if single:
            return Tensor(results) if wrap[0] else results
        return tuple(Tensor(result) if tensor else result for result, tensor in zip(results, wrap))

    run.kernels, run.graph_module = compiled.kernels, graph_module
    return run


def compile_graphs(items, target: str | None = None, autotune: bool = False, reuse_buffers: bool = False) -> list:
    """inductor() for several (graph_module, example_inputs) at once: every kernel of
    every graph in one translation unit, so one compiler run (tests batch their graphs).
    `target` (NOTE(targets)): "cpu", "cuda" or "cuda-emulation"; by default the first
    graph's device decides. `autotune`, `reuse_buffers`: NOTE(modes)."""
    if not items:
        return []
    chosen = TARGETS[target] if target is not None else target_for(items[0][0].graph)
    return _compile_graphs(items, chosen, _Options(autotune, reuse_buffers and chosen is CpuTarget))


def _compile_graphs(items, target, options: _Options) -> list:
    try:
        target.array_module()
    except CompilerUnavailable as error:  # CUDA graphs without CuPy
        _warn_unavailable(error)
        counters["inductor"]["eager_fallbacks"] += len(items)
        return [graph_module for graph_module, _ in items]
    plans = []
    with trace.stage("schedule"):
        for position, (graph_module, example_inputs) in enumerate(items):
            layouts = _layouts(graph_module.graph, example_inputs, target)
            plans.append(_Plan.make(graph_module, layouts, f"g{position}_", target, options)
                         if layouts is not None else None)
    library = _load([plan for plan in plans if plan is not None], target, options.autotune)
    if library is None:
        return [graph_module for graph_module, _ in items]
    return [plan.bind(library, examples=examples) if plan is not None else graph_module
            for plan, (graph_module, examples) in zip(plans, items)]


def _layouts(graph, example_inputs, target) -> dict[str, str] | None:
    """The layout each array input is compiled for (NOTE(layouts)); None when the graph
    is not for the target's device."""
    layouts = {}
    examples = list(example_inputs) if example_inputs is not None else []
    for position, node in enumerate(graph.placeholders):
        if isinstance(node.meta, TensorMeta):
            if not target.accepts(node.meta.device):
                return None
            example = examples[position] if position < len(examples) else None
            layouts[node.name] = layout_of(example) if hasattr(example, "flags") else "C"
    return layouts


def _warn_unavailable(error) -> None:
    global _warned_no_compiler
    if not _warned_no_compiler:
        _warned_no_compiler = True
        warnings.warn(f"pyjit: {error}; the inductor backend runs graphs eagerly", stacklevel=5)


def _load(plans: list[_Plan], target, autotune: bool = False):
    if not plans:
        return None
    try:
        with trace.stage("kernels"):
            return target.load([kernel for plan in plans for kernel in plan.schedule.kernels + plan.loop_kernels],
                               autotune)
    except CompilerUnavailable as error:
        _warn_unavailable(error)
    except BuildError as error:
        warnings.warn(f"pyjit: a generated kernel failed to compile, so its graph runs eagerly "
                      f"(please report it): {error}", stacklevel=4)
    counters["inductor"]["eager_fallbacks"] += len(plans)
    return None


class _Options(NamedTuple):
    """What a mode asks of the kernels and glue (NOTE(modes))."""

    autotune: bool = False
    reuse_buffers: bool = False


class _Plan:
    """One graph, scheduled for one set of input layouts, waiting for its kernels."""

    def __init__(self, graph_module, layouts, scheduled, glue, namespace, target, options: _Options, loop=None):
        self.target, self.options = target, options
        self.loop = loop  # a loop body's C loop (NOTE(c-loops))
        self.loop_kernels = loop.kernels if loop is not None else []
        self.graph_module = graph_module
        self.layouts = layouts
        self.schedule = scheduled
        self.glue = glue
        self.namespace = namespace

    @classmethod
    def make(cls, graph_module, layouts: dict[str, str], prefix: str, target, options: _Options) -> _Plan | None:
        try:
            with lowering_half(target.lowers_half):  # NOTE(half-lowering)
                scheduled = schedule(graph_module.graph, layouts, prefix=f"{prefix}kernel",
                                     device=graph_device(graph_module.graph), in_place=not options.autotune)
            if not scheduled.kernels or any(len(kernel.buffers) > MAX_BUFFERS or len(kernel.sizes) > MAX_SIZES
                                            for kernel in scheduled.kernels):
                return None
            glue, namespace = glue_source(scheduled, layouts, xp=target.array_module(),
                                          reuse_buffers=options.reuse_buffers)
            loop = c_loop(scheduled, layouts, prefix) if target is CpuTarget and not options.autotune else None
            if loop is not None and (loop.loop.buffers > MAX_BUFFERS or loop.loop.sizes > MAX_SIZES):
                loop = None
        except (NotLowerable, GlueError):
            return None
        except Exception as error:  # a bug: the graph still runs, eagerly, and says so
            warnings.warn(f"pyjit: the inductor backend failed on graph {graph_module.graph.name} and runs it "
                          f"eagerly (please report it): {type(error).__name__}: {error}", stacklevel=4)
            return None
        return cls(graph_module, layouts, scheduled, glue, namespace, target, options, loop)

    def bind(self, library, variants: _Variants | None = None, examples: list | None = None):
        """The compiled callable: the launcher, else the glue. `examples`: the inputs
        compiled for, on which tuned kernels choose (NOTE(tune-at-compile))."""
        namespace = dict(self.namespace)
        tuned = []
        for kernel in self.schedule.kernels:
            namespace[f"k_{kernel.name}"] = library.kernel(kernel.name, len(kernel.buffers), len(kernel.sizes))
            if isinstance(namespace[f"k_{kernel.name}"], TunedKernel):  # NOTE(cpu-autotune)
                namespace[f"k_{kernel.name}"].bind(namespace, f"k_{kernel.name}")
                tuned.append(namespace[f"k_{kernel.name}"])
        namespace["eager"] = self.graph_module
        variants = variants if variants is not None else _Variants(self.graph_module, self.target, self.options)
        namespace["variant"] = variants
        exec(compile(self.glue, f"<pyjit inductor glue {self.graph_module.graph.name}>", "exec"), namespace)
        if tuned and examples is not None:
            self._tune(namespace["run"], tuned, examples)
        launcher = c_launcher(self.schedule, self.layouts, namespace["run"], namespace, self.options.reuse_buffers)
        run = launcher or namespace["run"]
        variants.add(self.layouts, run)
        run.kernels = self.schedule.kernels
        run.allocations = len(self.schedule.allocations)
        run.source = self.target.source(self.schedule.kernels)
        run.glue = self.glue
        run.graph_module = self.graph_module
        counters["inductor"]["graphs"] += 1
        counters["inductor"]["kernels"] += len(run.kernels)
        if self.loop is not None:  # NOTE(c-loops)
            run.run_loop = self.loop.bind(library)
            run.source = self.target.source(self.schedule.kernels + self.loop_kernels)
            counters["inductor"]["loops_in_c"] += 1
        if logs.enabled("output_code"):
            _output_code.debug("graph %s, inputs %s:\n%s\n%s\n%s", self.graph_module.graph.name, self.layouts,
                               "\n\n".join(map(str, run.kernels)), run.source, self.glue)
        return run

    def _tune(self, glue, tuned: list[TunedKernel], examples: list) -> None:
        """NOTE(tune-at-compile): tuned kernels whose sizes are all static choose once
        (NOTE(cpu-autotune)) and then stand in the glue's namespace as the chosen
        kernel, which is what lets the C launcher take the graph. So the glue runs once
        here, on the inputs compiled for, and the choices are made then: graphs are
        functional (the frontend writes a mutated input back after the graph), so the
        run writes nothing of the caller's. A kernel with size arguments chooses per
        size, at the calls, and keeps the graph on the glue."""
        if not all(kernel.static for kernel in tuned) or len(examples) != len(self.graph_module.graph.placeholders):
            return
        with capture_disabled():
            try:
                glue(*examples)
            except Exception:  # the same error comes from the first call, which then chooses as before
                return


class _Variants:
    """The compiled variants of one graph, by input layouts (NOTE(layouts))."""

    def __init__(self, graph_module, target, options: _Options):
        self.graph_module = graph_module
        self.target, self.options = target, options
        self.arrays = [node.name for node in graph_module.graph.placeholders if isinstance(node.meta, TensorMeta)]
        self.positions = [position for position, node in enumerate(graph_module.graph.placeholders)
                          if isinstance(node.meta, TensorMeta)]
        self.table: dict[tuple, object] = {}

    def add(self, layouts: dict[str, str], run) -> None:
        self.table[tuple(layouts[name] for name in self.arrays)] = run

    def __call__(self, *args):
        key = tuple(layout_of(args[position]) for position in self.positions)
        run = self.table.get(key)
        if run is None:
            plan = _Plan.make(self.graph_module, dict(zip(self.arrays, key)), "", self.target, self.options)
            library = _load([plan], self.target, self.options.autotune) if plan is not None else None
            run = plan.bind(library, self) if library is not None else self.graph_module
            self.table[key] = run
        if run is self.graph_module:
            return run(*args)
        return run(*args, _layouts_checked=True)
