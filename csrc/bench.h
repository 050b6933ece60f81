// The native timing loop behind benchmarks/.
#pragma once

#include <Python.h>

namespace pyjit {

// Calls fn(*args) `warmup` times untimed, then `n` times; a list of the seconds each took.
PyObject* bench(PyObject* fn, PyObject* args, Py_ssize_t n, Py_ssize_t warmup);

}  // namespace pyjit
