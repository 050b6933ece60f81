#include "cpython_compat.h"  // first: it defines Py_BUILD_CORE before Python.h

#include "compiled_function.h"

#include <structmember.h>

#include "eval_frame.h"
#include "ref.h"

namespace pyjit {
namespace {

// A Python-level wrapper would cost microseconds per call; this one costs two swaps of
// the thread's callback around a vectorcall.
struct CompiledFunctionObject {
  PyObject_HEAD
  PyObject* function;
  PyObject* callback;
  PyObject* dict;
  PyObject* weakrefs;
  vectorcallfunc vectorcall;
};

PyTypeObject* g_type = nullptr;

CompiledFunctionObject* as_compiled(PyObject* self) {
  return reinterpret_cast<CompiledFunctionObject*>(self);
}

PyObject* compiled_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf,
                              PyObject* kwnames) {
  CompiledFunctionObject* compiled = as_compiled(self);
  Ref previous = Ref::steal(set_eval_frame(compiled->callback));
  if (!previous) return nullptr;
  // Keep the function alive even if the call rebinds the wrapper's attributes.
  Ref function = Ref::borrow(compiled->function);
  PyObject* result = PyObject_Vectorcall(function.get(), args, nargsf, kwnames);
  compat::StashedException exception;
  Py_XDECREF(set_eval_frame(previous.get()));
  exception.restore();
  return result;
}

int compiled_init(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* keywords[] = {"fn", "callback", nullptr};
  PyObject *function, *callback;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:CompiledFunction",
                                   const_cast<char**>(keywords), &function, &callback)) {
    return -1;
  }
  if (!PyCallable_Check(function) || (callback != Py_None && !PyCallable_Check(callback))) {
    PyErr_SetString(PyExc_TypeError, "CompiledFunction(fn, callback) needs a callable fn and "
                                     "a callable or None callback");
    return -1;
  }
  CompiledFunctionObject* compiled = as_compiled(self);
  Py_XSETREF(compiled->function, Py_NewRef(function));
  Py_XSETREF(compiled->callback, Py_NewRef(callback));
  compiled->vectorcall = &compiled_vectorcall;
  PyObject* dict = PyObject_GenericGetDict(self, nullptr);
  if (!dict) return -1;
  int status = PyDict_SetItemString(dict, "__wrapped__", function);
  Py_DECREF(dict);
  return status;
}

PyObject* compiled_get(PyObject* self, PyObject* instance, PyObject*) {
  if (!instance || instance == Py_None) return Py_NewRef(self);
  return PyMethod_New(self, instance);
}

PyObject* compiled_repr(PyObject* self) {
  return PyUnicode_FromFormat("<pyjit compiled %R>", as_compiled(self)->function);
}

int compiled_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(as_compiled(self)->function);
  Py_VISIT(as_compiled(self)->callback);
  Py_VISIT(as_compiled(self)->dict);
  return 0;
}

int compiled_clear(PyObject* self) {
  Py_CLEAR(as_compiled(self)->function);
  Py_CLEAR(as_compiled(self)->callback);
  Py_CLEAR(as_compiled(self)->dict);
  return 0;
}

void compiled_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  if (as_compiled(self)->weakrefs) PyObject_ClearWeakRefs(self);
  compiled_clear(self);
  type->tp_free(self);
  Py_DECREF(type);
}

PyMemberDef compiled_members[] = {
    {"callback", T_OBJECT, offsetof(CompiledFunctionObject, callback), READONLY,
     "the frame-hook callback installed during each call"},
    {"__dictoffset__", T_PYSSIZET, offsetof(CompiledFunctionObject, dict), READONLY, nullptr},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(CompiledFunctionObject, weakrefs), READONLY,
     nullptr},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(CompiledFunctionObject, vectorcall), READONLY,
     nullptr},
    {nullptr, 0, 0, 0, nullptr}};

PyGetSetDef compiled_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyType_Slot compiled_slots[] = {
    {Py_tp_doc, const_cast<char*>("CompiledFunction(fn, callback): calls fn with callback "
                                  "installed as the thread's frame-hook callback.")},
    {Py_tp_init, reinterpret_cast<void*>(&compiled_init)},
    {Py_tp_new, reinterpret_cast<void*>(&PyType_GenericNew)},
    {Py_tp_call, reinterpret_cast<void*>(&PyVectorcall_Call)},
    {Py_tp_descr_get, reinterpret_cast<void*>(&compiled_get)},
    {Py_tp_repr, reinterpret_cast<void*>(&compiled_repr)},
    {Py_tp_traverse, reinterpret_cast<void*>(&compiled_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(&compiled_clear)},
    {Py_tp_dealloc, reinterpret_cast<void*>(&compiled_dealloc)},
    {Py_tp_members, compiled_members},
    {Py_tp_getset, compiled_getset},
    {0, nullptr}};

PyType_Spec compiled_spec = {"pyjit._C.CompiledFunction", sizeof(CompiledFunctionObject), 0,
                             Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
                             compiled_slots};

}  // namespace

PyTypeObject* compiled_function_type() { return g_type; }

int compiled_function_init() {
  g_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&compiled_spec));
  return g_type ? 0 : -1;
}

}  // namespace pyjit
