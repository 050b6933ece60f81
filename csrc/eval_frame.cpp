#include "cpython_compat.h"  // first: it defines Py_BUILD_CORE before Python.h

#include "eval_frame.h"

#include <structmember.h>

#include "code_cache.h"
#include "ref.h"

namespace pyjit {
namespace {

// NOTE(thread-hook): each thread's callback lives in a trivially destructible
// thread_local, so the hook reads it with no lookup. `owner` ties it to the thread state
// that installed it; a capsule in that thread state's dict drops the callback when the
// thread state is cleared (thread exit), so an exiting thread never leaves the
// interpreter-wide eval function installed.
struct ThreadHook {
  PyThreadState* owner;
  PyObject* callback;  // strong; nullptr when the thread has none
  bool busy;           // see NOTE(busy-scope): hook nothing
};

thread_local ThreadHook t_hook;
int g_threads_with_callback = 0;
PyObject* g_skip = nullptr;
PyTypeObject* g_frame_info_type = nullptr;
constexpr const char* kThreadHookCapsule = "pyjit._C.thread_hook";

PyObject* eval_frame(PyThreadState* tstate, compat::Frame* frame, int throw_flag);

void count_thread_callbacks(int delta) {
  g_threads_with_callback += delta;
  if (delta > 0 && g_threads_with_callback == 1) compat::set_interpreter_eval_frame(&eval_frame);
  if (delta < 0 && g_threads_with_callback == 0) compat::set_interpreter_eval_frame(nullptr);
}

void drop_callback(ThreadHook* hook) {
  PyObject* callback = hook->callback;
  hook->callback = nullptr;
  if (callback) {
    count_thread_callbacks(-1);
    Py_DECREF(callback);
  }
}

void thread_state_cleared(PyObject* capsule) {
  auto* hook = static_cast<ThreadHook*>(PyCapsule_GetPointer(capsule, kThreadHookCapsule));
  if (hook && hook->owner == PyCapsule_GetContext(capsule)) {
    hook->owner = nullptr;
    drop_callback(hook);
  }
}

bool claim_thread_hook(ThreadHook* hook, PyThreadState* tstate) {
  if (hook->owner == tstate) return true;
  drop_callback(hook);  // left by another thread state of this OS thread
  PyObject* dict = PyThreadState_GetDict();
  Ref capsule = Ref::steal(PyCapsule_New(hook, kThreadHookCapsule, &thread_state_cleared));
  if (!dict || !capsule || PyCapsule_SetContext(capsule.get(), tstate) < 0 ||
      PyDict_SetItemString(dict, kThreadHookCapsule, capsule.get()) < 0) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "no thread state dict");
    return false;
  }
  hook->owner = tstate;
  hook->busy = false;
  return true;
}

struct FrameInfoObject {
  PyObject_HEAD
  PyObject* code;
  PyObject* globals;
  PyObject* builtins;
  PyObject* function;
  PyObject* args;
};

Ref make_frame_info(PyCodeObject* code, const FrameView& view) {
  Ref args = Ref::steal(PyTuple_New(view.nargs));
  if (!args) return Ref();
  for (Py_ssize_t i = 0; i < view.nargs; ++i) {
    PyTuple_SET_ITEM(args.get(), i, Py_NewRef(view.args[i]));
  }
  auto* info = PyObject_GC_New(FrameInfoObject, g_frame_info_type);
  if (!info) return Ref();
  info->code = Py_NewRef(reinterpret_cast<PyObject*>(code));
  info->globals = Py_NewRef(view.globals);
  info->builtins = Py_NewRef(view.builtins);
  info->function = Py_NewRef(reinterpret_cast<PyObject*>(view.function));
  info->args = args.release();
  PyObject_GC_Track(info);
  return Ref::steal(reinterpret_cast<PyObject*>(info));
}

