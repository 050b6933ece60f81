// The PEP 523 frame hook: per-thread callbacks and the FrameInfo they receive.
#pragma once

#include <Python.h>

#include "guards.h"

namespace pyjit {

// Installs `callback` (None removes it) for the calling thread and returns the previous
// callback or None (a new reference); nullptr with an exception set on bad input.
PyObject* set_eval_frame(PyObject* callback);
PyObject* get_eval_frame();  // new reference
// Whether this thread's callback has a `compiler` attribute that is `compiler`: the
// check of NOTE(compiler-guard) in pyjit/frontend/convert.py, run on every cache hit.
bool callback_compiler_is(PyObject* compiler);
bool hook_installed();

// The view a guard takes of a FrameInfo; false with a TypeError if `object` is none.
bool frame_info_view(PyObject* object, FrameView* view);

PyTypeObject* frame_info_type();
PyObject* skip_sentinel();  // borrowed

int eval_frame_init();

}  // namespace pyjit
