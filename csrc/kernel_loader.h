// The kernel loader: shared libraries of generated kernels (pyjit/codegen/cpu/build.py
// compiles them) opened with dlopen, and their kernels as vectorcall objects.
#pragma once

#include <Python.h>

#include <cstdint>

namespace pyjit {

// The kernel ABI (see pyjit/_C.pyi): one data pointer per buffer, then the sizes.
using KernelFunction = void (*)(char* const* buffers, const int64_t* sizes);
// What one call passes at most; arguments live in fixed arrays on the stack.
constexpr Py_ssize_t kMaxKernelBuffers = 64;
constexpr Py_ssize_t kMaxKernelSizes = 512;

// A pyjit._C.Kernel's function and arity (num_sizes -1: any); false with TypeError set
// for anything else.
bool kernel_signature(PyObject* kernel, KernelFunction* function, Py_ssize_t* num_buffers,
                      Py_ssize_t* num_sizes);

PyTypeObject* kernel_library_type();
PyTypeObject* kernel_type();
// Creates both types; the NumPy API table must already be imported (guards_init does).
int kernel_loader_init();

}  // namespace pyjit
