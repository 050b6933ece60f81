#include "launcher.h"

#include <structmember.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

// The API table is defined in guards.cpp and imported by guards_init at module init.
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL pyjit_ARRAY_API
#define NO_IMPORT_ARRAY
#include <numpy/arrayobject.h>

#include "block_cache.h"
#include "kernel_loader.h"
#include "ref.h"

namespace pyjit {
namespace {

// NOTE(c-launcher): a graph of C-contiguous NumPy inputs whose steps are all kernels runs
// from here, with no Python frame: each input's type, dtype, shape and contiguity
// checked (a size symbol bound by the first axis it sizes, then compared), the size
// guards evaluated, each buffer allocated before the first kernel that writes it and
// dropped after its last use, the kernels called with their sizes (without the GIL, as
// Kernel calls), the outputs returned. Any other call (other inputs, keyword arguments)
// goes to the fallback, the generated glue (NOTE(glue)), which gives the same results.
// pyjit/codegen/cpu/launch.py decides which graphs qualify.
//
// NOTE(c-launcher-matmul): a step may also be a call of a NumPy function (the matmul
// ufunc) with `out=` a buffer allocated here, which the epilogue kernel after it may
// then write in place (NOTE(epilogue-in-place)): so `relu(x @ W + b)` is the checks,
// one BLAS call and one kernel, with no Python frame. NumPy's own loop runs (its type
// resolution, its BLAS call and its release of the GIL), on operands and an output of
// the layout its result would have (C-contiguous), so the bits are those of the eager
// product. `rows` views the first operand and the output as 2-D matrices of their rows
// first: one GEMM for a stack of matrices by one matrix (NOTE(flat-matmul)), where the
// first operand is C-contiguous (a view of it may not be), as the glue's matmul_rows.
//
// NOTE(c-launcher-views): a step may also take a view of a value the launcher holds:
// reshape (to the view's shape, static or size symbols), transpose (a permutation) or
// a basic index (a constant: ints, slices of ints, None, Ellipsis), made by the NumPy
// C function the eager op reaches (PyArray_Newshape, PyArray_Transpose, the array's
// subscript), so it is the eager view, or the eager copy where a reshape needs one. The
// attention of a transformer block (a product split into heads, transposed, multiplied
// per head, the heads merged back) so runs from here with no Python frame. Kernels never
// read such a value (the scheduler folds the views kernels read into their indexing);
// matrix products, outputs and later views do.
//
// NOTE(launcher-buffer-reuse): built with `reuse_buffers` (the modes that reuse buffers:
// NOTE(buffer-reuse) in pyjit/codegen/glue.py), the launcher keeps the array it made
// for each buffer and takes it again at the next call when its reference count says
// nobody else holds it (not the caller, not a view of it, not a concurrent call still
// running) and its shape is this call's; otherwise it allocates, as the glue's pools do.
// So `reduce-overhead` saves the allocation on the C path too, where leaving it to the
// glue cost a Python frame per call.

// A size: >= 0 a static size, < 0 the size symbol number -(size + 1).
using Size = npy_intp;
constexpr Py_ssize_t kMaxSymbols = 64;
constexpr int kMaxCallArrays = 8;  // a call step's operands and output

struct ArrayShape {
  PyArray_Descr* dtype;  // owned
  // Per axis, the sizes it must equal: an input's axis binds each symbol the first time
  // one is met and must equal it after; a buffer's axis has one size.
  std::vector<std::vector<Size>> axes;
};

enum class Relation { Eq, Ne, Lt, Le, Gt, Ge };

struct SizeGuard {  // lhs <relation> rhs, over bound symbols and constants
  Size lhs;
  Relation relation;
  Size rhs;
};

enum class View { None, Reshape, Transpose, Index };  // NOTE(c-launcher-views)

struct Step {
  KernelFunction function;
  PyObject* call = nullptr;  // a call step's function (borrowed: the launcher's kernels list holds it)
  bool rows = false;         // a call step's NOTE(flat-matmul) form
  View view = View::None;
  PyObject* index = nullptr;         // an Index view's index (borrowed, as `call`)
  std::vector<Py_ssize_t> slots;     // the kernel's buffers, in order; a view's source and result
  std::vector<Size> sizes;           // the kernel's size arguments; a Reshape's shape, a Transpose's axes
  std::vector<Py_ssize_t> allocate;  // buffer slots first written here
  std::vector<Py_ssize_t> release;   // slots last used here
};

struct LauncherObject {
  PyObject_HEAD
  PyObject* fallback;
  PyObject* kernels;  // the steps' Kernel objects: they keep their libraries mapped
  PyObject* dict;
  vectorcallfunc vectorcall;
  std::vector<ArrayShape>* inputs;   // slots 0 .. len(inputs) - 1
  std::vector<ArrayShape>* buffers;  // slots len(inputs) ..
  std::vector<SizeGuard>* guards;
  std::vector<Step>* steps;
  std::vector<Py_ssize_t>* outputs;
  std::vector<PyObject*>* kept;  // per buffer, the array last made for it (NOTE(launcher-buffer-reuse)); or null
  bool single;  // one output, returned as is (else a tuple)
};

PyTypeObject* g_type = nullptr;
PyObject* g_out_keyword = nullptr;  // ("out",): a call step's keyword names

LauncherObject* as_launcher(PyObject* self) { return reinterpret_cast<LauncherObject*>(self); }

// The symbols' values for one call; a symbol is bound by the first input axis it sizes.
struct Symbols {
  npy_intp values[kMaxSymbols];
  bool bound[kMaxSymbols] = {};

