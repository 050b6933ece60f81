#include "kernel_loader.h"

#include <dlfcn.h>
#include <link.h>
#include <structmember.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

// The API table is defined in guards.cpp and imported by guards_init at module init.
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL pyjit_ARRAY_API
#define NO_IMPORT_ARRAY
#include <numpy/arrayobject.h>

#include "ref.h"

namespace pyjit {
namespace {

constexpr Py_ssize_t kMaxBuffers = kMaxKernelBuffers;
constexpr Py_ssize_t kMaxSizes = kMaxKernelSizes;

struct KernelLibraryObject {
  PyObject_HEAD
  void* handle;
  PyObject* path;  // str
};

struct KernelObject {
  PyObject_HEAD
  KernelFunction function;
  PyObject* library;  // keeps the code mapped while the kernel lives
  PyObject* name;
  Py_ssize_t num_buffers;
  Py_ssize_t num_sizes;  // -1: any number
  vectorcallfunc vectorcall;
};

PyTypeObject* g_library_type = nullptr;
PyTypeObject* g_kernel_type = nullptr;

KernelLibraryObject* as_library(PyObject* self) { return reinterpret_cast<KernelLibraryObject*>(self); }
KernelObject* as_kernel(PyObject* self) { return reinterpret_cast<KernelObject*>(self); }

std::vector<std::string> loaded_object_names() {
  std::vector<std::string> names;
  dl_iterate_phdr([](dl_phdr_info* info, size_t, void* data) {
    static_cast<std::vector<std::string>*>(data)->emplace_back(info->dlpi_name);
    return 0;
  }, &names);
  return names;
}

// NOTE(pinned-runtimes): a kernel library is dlclosed when its object dies, but the
// libraries it pulled into the process stay for good. OpenMP runtimes (libgomp) keep
// worker threads spinning in their own code after a parallel region; unmapping that
// code under them crashes the process. Dependencies loaded by this dlopen are promoted
// to RTLD_NODELETE (RTLD_NOLOAD only changes flags of an object already loaded).
void pin_new_dependencies(void* handle, const std::vector<std::string>& before) {
  link_map* self = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &self) != 0) self = nullptr;
  for (const std::string& name : loaded_object_names()) {
    if (name.empty() || (self && name == self->l_name) ||
        std::find(before.begin(), before.end(), name) != before.end()) {
      continue;
    }
    if (void* dependency = dlopen(name.c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)) {
      dlclose(dependency);
    }
  }
}

// NOTE(omp-wait-policy): libgomp reads OMP_WAIT_POLICY and GOMP_SPINCOUNT once, when
// the first kernel library pulls it in. Its default lets idle team threads spin for
// 300000 pauses (milliseconds), and on a machine where another process holds a core a
// spinning or descheduled team member stalls every later parallel region by a
// scheduler time slice: kernels of 0.1 ms took 8 ms on a 2-core machine while tests
// ran beside them. Fully passive threads cost a wake-up per region instead, which on
// that virtual machine is tens of microseconds: `x + 1` on 1M float32 took 95 us on two
// threads against 71 us on one. So, unless the user set either variable, threads are
// passive after a bounded spin of kOpenMPSpinCount pauses (about 30 us): a kernel
// called again soon finds its team awake (the same `x + 1`: 44 us, against NumPy's
// 72 us), and an idle thread gives its core up within microseconds.
// The defaults are in the C environment only while a kernel library is opened (when
// libgomp's constructor reads them), and taken out after: the user's environment
// (os.environ, what child processes inherit) never holds them.
constexpr const char* kOpenMPSpinCount = "1000";

class OpenMPDefaults {
 public:
  OpenMPDefaults() {
    if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
    if (std::getenv("GOMP_SPINCOUNT") == nullptr) spin_count_ = setenv("GOMP_SPINCOUNT", kOpenMPSpinCount, 0) == 0;
    wait_policy_ = setenv("OMP_WAIT_POLICY", "passive", 0) == 0;
  }
  ~OpenMPDefaults() {
    if (spin_count_) unsetenv("GOMP_SPINCOUNT");
    if (wait_policy_) unsetenv("OMP_WAIT_POLICY");
  }
  OpenMPDefaults(const OpenMPDefaults&) = delete;
  OpenMPDefaults& operator=(const OpenMPDefaults&) = delete;

 private:
  bool spin_count_ = false;
  bool wait_policy_ = false;
};

// Runs without the GIL: loading may take a while, and the loader's lock must never be
// waited for while holding the GIL.
void* open_library(const char* path, std::string* error) {
  std::vector<std::string> before = loaded_object_names();
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* message = dlerror();
    *error = message ? message : "dlopen failed";
    return nullptr;
  }
  pin_new_dependencies(handle, before);
  return handle;
}

