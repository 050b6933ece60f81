// NOTE(cpython-compat): the one file that knows CPython's private frame layout.
//
// pyjit supports CPython 3.11, 3.12 and 3.13. Everything that differs between them
// (f_code / f_executable, f_func / f_funcobj, prev_instr / instr_ptr, the names of the
// co_extra API, how to hold an exception) is wrapped here. A file that includes it does
// so first, before any other header, because it defines Py_BUILD_CORE.
//
// How a transformed code runs without copying private CPython functions: the frame
// hook receives a frame that CPython has already pushed and filled with the bound
// arguments. pyjit calls the transformed code as an ordinary function with those
// arguments, then hands the original frame back to CPython's own evaluator with its
// code swapped for a one-instruction stub (`RETURN_VALUE`, same locals layout) and the
// result pushed on its value stack. CPython then unlinks, clears and pops the frame
// exactly as for any return -- on 3.11 its caller pops it, on 3.12 and 3.13 the
// evaluator does -- so no version's frame-teardown code is duplicated here.
#pragma once

#define Py_BUILD_CORE 1
#include <Python.h>

#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x030E0000
#error "pyjit knows the frame layout of CPython 3.11, 3.12 and 3.13 only; add this version here"
#endif
#ifdef Py_GIL_DISABLED
#error "pyjit's frame hook relies on the GIL; free-threaded CPython is not supported"
#endif

#include <internal/pycore_frame.h>

namespace pyjit::compat {

using Frame = _PyInterpreterFrame;
using EvalFrameFunction = _PyFrameEvalFunction;

inline PyCodeObject* frame_code(Frame* frame) {
#if PY_VERSION_HEX >= 0x030D0000
  return reinterpret_cast<PyCodeObject*>(frame->f_executable);
#else
  return frame->f_code;
#endif
}

inline PyFunctionObject* frame_function(Frame* frame) {
#if PY_VERSION_HEX >= 0x030C0000
  return reinterpret_cast<PyFunctionObject*>(frame->f_funcobj);
#else
  return frame->f_func;
#endif
}

inline PyObject* frame_globals(Frame* frame) { return frame->f_globals; }
inline PyObject* frame_builtins(Frame* frame) { return frame->f_builtins; }
inline PyObject* const* frame_localsplus(Frame* frame) { return frame->localsplus; }

// A function call's frame, as opposed to a generator resuming or a module / class body.
inline bool frame_is_function_call(Frame* frame) {
  return frame->owner == FRAME_OWNED_BY_THREAD && frame->f_locals == nullptr;
}

inline PyObject* eval_default(PyThreadState* tstate, Frame* frame, int throw_flag) {
  return _PyEval_EvalFrameDefault(tstate, frame, throw_flag);
}

// See NOTE(cpython-compat). `stub` has the original code's locals layout and a stack of
// at least one slot; `result` is stolen. Returns what CPython's evaluator returns.
inline PyObject* finish_frame_returning(PyThreadState* tstate, Frame* frame, PyCodeObject* stub,
                                        PyObject* result) {
  Py_INCREF(stub);
#if PY_VERSION_HEX >= 0x030D0000
  Py_SETREF(frame->f_executable, reinterpret_cast<PyObject*>(stub));
  frame->instr_ptr = _PyCode_CODE(stub);
#else
  Py_SETREF(frame->f_code, stub);
  frame->prev_instr = _PyCode_CODE(stub) - 1;
#endif
  frame->localsplus[frame->stacktop++] = result;
  return _PyEval_EvalFrameDefault(tstate, frame, 0);
}

inline EvalFrameFunction interpreter_eval_frame() {
  return _PyInterpreterState_GetEvalFrameFunc(PyInterpreterState_Get());
}

// Setting CPython's own evaluator back re-enables its inlined Python-to-Python calls.
inline void set_interpreter_eval_frame(EvalFrameFunction function) {
  _PyInterpreterState_SetEvalFrameFunc(PyInterpreterState_Get(),
                                       function ? function : _PyEval_EvalFrameDefault);
}

inline Py_ssize_t request_code_extra_index(freefunc free_extra) {
#if PY_VERSION_HEX >= 0x030C0000
  return PyUnstable_Eval_RequestCodeExtraIndex(free_extra);
#else
  return _PyEval_RequestCodeExtraIndex(free_extra);
#endif
}

inline void* code_extra(PyCodeObject* code, Py_ssize_t index) {
  void* extra = nullptr;
#if PY_VERSION_HEX >= 0x030C0000
  PyUnstable_Code_GetExtra(reinterpret_cast<PyObject*>(code), index, &extra);
#else
  _PyCode_GetExtra(reinterpret_cast<PyObject*>(code), index, &extra);
#endif
  return extra;
}

// Replacing a value calls the index's free function on the old one.
inline int set_code_extra(PyCodeObject* code, Py_ssize_t index, void* extra) {
#if PY_VERSION_HEX >= 0x030C0000
  return PyUnstable_Code_SetExtra(reinterpret_cast<PyObject*>(code), index, extra);
#else
  return _PyCode_SetExtra(reinterpret_cast<PyObject*>(code), index, extra);
#endif
}

// Takes the raised exception out of the thread state, for code that must run with none
// set; restore() raises it again, otherwise it is dropped.
class StashedException {
 public:
#if PY_VERSION_HEX >= 0x030C0000
  StashedException() : exception_(PyErr_GetRaisedException()) {}
#else
  StashedException() {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (value && traceback) PyException_SetTraceback(value, traceback);
    exception_ = value;
    Py_XDECREF(type);
    Py_XDECREF(traceback);
  }
#endif
  StashedException(const StashedException&) = delete;
  StashedException& operator=(const StashedException&) = delete;
  ~StashedException() { Py_XDECREF(exception_); }

  PyObject* exception() const { return exception_; }  // borrowed; nullptr if none was set
  void restore() {
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(exception_);
#else
    PyErr_Restore(exception_ ? Py_NewRef(reinterpret_cast<PyObject*>(Py_TYPE(exception_)))
                             : nullptr,
                  exception_, exception_ ? PyException_GetTraceback(exception_) : nullptr);
#endif
    exception_ = nullptr;
  }

 private:
  PyObject* exception_ = nullptr;
};

}  // namespace pyjit::compat