  npy_intp value(Size size) const { return size >= 0 ? size : values[-size - 1]; }
  bool match(Size size, npy_intp actual) {
    if (size >= 0) return actual == size;
    const Py_ssize_t symbol = -size - 1;
    if (!bound[symbol]) {
      bound[symbol] = true;
      values[symbol] = actual;
      return true;
    }
    return values[symbol] == actual;
  }
};

bool matches(const ArrayShape& spec, PyObject* value, Symbols* symbols) {
  if (Py_TYPE(value) != &PyArray_Type) return false;
  auto* array = reinterpret_cast<PyArrayObject*>(value);
  if (PyArray_NDIM(array) != static_cast<int>(spec.axes.size())) return false;
  const npy_intp* dims = PyArray_DIMS(array);
  for (size_t axis = 0; axis < spec.axes.size(); ++axis) {
    for (Size size : spec.axes[axis]) {
      if (!symbols->match(size, dims[axis])) return false;
    }
  }
  if (!PyArray_IS_C_CONTIGUOUS(array)) return false;
  PyArray_Descr* dtype = PyArray_DESCR(array);
  return dtype == spec.dtype || PyArray_EquivTypes(dtype, spec.dtype);
}

bool holds(const SizeGuard& guard, const Symbols& symbols) {
  const npy_intp lhs = symbols.value(guard.lhs), rhs = symbols.value(guard.rhs);
  switch (guard.relation) {
    case Relation::Eq: return lhs == rhs;
    case Relation::Ne: return lhs != rhs;
    case Relation::Lt: return lhs < rhs;
    case Relation::Le: return lhs <= rhs;
    case Relation::Gt: return lhs > rhs;
    case Relation::Ge: return lhs >= rhs;
  }
  return false;
}

// Slots hold owned references (inputs too), so releasing is one decref either way.
class Slots {
 public:
  explicit Slots(size_t count) : values_(count, nullptr) {}
  ~Slots() {
    for (PyObject* value : values_) Py_XDECREF(value);
  }
  PyObject*& operator[](Py_ssize_t slot) { return values_[slot]; }