PyObject* library_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  static const char* keywords[] = {"path", nullptr};
  PyObject* encoded = nullptr;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&:KernelLibrary", const_cast<char**>(keywords),
                                   PyUnicode_FSConverter, &encoded)) {
    return nullptr;
  }
  Ref path_bytes = Ref::steal(encoded);
  Ref path = Ref::steal(PyUnicode_DecodeFSDefault(PyBytes_AS_STRING(encoded)));
  if (!path) return nullptr;
  std::string error;
  void* handle = nullptr;
  {
    OpenMPDefaults defaults;  // NOTE(omp-wait-policy)
    PyThreadState* thread = PyEval_SaveThread();
    handle = open_library(PyBytes_AS_STRING(encoded), &error);
    PyEval_RestoreThread(thread);
  }
  if (!handle) {
    PyErr_SetString(PyExc_OSError, error.c_str());
    return nullptr;
  }
  PyObject* self = type->tp_alloc(type, 0);
  if (!self) {
    dlclose(handle);
    return nullptr;
  }
  as_library(self)->handle = handle;
  as_library(self)->path = path.release();
  return self;
}

void library_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  if (as_library(self)->handle) dlclose(as_library(self)->handle);
  Py_XDECREF(as_library(self)->path);
  type->tp_free(self);
  Py_DECREF(type);
}

PyObject* library_repr(PyObject* self) {
  return PyUnicode_FromFormat("<pyjit._C.KernelLibrary %R>", as_library(self)->path);
}

bool parse_count(PyObject* value, const char* what, Py_ssize_t maximum, Py_ssize_t* count) {
  *count = PyLong_AsSsize_t(value);
  if (*count == -1 && PyErr_Occurred()) return false;
  if (*count < 0 || *count > maximum) {
    PyErr_Format(PyExc_ValueError, "%s must be between 0 and %zd, not %zd", what, maximum, *count);
    return false;
  }
  return true;
}

bool check_arguments(const KernelObject* kernel, Py_ssize_t nargs, PyObject* kwnames) {
  if (kwnames && PyTuple_GET_SIZE(kwnames) > 0) {
    PyErr_Format(PyExc_TypeError, "kernel %R takes no keyword arguments", kernel->name);
    return false;
  }
  const Py_ssize_t num_sizes = nargs - kernel->num_buffers;
  if (num_sizes < 0 || (kernel->num_sizes >= 0 && num_sizes != kernel->num_sizes)) {
    if (kernel->num_sizes >= 0) {
      PyErr_Format(PyExc_TypeError, "kernel %R takes %zd array(s) and %zd size(s), %zd arguments given",
                   kernel->name, kernel->num_buffers, kernel->num_sizes, nargs);
    } else {
      PyErr_Format(PyExc_TypeError, "kernel %R takes %zd array(s) then its sizes, %zd arguments given",
                   kernel->name, kernel->num_buffers, nargs);
    }
    return false;
  }
  if (num_sizes > kMaxSizes) {
    PyErr_Format(PyExc_ValueError, "kernel %R was given %zd sizes; at most %zd are supported",
                 kernel->name, num_sizes, kMaxSizes);
    return false;
  }
  return true;
}

PyObject* kernel_call(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  const KernelObject* kernel = as_kernel(self);
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (!check_arguments(kernel, nargs, kwnames)) return nullptr;
  char* buffers[kMaxBuffers];
  int64_t sizes[kMaxSizes];
  for (Py_ssize_t i = 0; i < kernel->num_buffers; ++i) {
    if (!PyArray_Check(args[i])) {
      PyErr_Format(PyExc_TypeError, "kernel %R: argument %zd must be a numpy.ndarray, not %.200s",
                   kernel->name, i, Py_TYPE(args[i])->tp_name);
      return nullptr;
    }
    buffers[i] = PyArray_BYTES(reinterpret_cast<PyArrayObject*>(args[i]));
  }
  for (Py_ssize_t i = kernel->num_buffers; i < nargs; ++i) {
    const long long size = PyLong_AsLongLong(args[i]);
    if (size == -1 && PyErr_Occurred()) return nullptr;
    sizes[i - kernel->num_buffers] = size;
  }
  // The caller holds the arrays for the duration of the call; kernels run OpenMP threads.
  KernelFunction function = kernel->function;
  Py_BEGIN_ALLOW_THREADS
  function(buffers, sizes);
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

PyObject* kernel_repr(PyObject* self) {
  return PyUnicode_FromFormat("<pyjit._C.Kernel %R of %R>", as_kernel(self)->name,
                              as_library(as_kernel(self)->library)->path);
}

PyObject* kernel_num_sizes(PyObject* self, void*) {
  const Py_ssize_t num_sizes = as_kernel(self)->num_sizes;
  return num_sizes < 0 ? Py_NewRef(Py_None) : PyLong_FromSsize_t(num_sizes);
}

void kernel_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  Py_XDECREF(as_kernel(self)->name);
  Py_XDECREF(as_kernel(self)->library);
  type->tp_free(self);
  Py_DECREF(type);
}

