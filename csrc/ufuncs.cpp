#include "ufuncs.h"

#include <cmath>

#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#define PY_UFUNC_UNIQUE_SYMBOL pyjit_UFUNC_API
#include <numpy/ndarraytypes.h>
#include <numpy/ufuncobject.h>

namespace pyjit {
namespace {

float erf_float(float x) { return std::erf(x); }
double erf_double(double x) { return std::erf(x); }
long double erf_long_double(long double x) { return std::erf(x); }

// NumPy keeps pointers to these tables for the life of the ufunc, so they are static.
PyUFuncGenericFunction erf_loops[] = {nullptr, nullptr, nullptr, nullptr};
void* erf_functions[] = {reinterpret_cast<void*>(&erf_float), reinterpret_cast<void*>(&erf_float),
                         reinterpret_cast<void*>(&erf_double), reinterpret_cast<void*>(&erf_long_double)};
char erf_types[] = {NPY_HALF, NPY_HALF, NPY_FLOAT, NPY_FLOAT, NPY_DOUBLE, NPY_DOUBLE,
                    NPY_LONGDOUBLE, NPY_LONGDOUBLE};

}  // namespace

PyObject* make_erf_ufunc() {
  if (PyUFunc_ImportUFuncAPI() < 0) return nullptr;
  // The generic loops are part of the imported API table, so they are filled in here.
  erf_loops[0] = PyUFunc_e_e_As_f_f;
  erf_loops[1] = PyUFunc_f_f;
  erf_loops[2] = PyUFunc_d_d;
  erf_loops[3] = PyUFunc_g_g;
  return PyUFunc_FromFuncAndData(erf_loops, erf_functions, erf_types, 4, 1, 1, PyUFunc_None, "erf",
                                 "erf(x, /, out=None, *, where=True, ...)\n\n"
                                 "The error function, elementwise, computed by the C library's erf.",
                                 0);
}

}  // namespace pyjit
