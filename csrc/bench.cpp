#include "bench.h"

#include <chrono>
#include <vector>

namespace pyjit {

PyObject* bench(PyObject* fn, PyObject* args, Py_ssize_t n, Py_ssize_t warmup) {
  if (!PyTuple_Check(args)) {
    PyErr_SetString(PyExc_TypeError, "bench: args must be a tuple");
    return nullptr;
  }
  if (n < 0 || warmup < 0) {
    PyErr_SetString(PyExc_ValueError, "bench: n and warmup must be >= 0");
    return nullptr;
  }
  PyObject* const* argv = &PyTuple_GET_ITEM(args, 0);
  const Py_ssize_t argc = PyTuple_GET_SIZE(args);
  for (Py_ssize_t i = 0; i < warmup; ++i) {
    PyObject* result = PyObject_Vectorcall(fn, argv, argc, nullptr);
    if (!result) return nullptr;
    Py_DECREF(result);
  }
  std::vector<double> seconds(n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    auto start = std::chrono::steady_clock::now();
    PyObject* result = PyObject_Vectorcall(fn, argv, argc, nullptr);
    // Freeing the result is part of a call's cost, as it is for a caller that drops it.
    Py_XDECREF(result);
    auto stop = std::chrono::steady_clock::now();
    if (!result) return nullptr;
    seconds[i] = std::chrono::duration<double>(stop - start).count();
  }
  PyObject* list = PyList_New(n);
  for (Py_ssize_t i = 0; list && i < n; ++i) {
    PyObject* value = PyFloat_FromDouble(seconds[i]);
    if (!value) {
      Py_CLEAR(list);
      break;
    }
    PyList_SET_ITEM(list, i, value);
  }
  return list;
}

}  // namespace pyjit