PyObject* library_kernel(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* keywords[] = {"name", "num_buffers", "num_sizes", nullptr};
  PyObject *name, *buffers_object, *sizes_object = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "UO|O:kernel", const_cast<char**>(keywords),
                                   &name, &buffers_object, &sizes_object)) {
    return nullptr;
  }
  Py_ssize_t num_buffers, num_sizes = -1;
  if (!parse_count(buffers_object, "num_buffers", kMaxBuffers, &num_buffers)) return nullptr;
  if (sizes_object != Py_None && !parse_count(sizes_object, "num_sizes", kMaxSizes, &num_sizes)) {
    return nullptr;
  }
  Py_ssize_t length;
  const char* symbol_name = PyUnicode_AsUTF8AndSize(name, &length);
  if (!symbol_name) return nullptr;
  if (static_cast<size_t>(length) != strlen(symbol_name)) {
    PyErr_SetString(PyExc_ValueError, "kernel name contains a null character");
    return nullptr;
  }
  dlerror();
  void* symbol = dlsym(as_library(self)->handle, symbol_name);
  if (dlerror() || !symbol) {
    PyErr_Format(PyExc_AttributeError, "kernel library %R has no symbol %R", as_library(self)->path,
                 name);
    return nullptr;
  }
  KernelObject* kernel = PyObject_New(KernelObject, g_kernel_type);
  if (!kernel) return nullptr;
  kernel->function = reinterpret_cast<KernelFunction>(symbol);
  kernel->library = Py_NewRef(self);
  kernel->name = Py_NewRef(name);
  kernel->num_buffers = num_buffers;
  kernel->num_sizes = num_sizes;
  kernel->vectorcall = &kernel_call;
  return reinterpret_cast<PyObject*>(kernel);
}

PyMethodDef library_methods[] = {
    {"kernel", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&library_kernel)),
     METH_VARARGS | METH_KEYWORDS,
     "kernel(name, num_buffers, num_sizes=None) -> Kernel: the library's function `name`."},
    {nullptr, nullptr, 0, nullptr}};

PyMemberDef library_members[] = {
    {"path", T_OBJECT, offsetof(KernelLibraryObject, path), READONLY, "the path it was opened from"},
    {nullptr, 0, 0, 0, nullptr}};

PyType_Slot library_slots[] = {
    {Py_tp_doc, const_cast<char*>("KernelLibrary(path): a shared library of kernels, opened with "
                                  "dlopen(RTLD_NOW | RTLD_LOCAL) and closed when it dies.")},
    {Py_tp_new, reinterpret_cast<void*>(&library_new)},
    {Py_tp_dealloc, reinterpret_cast<void*>(&library_dealloc)},
    {Py_tp_repr, reinterpret_cast<void*>(&library_repr)},
    {Py_tp_methods, library_methods},
    {Py_tp_members, library_members},
    {0, nullptr}};

PyType_Spec library_spec = {"pyjit._C.KernelLibrary", sizeof(KernelLibraryObject), 0,
                            Py_TPFLAGS_DEFAULT, library_slots};

PyMemberDef kernel_members[] = {
    {"name", T_OBJECT, offsetof(KernelObject, name), READONLY, "the symbol's name"},
    {"library", T_OBJECT, offsetof(KernelObject, library), READONLY, "the KernelLibrary it came from"},
    {"num_buffers", T_PYSSIZET, offsetof(KernelObject, num_buffers), READONLY,
     "how many arrays lead its arguments"},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(KernelObject, vectorcall), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

PyGetSetDef kernel_getset[] = {
    {"num_sizes", kernel_num_sizes, nullptr, "how many sizes follow the arrays (None: any)", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyType_Slot kernel_slots[] = {
    {Py_tp_doc, const_cast<char*>("A kernel of a KernelLibrary: kernel(*arrays, *sizes) -> None.")},
    {Py_tp_call, reinterpret_cast<void*>(&PyVectorcall_Call)},
    {Py_tp_dealloc, reinterpret_cast<void*>(&kernel_dealloc)},
    {Py_tp_repr, reinterpret_cast<void*>(&kernel_repr)},
    {Py_tp_members, kernel_members},
    {Py_tp_getset, kernel_getset},
    {0, nullptr}};

PyType_Spec kernel_spec = {"pyjit._C.Kernel", sizeof(KernelObject), 0,
                           Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL |
                               Py_TPFLAGS_DISALLOW_INSTANTIATION,
                           kernel_slots};

}  // namespace

PyTypeObject* kernel_library_type() { return g_library_type; }
PyTypeObject* kernel_type() { return g_kernel_type; }

bool kernel_signature(PyObject* kernel, KernelFunction* function, Py_ssize_t* num_buffers,
                      Py_ssize_t* num_sizes) {
  if (Py_TYPE(kernel) != g_kernel_type) {
    PyErr_Format(PyExc_TypeError, "expected a pyjit._C.Kernel, not %.100s", Py_TYPE(kernel)->tp_name);
    return false;
  }
  *function = as_kernel(kernel)->function;
  *num_buffers = as_kernel(kernel)->num_buffers;
  *num_sizes = as_kernel(kernel)->num_sizes;
  return true;
}

int kernel_loader_init() {
  g_library_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&library_spec));
  g_kernel_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&kernel_spec));
  return g_library_type && g_kernel_type ? 0 : -1;
}

}  // namespace pyjit