 private:
  std::vector<PyObject*> values_;
};

PyObject* allocate(const ArrayShape& spec, const Symbols& symbols, PyObject** kept) {
  const int ndim = static_cast<int>(spec.axes.size());
  npy_intp dims[NPY_MAXDIMS];
  for (int axis = 0; axis < ndim; ++axis) dims[axis] = symbols.value(spec.axes[axis][0]);
  if (kept && *kept && Py_REFCNT(*kept) == 1 &&
      std::equal(dims, dims + ndim, PyArray_DIMS(reinterpret_cast<PyArrayObject*>(*kept)))) {
    return Py_NewRef(*kept);
  }
  Py_INCREF(spec.dtype);  // empty_array steals it
  PyObject* array = empty_array(ndim, dims, reinterpret_cast<PyObject*>(spec.dtype));
  if (array && kept) Py_XSETREF(*kept, Py_NewRef(array));
  return array;
}

// A C-contiguous array viewed as the 2-D matrix of its rows (a new reference).
PyObject* rows_view(PyObject* object) {
  auto* array = reinterpret_cast<PyArrayObject*>(object);
  const int ndim = PyArray_NDIM(array);
  npy_intp dims[2] = {1, PyArray_DIMS(array)[ndim - 1]};
  for (int axis = 0; axis < ndim - 1; ++axis) dims[0] *= PyArray_DIMS(array)[axis];
  PyArray_Dims shape = {dims, 2};
  return PyArray_Newshape(array, &shape, NPY_CORDER);
}

// call(*operands, out=output), the output the step's last slot (NOTE(c-launcher-matmul)).
bool call_into(const Step& step, Slots& slots) {
  const size_t count = step.slots.size();
  PyObject* args[kMaxCallArrays];
  for (size_t i = 0; i < count; ++i) args[i] = slots[step.slots[i]];
  Ref first, output;
  if (step.rows && PyArray_IS_C_CONTIGUOUS(reinterpret_cast<PyArrayObject*>(args[0]))) {
    if (!(first = Ref::steal(rows_view(args[0]))) || !(output = Ref::steal(rows_view(args[count - 1])))) return false;
    args[0] = first.get();
    args[count - 1] = output.get();
  }
  Ref result = Ref::steal(PyObject_Vectorcall(step.call, args, count - 1, g_out_keyword));
  return static_cast<bool>(result);
}

// The view a view step makes of `source` (a new reference; NOTE(c-launcher-views)).
PyObject* view_of(const Step& step, PyObject* source, const Symbols& symbols) {
  auto* array = reinterpret_cast<PyArrayObject*>(source);
  npy_intp values[NPY_MAXDIMS];
  for (size_t i = 0; i < step.sizes.size(); ++i) values[i] = symbols.value(step.sizes[i]);
  PyArray_Dims dims = {values, static_cast<int>(step.sizes.size())};
  switch (step.view) {
    case View::Reshape: return PyArray_Newshape(array, &dims, NPY_CORDER);
    case View::Transpose: return PyArray_Transpose(array, &dims);
    case View::Index: return PyObject_GetItem(source, step.index);
    case View::None: break;
  }
  PyErr_SetString(PyExc_SystemError, "a launcher step that is no view");
  return nullptr;
}

PyObject* run(LauncherObject* launcher, PyObject* const* args, const Symbols& symbols) {
  const size_t num_inputs = launcher->inputs->size();
  Slots slots(num_inputs + launcher->buffers->size());
  for (size_t i = 0; i < num_inputs; ++i) slots[i] = Py_NewRef(args[i]);
  char* pointers[kMaxKernelBuffers];
  int64_t sizes[kMaxKernelSizes];
  for (const Step& step : *launcher->steps) {
    for (Py_ssize_t slot : step.allocate) {
      const size_t buffer = slot - num_inputs;
      PyObject** kept = launcher->kept ? &(*launcher->kept)[buffer] : nullptr;
      if (!(slots[slot] = allocate((*launcher->buffers)[buffer], symbols, kept))) return nullptr;
    }
    if (step.view != View::None) {
      if (!(slots[step.slots[1]] = view_of(step, slots[step.slots[0]], symbols))) return nullptr;
    } else if (step.call) {
      if (!call_into(step, slots)) return nullptr;
    } else {
      for (size_t i = 0; i < step.slots.size(); ++i) {
        pointers[i] = PyArray_BYTES(reinterpret_cast<PyArrayObject*>(slots[step.slots[i]]));
      }
      for (size_t i = 0; i < step.sizes.size(); ++i) sizes[i] = symbols.value(step.sizes[i]);
      KernelFunction function = step.function;
      Py_BEGIN_ALLOW_THREADS
      function(pointers, sizes);
      Py_END_ALLOW_THREADS
    }
    for (Py_ssize_t slot : step.release) Py_CLEAR(slots[slot]);
  }
  if (launcher->single) return Py_NewRef(slots[(*launcher->outputs)[0]]);
  PyObject* result = PyTuple_New(static_cast<Py_ssize_t>(launcher->outputs->size()));
  if (!result) return nullptr;
  for (size_t i = 0; i < launcher->outputs->size(); ++i) {
    PyTuple_SET_ITEM(result, static_cast<Py_ssize_t>(i), Py_NewRef(slots[(*launcher->outputs)[i]]));
  }
  return result;
}

PyObject* launcher_call(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  LauncherObject* launcher = as_launcher(self);
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  bool ours = (!kwnames || PyTuple_GET_SIZE(kwnames) == 0) &&
              nargs == static_cast<Py_ssize_t>(launcher->inputs->size());
  Symbols symbols;
  for (Py_ssize_t i = 0; ours && i < nargs; ++i) ours = matches((*launcher->inputs)[i], args[i], &symbols);
  for (size_t i = 0; ours && i < launcher->guards->size(); ++i) ours = holds((*launcher->guards)[i], symbols);
  if (!ours) return PyObject_Vectorcall(launcher->fallback, args, nargsf, kwnames);
  return run(launcher, args, symbols);
}

// -- construction -----------------------------------------------------------------------
bool parse_slots(PyObject* sequence, Py_ssize_t limit, std::vector<Py_ssize_t>* slots) {
  Ref items = Ref::steal(PySequence_Fast(sequence, "slots must be a sequence of ints"));
  if (!items) return false;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(items.get()); ++i) {
    Py_ssize_t slot = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(items.get(), i));
    if (slot == -1 && PyErr_Occurred()) return false;
    if (slot < 0 || slot >= limit) {
      PyErr_Format(PyExc_ValueError, "slot %zd is out of range (0 to %zd)", slot, limit - 1);
      return false;
    }
    slots->push_back(slot);
  }
  return true;
}

