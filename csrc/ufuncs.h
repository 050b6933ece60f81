// NumPy ufuncs pyjit provides where NumPy has none (erf), so the eager path and the
// generated C kernels compute with the same libm functions.
#pragma once

#include <Python.h>

namespace pyjit {

// A new reference to the ufunc `erf` (loops for float16, float32, float64, long double),
// or nullptr with an exception set.
PyObject* make_erf_ufunc();

}  // namespace pyjit
