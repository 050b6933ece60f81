// The kernel loader: shared libraries of generated kernels (pyjit/codegen/build.py
// compiles them) opened with dlopen, and their kernels as vectorcall objects.
#pragma once

#include <Python.h>

namespace pyjit {

PyTypeObject* kernel_library_type();
PyTypeObject* kernel_type();
// Creates both types; the NumPy API table must already be imported (guards_init does).
int kernel_loader_init();

}  // namespace pyjit