bool parse_size(PyObject* item, Size* size) {
  *size = PyLong_AsSsize_t(item);
  if (*size == -1 && PyErr_Occurred()) return false;
  if (*size < -kMaxSymbols) {
    PyErr_Format(PyExc_ValueError, "at most %zd size symbols", kMaxSymbols);
    return false;
  }
  return true;
}

// A sequence of sizes (an int alone is one size).
bool parse_sizes(PyObject* object, std::vector<Size>* sizes) {
  if (PyLong_Check(object)) {
    sizes->emplace_back();
    return parse_size(object, &sizes->back());
  }
  Ref items = Ref::steal(PySequence_Fast(object, "sizes must be ints or sequences of ints"));
  if (!items) return false;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(items.get()); ++i) {
    sizes->emplace_back();
    if (!parse_size(PySequence_Fast_GET_ITEM(items.get(), i), &sizes->back())) return false;
  }
  return true;
}

bool parse_shapes(PyObject* sequence, std::vector<ArrayShape>* shapes) {
  Ref items = Ref::steal(PySequence_Fast(sequence, "array shapes must be a sequence"));
  if (!items) return false;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(items.get()); ++i) {
    PyObject *dtype_object, *dims_object;
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(items.get(), i), "OO:array shape", &dtype_object,
                          &dims_object)) {
      return false;
    }
    ArrayShape shape{nullptr, {}};
    if (!PyArray_DescrConverter(dtype_object, &shape.dtype)) return false;
    shapes->push_back(shape);  // owns the dtype from here: launcher_dealloc releases it
    Ref dims = Ref::steal(PySequence_Fast(dims_object, "a shape must be a sequence"));
    if (!dims) return false;
    if (PySequence_Fast_GET_SIZE(dims.get()) > NPY_MAXDIMS) {
      PyErr_SetString(PyExc_ValueError, "too many dimensions");
      return false;
    }
    for (Py_ssize_t axis = 0; axis < PySequence_Fast_GET_SIZE(dims.get()); ++axis) {
      shapes->back().axes.emplace_back();
      if (!parse_sizes(PySequence_Fast_GET_ITEM(dims.get(), axis), &shapes->back().axes.back())) return false;
      if (shapes->back().axes.back().empty()) {
        PyErr_SetString(PyExc_ValueError, "an axis needs a size");
        return false;
      }
    }
  }
  return true;
}