int frame_info_traverse(PyObject* self, visitproc visit, void* arg) {
  auto* info = reinterpret_cast<FrameInfoObject*>(self);
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(info->code);
  Py_VISIT(info->globals);
  Py_VISIT(info->builtins);
  Py_VISIT(info->function);
  Py_VISIT(info->args);
  return 0;
}

int frame_info_clear(PyObject* self) {
  auto* info = reinterpret_cast<FrameInfoObject*>(self);
  Py_CLEAR(info->code);
  Py_CLEAR(info->globals);
  Py_CLEAR(info->builtins);
  Py_CLEAR(info->function);
  Py_CLEAR(info->args);
  return 0;
}

void frame_info_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  frame_info_clear(self);
  PyObject_GC_Del(self);
  Py_DECREF(type);
}

PyObject* frame_info_locals(PyObject* self, void*) {
  auto* info = reinterpret_cast<FrameInfoObject*>(self);
  Ref names = Ref::steal(PyObject_GetAttrString(info->code, "co_varnames"));
  Ref locals = Ref::steal(PyDict_New());
  if (!names || !locals) return nullptr;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(info->args); ++i) {
    if (PyDict_SetItem(locals.get(), PyTuple_GET_ITEM(names.get(), i),
                       PyTuple_GET_ITEM(info->args, i)) < 0) {
      return nullptr;
    }
  }
  return locals.release();
}

PyObject* frame_info_repr(PyObject* self) {
  return PyUnicode_FromFormat("<FrameInfo of %R>", reinterpret_cast<FrameInfoObject*>(self)->code);
}

PyMemberDef frame_info_members[] = {
    {"f_code", T_OBJECT_EX, offsetof(FrameInfoObject, code), READONLY, nullptr},
    {"f_globals", T_OBJECT_EX, offsetof(FrameInfoObject, globals), READONLY, nullptr},
    {"f_builtins", T_OBJECT_EX, offsetof(FrameInfoObject, builtins), READONLY, nullptr},
    {"f_func", T_OBJECT_EX, offsetof(FrameInfoObject, function), READONLY, nullptr},
    {"args", T_OBJECT_EX, offsetof(FrameInfoObject, args), READONLY,
     "the bound arguments in slot order: positional, keyword-only, *args, **kwargs"},
    {nullptr, 0, 0, 0, nullptr}};

