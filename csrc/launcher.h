// The launcher: a graph's kernels run from C, its inputs checked and its buffers
// allocated there (NOTE(c-launcher) in launcher.cpp).
#pragma once

#include <Python.h>

namespace pyjit {

PyTypeObject* launcher_type();
// Creates the type; the NumPy API table must already be imported (guards_init does).
int launcher_init_type();

}  // namespace pyjit