bool parse_guards(PyObject* sequence, std::vector<SizeGuard>* guards) {
  static const char* const names[] = {"==", "!=", "<", "<=", ">", ">="};
  Ref items = Ref::steal(PySequence_Fast(sequence, "size guards must be a sequence"));
  if (!items) return false;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(items.get()); ++i) {
    PyObject *lhs, *rhs;
    const char* relation;
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(items.get(), i), "OsO:size guard", &lhs, &relation, &rhs)) {
      return false;
    }
    SizeGuard guard{};
    if (!parse_size(lhs, &guard.lhs) || !parse_size(rhs, &guard.rhs)) return false;
    const auto* found = std::find_if(std::begin(names), std::end(names),
                                     [relation](const char* name) { return std::strcmp(name, relation) == 0; });
    if (found == std::end(names)) {
      PyErr_Format(PyExc_ValueError, "unknown relation %s", relation);
      return false;
    }
    guard.relation = static_cast<Relation>(found - std::begin(names));
    guards->push_back(guard);
  }
  return true;
}

// A call step: (function, slots, rows), the operands' slots then the output's
// (NOTE(c-launcher-matmul)).
bool parse_call(PyObject* function, PyObject* slots, PyObject* rows, Py_ssize_t num_slots, Step* step) {
  if (!PyCallable_Check(function)) {
    PyErr_Format(PyExc_TypeError, "a step's function must be a pyjit._C.Kernel or callable, not %.100s",
                 Py_TYPE(function)->tp_name);
    return false;
  }
  const int flat = PyObject_IsTrue(rows);
  if (flat < 0 || !parse_slots(slots, num_slots, &step->slots)) return false;
  if (step->slots.size() < 2 || step->slots.size() > static_cast<size_t>(kMaxCallArrays)) {
    PyErr_Format(PyExc_ValueError, "a call step takes 1 to %d operands and an output", kMaxCallArrays - 1);
    return false;
  }
  step->call = function;
  step->rows = flat != 0;
  return true;
}

// A view step: (name, (source, result), parameters): "reshape" and its shape, "transpose"
// and its axes, or "getitem" and its index (NOTE(c-launcher-views)).
bool parse_view(PyObject* name, PyObject* slots, PyObject* parameters, Py_ssize_t num_slots, Step* step) {
  static const char* const names[] = {"reshape", "transpose", "getitem"};
  const char* text = PyUnicode_AsUTF8(name);
  if (!text || !parse_slots(slots, num_slots, &step->slots)) return false;
  const auto* found = std::find_if(std::begin(names), std::end(names),
                                   [text](const char* each) { return std::strcmp(each, text) == 0; });
  if (found == std::end(names) || step->slots.size() != 2) {
    PyErr_Format(PyExc_ValueError, "a view step is reshape, transpose or getitem of one slot into another, not %R",
                 name);
    return false;
  }
  step->view = static_cast<View>(found - std::begin(names) + 1);
  if (step->view == View::Index) {
    step->index = parameters;
    return true;
  }
  if (!parse_sizes(parameters, &step->sizes)) return false;
  const bool axes_ok = std::all_of(step->sizes.begin(), step->sizes.end(),
                                   [step](Size size) { return step->view == View::Reshape || size >= 0; });
  if (step->sizes.size() > NPY_MAXDIMS || !axes_ok) {
    PyErr_SetString(PyExc_ValueError, "a view's shape has too many dimensions, or a transpose a symbolic axis");
    return false;
  }
  return true;
}