PyGetSetDef frame_info_getset[] = {
    {"f_locals", &frame_info_locals, nullptr, "argument name -> value", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyType_Slot frame_info_slots[] = {
    {Py_tp_doc, const_cast<char*>("What a frame-hook callback sees of a frame about to start.")},
    {Py_tp_dealloc, reinterpret_cast<void*>(&frame_info_dealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(&frame_info_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(&frame_info_clear)},
    {Py_tp_repr, reinterpret_cast<void*>(&frame_info_repr)},
    {Py_tp_members, frame_info_members},
    {Py_tp_getset, frame_info_getset},
    {0, nullptr}};

PyType_Spec frame_info_spec = {"pyjit._C.FrameInfo", sizeof(FrameInfoObject), 0,
                               Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC |
                                   Py_TPFLAGS_DISALLOW_INSTANTIATION,
                               frame_info_slots};

// Codes whose frames are never handed to a callback: generators and coroutines (their
// frames outlive the call), module and class bodies, and codes whose frames have no
// stack slot for NOTE(cpython-compat)'s return (they do nothing worth compiling).
bool never_hooked(PyCodeObject* code) {
  return (code->co_flags & kSuspendingCodeFlags) || !(code->co_flags & CO_OPTIMIZED) ||
         code->co_stacksize < 1;
}

PyObject* run_original(PyThreadState* tstate, compat::Frame* frame) {
  return compat::eval_default(tstate, frame, 0);
}

// Runs a hit: see NOTE(cpython-compat). An exception from the transformed code is held
// while CPython pops the original frame, then raised from it.
PyObject* run_hit(PyThreadState* tstate, compat::Frame* frame, const CacheHit& hit,
                  Py_ssize_t nargs) {
  PyObject* result = PyObject_Vectorcall(hit.function.get(), compat::frame_localsplus(frame),
                                         nargs, nullptr);
  auto* stub = reinterpret_cast<PyCodeObject*>(hit.stub.get());
  if (result) return compat::finish_frame_returning(tstate, frame, stub, result);
  compat::StashedException exception;
  Py_XDECREF(compat::finish_frame_returning(tstate, frame, stub, Py_NewRef(Py_None)));
  exception.restore();
  return nullptr;
}

// NOTE(busy-scope): the hook's own Python work — a callback, a guard, reporting their
// errors (a Python `sys.unraisablehook` runs then) and releasing what they answered —
// runs with the thread's hook busy, so frames it starts are not hooked: a failing
// callback is never asked about the frames of its own error report, which would recurse
// until the C stack overflows. The frame itself runs after the scope ends.
class BusyScope {
 public:
  explicit BusyScope(ThreadHook* hook) : hook_(hook) { hook_->busy = true; }
  ~BusyScope() { hook_->busy = false; }
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;

 private:
  ThreadHook* hook_;
};

void report(PyCodeObject* code) { PyErr_WriteUnraisable(reinterpret_cast<PyObject*>(code)); }

enum class Decision { RunOriginal, RunHit, Throw };

Decision report_and_run_original(PyCodeObject* code) {
  report(code);
  return Decision::RunOriginal;
}

// Asks the callback about a missed frame; runs inside a BusyScope. The FrameInfo dies
// when this returns (unless the callback kept it), before the frame runs: it holds the
// arguments, which the frame may drop (`del x`) and expect freed.
Decision ask_callback(PyCodeObject* code, const FrameView& view, PyObject* callback,
                      CacheHit* hit) {
  Ref info = make_frame_info(code, view);
  if (!info) return report_and_run_original(code);
  Ref answer = Ref::steal(PyObject_CallOneArg(callback, info.get()));
  if (!answer && !PyErr_ExceptionMatches(PyExc_Exception)) {
    // KeyboardInterrupt or SystemExit during a compile is the user's: CPython raises it
    // from the frame's first instruction (as generator.throw() does) and pops the frame.
    return Decision::Throw;
  }
  if (!answer) return report_and_run_original(code);
  if (answer.get() == Py_None) return Decision::RunOriginal;
  if (answer.get() == g_skip) {
    CodeCache::mark_skip(code);
    return Decision::RunOriginal;
  }
  if (!PyTuple_Check(answer.get()) || PyTuple_GET_SIZE(answer.get()) != 2) {
    PyErr_Format(PyExc_TypeError, "a frame-hook callback must return None, SKIP or "
                                  "(GuardProgram, code), not %.100s", Py_TYPE(answer.get())->tp_name);
    return report_and_run_original(code);
  }
  if (!CodeCache::add(code, PyTuple_GET_ITEM(answer.get(), 0), PyTuple_GET_ITEM(answer.get(), 1),
                      view, hit)) {
    return report_and_run_original(code);
  }
  return Decision::RunHit;
}

PyObject* run_miss(PyThreadState* tstate, compat::Frame* frame, PyCodeObject* code,
                   const FrameView& view, ThreadHook* hook) {
  CacheHit hit;
  Decision decision;
  {
    BusyScope busy(hook);
    Ref callback = Ref::borrow(hook->callback);  // the callback may uninstall itself
    decision = ask_callback(code, view, callback.get(), &hit);
  }
  if (decision == Decision::Throw) return compat::eval_default(tstate, frame, 1);
  if (decision == Decision::RunHit) return run_hit(tstate, frame, hit, view.nargs);
  return run_original(tstate, frame);
}

PyObject* eval_frame(PyThreadState* tstate, compat::Frame* frame, int throw_flag) {
  ThreadHook* hook = &t_hook;
  if (!hook->callback || hook->busy || hook->owner != tstate) {
    return compat::eval_default(tstate, frame, throw_flag);
  }
  PyCodeObject* code = compat::frame_code(frame);
  bool skipped;
  CodeCache* cache = CodeCache::find(code, &skipped);
  if (skipped || throw_flag || !compat::frame_is_function_call(frame)) {
    return compat::eval_default(tstate, frame, throw_flag);
  }
  if (!cache && never_hooked(code)) {
    CodeCache::mark_skip(code);
    return run_original(tstate, frame);
  }
  FrameView view{compat::frame_localsplus(frame),
                 cache ? cache->slot_count() : argument_slots(code),
                 compat::frame_globals(frame), compat::frame_builtins(frame),
                 compat::frame_function(frame)};
  if (cache) {
    CacheHit hit;
    CodeCache::Lookup found;
    {
      BusyScope busy(hook);
      found = cache->lookup(view, &hit);
      if (found == CodeCache::Lookup::Error) report(code);
    }
    if (found == CodeCache::Lookup::Hit) return run_hit(tstate, frame, hit, view.nargs);
    if (found == CodeCache::Lookup::Error) return run_original(tstate, frame);
  }
  return run_miss(tstate, frame, code, view, hook);
}

}  // namespace

PyObject* set_eval_frame(PyObject* callback) {
  if (callback != Py_None && !PyCallable_Check(callback)) {
    PyErr_Format(PyExc_TypeError, "a frame-hook callback must be callable or None, not %.100s",
                 Py_TYPE(callback)->tp_name);
    return nullptr;
  }
  ThreadHook* hook = &t_hook;
  if (!claim_thread_hook(hook, PyThreadState_Get())) return nullptr;
  PyObject* previous = hook->callback;
  hook->callback = callback == Py_None ? nullptr : Py_NewRef(callback);
  if (!previous && hook->callback) count_thread_callbacks(+1);
  if (previous && !hook->callback) count_thread_callbacks(-1);
  return previous ? previous : Py_NewRef(Py_None);
}

PyObject* get_eval_frame() {
  ThreadHook* hook = &t_hook;
  bool mine = hook->owner == PyThreadState_Get() && hook->callback;
  return Py_NewRef(mine ? hook->callback : Py_None);
}

bool callback_compiler_is(PyObject* compiler) {
  ThreadHook* hook = &t_hook;
  if (hook->owner != PyThreadState_Get() || !hook->callback) return false;
  static PyObject* name = PyUnicode_InternFromString("compiler");
  PyObject* found = PyObject_GetAttr(hook->callback, name);
  if (!found) {
    PyErr_Clear();  // a callback without a compiler matches no entry that needs one
    return false;
  }
  bool same = found == compiler;
  Py_DECREF(found);
  return same;
}

bool hook_installed() { return compat::interpreter_eval_frame() == &eval_frame; }

bool frame_info_view(PyObject* object, FrameView* view) {
  if (Py_TYPE(object) != g_frame_info_type) {
    PyErr_Format(PyExc_TypeError, "expected a FrameInfo, not %.100s", Py_TYPE(object)->tp_name);
    return false;
  }
  auto* info = reinterpret_cast<FrameInfoObject*>(object);
  *view = FrameView{&PyTuple_GET_ITEM(info->args, 0), PyTuple_GET_SIZE(info->args), info->globals,
                    info->builtins, reinterpret_cast<PyFunctionObject*>(info->function)};
  return true;
}

PyTypeObject* frame_info_type() { return g_frame_info_type; }
PyObject* skip_sentinel() { return g_skip; }

int eval_frame_init() {
  g_frame_info_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&frame_info_spec));
  g_skip = PyObject_CallNoArgs(reinterpret_cast<PyObject*>(&PyBaseObject_Type));
  return g_frame_info_type && g_skip ? 0 : -1;
}

}  // namespace pyjit
