#include "launcher.h"

#include <structmember.h>

#include <cstdint>
#include <vector>

// The API table is defined in guards.cpp and imported by guards_init at module init.
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL pyjit_ARRAY_API
#define NO_IMPORT_ARRAY
#include <numpy/arrayobject.h>

#include "kernel_loader.h"
#include "ref.h"

namespace pyjit {
namespace {

// NOTE(c-launcher): a graph of static-shape, C-contiguous NumPy inputs whose steps are
// all kernels without size arguments runs from here, with no Python frame: each input's
// type, dtype, shape and contiguity checked, each buffer allocated before the first
// kernel that writes it and dropped after its last use, the kernels called (without the
// GIL, as Kernel calls), the outputs returned. Any other call (other inputs, keyword
// arguments) goes to the fallback, the generated glue (NOTE(glue)), which gives the
// same results. pyjit/backends/launch.py decides which graphs qualify.
struct ArrayShape {
  PyArray_Descr* dtype;  // owned
  std::vector<npy_intp> dims;
};

struct Step {
  KernelFunction function;
  std::vector<Py_ssize_t> slots;     // the kernel's buffers, in order
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
  std::vector<Step>* steps;
  std::vector<Py_ssize_t>* outputs;
  bool single;  // one output, returned as is (else a tuple)
};

PyTypeObject* g_type = nullptr;

LauncherObject* as_launcher(PyObject* self) { return reinterpret_cast<LauncherObject*>(self); }

bool matches(const ArrayShape& spec, PyObject* value) {
  if (Py_TYPE(value) != &PyArray_Type) return false;
  auto* array = reinterpret_cast<PyArrayObject*>(value);
  if (PyArray_NDIM(array) != static_cast<int>(spec.dims.size())) return false;
  const npy_intp* dims = PyArray_DIMS(array);
  for (size_t axis = 0; axis < spec.dims.size(); ++axis) {
    if (dims[axis] != spec.dims[axis]) return false;
  }
  if (!PyArray_IS_C_CONTIGUOUS(array)) return false;
  PyArray_Descr* dtype = PyArray_DESCR(array);
  return dtype == spec.dtype || PyArray_EquivTypes(dtype, spec.dtype);
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

PyObject* run(LauncherObject* launcher, PyObject* const* args) {
  const size_t num_inputs = launcher->inputs->size();
  Slots slots(num_inputs + launcher->buffers->size());
  for (size_t i = 0; i < num_inputs; ++i) slots[i] = Py_NewRef(args[i]);
  char* pointers[kMaxKernelBuffers];
  for (const Step& step : *launcher->steps) {
    for (Py_ssize_t slot : step.allocate) {
      const ArrayShape& spec = (*launcher->buffers)[slot - num_inputs];
      Py_INCREF(spec.dtype);  // PyArray_Empty steals it
      slots[slot] = PyArray_Empty(static_cast<int>(spec.dims.size()),
                                  const_cast<npy_intp*>(spec.dims.data()), spec.dtype, 0);
      if (!slots[slot]) return nullptr;
    }
    for (size_t i = 0; i < step.slots.size(); ++i) {
      pointers[i] = PyArray_BYTES(reinterpret_cast<PyArrayObject*>(slots[step.slots[i]]));
    }
    const int64_t no_sizes[1] = {0};
    KernelFunction function = step.function;
    Py_BEGIN_ALLOW_THREADS
    function(pointers, no_sizes);
    Py_END_ALLOW_THREADS
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
  for (Py_ssize_t i = 0; ours && i < nargs; ++i) ours = matches((*launcher->inputs)[i], args[i]);
  if (!ours) return PyObject_Vectorcall(launcher->fallback, args, nargsf, kwnames);
  return run(launcher, args);
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
    Ref dims = Ref::steal(PySequence_Fast(dims_object, "a shape must be a sequence of ints"));
    if (!dims) return false;
    for (Py_ssize_t axis = 0; axis < PySequence_Fast_GET_SIZE(dims.get()); ++axis) {
      npy_intp size = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(dims.get(), axis));
      if (size == -1 && PyErr_Occurred()) return false;
      if (size < 0) {
        PyErr_SetString(PyExc_ValueError, "a size must be >= 0");
        return false;
      }
      shapes->back().dims.push_back(size);
    }
  }
  return true;
}

bool parse_steps(PyObject* sequence, Py_ssize_t num_slots, PyObject* kernels, std::vector<Step>* steps) {
  Ref items = Ref::steal(PySequence_Fast(sequence, "steps must be a sequence"));
  if (!items) return false;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(items.get()); ++i) {
    PyObject *kernel, *slots, *allocate, *release;
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(items.get(), i), "OOOO:step", &kernel, &slots, &allocate,
                          &release)) {
      return false;
    }
    Step step{};
    Py_ssize_t num_buffers, num_sizes;
    if (!kernel_signature(kernel, &step.function, &num_buffers, &num_sizes)) return false;
    if (!parse_slots(slots, num_slots, &step.slots) || !parse_slots(allocate, num_slots, &step.allocate) ||
        !parse_slots(release, num_slots, &step.release)) {
      return false;
    }
    if (static_cast<Py_ssize_t>(step.slots.size()) != num_buffers || num_sizes > 0) {
      PyErr_Format(PyExc_ValueError, "kernel %R takes %zd arrays and no sizes; the step gives %zd arrays",
                   kernel, num_buffers, static_cast<Py_ssize_t>(step.slots.size()));
      return false;
    }
    if (PyList_Append(kernels, kernel) < 0) return false;
    steps->push_back(std::move(step));
  }
  return true;
}

int launcher_init(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* keywords[] = {"fallback", "inputs", "buffers", "steps", "outputs", nullptr};
  PyObject *fallback, *inputs, *buffers, *steps, *outputs;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOO:Launcher", const_cast<char**>(keywords), &fallback,
                                   &inputs, &buffers, &steps, &outputs)) {
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
  launcher->steps = new std::vector<Step>();
  launcher->outputs = new std::vector<Py_ssize_t>();
  if (!(launcher->kernels = PyList_New(0))) return -1;
  if (!parse_shapes(inputs, launcher->inputs) || !parse_shapes(buffers, launcher->buffers)) return -1;
  const Py_ssize_t num_slots = static_cast<Py_ssize_t>(launcher->inputs->size() + launcher->buffers->size());
  if (!parse_steps(steps, num_slots, launcher->kernels, launcher->steps)) return -1;
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
  delete launcher->steps;
  delete launcher->outputs;
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
  return g_type ? 0 : -1;
}

}  // namespace pyjit
