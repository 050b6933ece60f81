// pyjit.compile's wrapper as a C callable: installs a frame-hook callback for each call.
#pragma once

#include <Python.h>

namespace pyjit {

PyTypeObject* compiled_function_type();
int compiled_function_init();

}  // namespace pyjit