bool parse_kernel(PyObject* kernel, PyObject* slots, PyObject* sizes, Py_ssize_t num_slots, Step* step) {
  Py_ssize_t num_buffers, num_sizes;
  if (!kernel_signature(kernel, &step->function, &num_buffers, &num_sizes) ||
      !parse_slots(slots, num_slots, &step->slots) || !parse_sizes(sizes, &step->sizes)) {
    return false;
  }
  const auto given_sizes = static_cast<Py_ssize_t>(step->sizes.size());
  if (static_cast<Py_ssize_t>(step->slots.size()) != num_buffers ||
      (num_sizes >= 0 ? given_sizes != num_sizes : given_sizes > kMaxKernelSizes)) {
    PyErr_Format(PyExc_ValueError, "kernel %R takes %zd arrays and %zd sizes; the step gives %zd and %zd", kernel,
                 num_buffers, num_sizes, static_cast<Py_ssize_t>(step->slots.size()), given_sizes);
    return false;
  }
  return true;
}

bool parse_steps(PyObject* sequence, Py_ssize_t num_slots, PyObject* kernels, std::vector<Step>* steps) {
  Ref items = Ref::steal(PySequence_Fast(sequence, "steps must be a sequence"));
  if (!items) return false;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(items.get()); ++i) {
    PyObject *kernel, *slots, *sizes, *allocate, *release;
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(items.get(), i), "OOOOO:step", &kernel, &slots, &sizes,
                          &allocate, &release)) {
      return false;
    }
    Step step{};
    bool parsed;
    if (Py_TYPE(kernel) == kernel_type()) {
      parsed = parse_kernel(kernel, slots, sizes, num_slots, &step);
    } else if (PyUnicode_Check(kernel)) {
      parsed = parse_view(kernel, slots, sizes, num_slots, &step);
    } else {
      parsed = parse_call(kernel, slots, sizes, num_slots, &step);
    }
    if (!parsed || !parse_slots(allocate, num_slots, &step.allocate) ||
        !parse_slots(release, num_slots, &step.release)) {
      return false;
    }
    if (PyList_Append(kernels, kernel) < 0 || (step.index && PyList_Append(kernels, step.index) < 0)) return false;
    steps->push_back(std::move(step));
  }
  return true;
}

// Every symbol a buffer, guard or step reads is bound by an input axis.
bool symbols_bound(const LauncherObject& launcher) {
  bool bound[kMaxSymbols] = {};
  for (const ArrayShape& input : *launcher.inputs) {
    for (const auto& axis : input.axes) {
      for (Size size : axis) {
        if (size < 0) bound[-size - 1] = true;
      }
    }
  }
  auto known = [&bound](Size size) { return size >= 0 || bound[-size - 1]; };
  bool ok = true;
  for (const ArrayShape& buffer : *launcher.buffers) {
    for (const auto& axis : buffer.axes) ok = ok && axis.size() == 1 && known(axis[0]);
  }
  for (const SizeGuard& guard : *launcher.guards) ok = ok && known(guard.lhs) && known(guard.rhs);
  for (const Step& step : *launcher.steps) ok = ok && std::all_of(step.sizes.begin(), step.sizes.end(), known);
  if (!ok) PyErr_SetString(PyExc_ValueError, "a buffer, guard or step reads a size symbol no input binds");
  return ok;
}

int launcher_init(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* keywords[] = {"fallback", "inputs", "buffers", "steps", "outputs", "guards", "reuse_buffers",
                                   nullptr};
  PyObject *fallback, *inputs, *buffers, *steps, *outputs, *guards = nullptr;
  int reuse_buffers = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOO|O$p:Launcher", const_cast<char**>(keywords), &fallback,
                                   &inputs, &buffers, &steps, &outputs, &guards, &reuse_buffers)) {
    return -1;
  }
  LauncherObject* launcher = as_launcher(self);
  if (launcher->steps) {
    PyErr_SetString(PyExc_TypeError, "a Launcher is initialized once");
    return -1;
  }
  if (!PyCallable_Check(fallback)) {
    PyErr_SetString(PyExc_TypeError, "a Launcher's fallback must be callable");
    return -1;
  }
  launcher->fallback = Py_NewRef(fallback);
  launcher->inputs = new std::vector<ArrayShape>();
  launcher->buffers = new std::vector<ArrayShape>();
  launcher->guards = new std::vector<SizeGuard>();
  launcher->steps = new std::vector<Step>();
  launcher->outputs = new std::vector<Py_ssize_t>();
  if (!(launcher->kernels = PyList_New(0))) return -1;
  if (!parse_shapes(inputs, launcher->inputs) || !parse_shapes(buffers, launcher->buffers) ||
      (guards && !parse_guards(guards, launcher->guards))) {
    return -1;
  }
  if (reuse_buffers) launcher->kept = new std::vector<PyObject*>(launcher->buffers->size(), nullptr);
  const Py_ssize_t num_slots = static_cast<Py_ssize_t>(launcher->inputs->size() + launcher->buffers->size());
  if (!parse_steps(steps, num_slots, launcher->kernels, launcher->steps)) return -1;
  if (!symbols_bound(*launcher)) return -1;
  launcher->single = PyLong_Check(outputs);
  if (launcher->single) {
    Ref one = Ref::steal(PyTuple_Pack(1, outputs));
    if (!one || !parse_slots(one.get(), num_slots, launcher->outputs)) return -1;
  } else if (!parse_slots(outputs, num_slots, launcher->outputs)) {
    return -1;
  }
  launcher->vectorcall = &launcher_call;
  return 0;
}

void release_shapes(std::vector<ArrayShape>* shapes) {
  if (!shapes) return;
  for (ArrayShape& shape : *shapes) Py_XDECREF(shape.dtype);
  delete shapes;
}

int launcher_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(as_launcher(self)->fallback);
  Py_VISIT(as_launcher(self)->dict);
  Py_VISIT(Py_TYPE(self));
  return 0;
}

int launcher_clear(PyObject* self) {
  Py_CLEAR(as_launcher(self)->fallback);
  Py_CLEAR(as_launcher(self)->dict);
  return 0;
}

void launcher_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  LauncherObject* launcher = as_launcher(self);
  launcher_clear(self);
  Py_CLEAR(launcher->kernels);
  release_shapes(launcher->inputs);
  release_shapes(launcher->buffers);
  delete launcher->guards;
  delete launcher->steps;
  delete launcher->outputs;
  if (launcher->kept) {
    for (PyObject* array : *launcher->kept) Py_XDECREF(array);
    delete launcher->kept;
  }
  type->tp_free(self);
  Py_DECREF(type);
}

PyMemberDef launcher_members[] = {
    {"fallback", T_OBJECT, offsetof(LauncherObject, fallback), READONLY, "what runs other inputs"},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(LauncherObject, vectorcall), READONLY, nullptr},
    {"__dictoffset__", T_PYSSIZET, offsetof(LauncherObject, dict), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

PyGetSetDef launcher_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyType_Slot launcher_slots[] = {
    {Py_tp_doc, const_cast<char*>("Launcher(fallback, inputs, buffers, steps, outputs): runs a graph's "
                                  "kernels from C (see pyjit/_C.pyi).")},
    {Py_tp_new, reinterpret_cast<void*>(&PyType_GenericNew)},
    {Py_tp_init, reinterpret_cast<void*>(&launcher_init)},
    {Py_tp_call, reinterpret_cast<void*>(&PyVectorcall_Call)},
    {Py_tp_dealloc, reinterpret_cast<void*>(&launcher_dealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(&launcher_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(&launcher_clear)},
    {Py_tp_members, launcher_members},
    {Py_tp_getset, launcher_getset},
    {0, nullptr}};

PyType_Spec launcher_spec = {"pyjit._C.Launcher", sizeof(LauncherObject), 0,
                             Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC,
                             launcher_slots};

}  // namespace

PyTypeObject* launcher_type() { return g_type; }

int launcher_init_type() {
  g_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&launcher_spec));
  g_out_keyword = Py_BuildValue("(s)", "out");
  return g_type && g_out_keyword ? 0 : -1;
}

}  // namespace pyjit
