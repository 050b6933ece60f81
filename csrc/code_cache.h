// The per-code cache kept in co_extra: entries of (guard program, transformed code).
#pragma once

#include <Python.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "guards.h"
#include "ref.h"

namespace pyjit {

// Generators and coroutines: their frames outlive the call, so they are never hooked.
inline constexpr int kSuspendingCodeFlags =
    CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE;

// The frame slots that hold bound arguments: positional, keyword-only, *args, **kwargs.
inline Py_ssize_t argument_slots(PyCodeObject* code) {
  return code->co_argcount + code->co_kwonlyargcount + ((code->co_flags & CO_VARARGS) ? 1 : 0) +
         ((code->co_flags & CO_VARKEYWORDS) ? 1 : 0);
}

struct CacheEntry {
  Ref guard;  // the GuardProgram Python object, which owns `program`
  const GuardProgram* program;
  Ref code;            // the transformed code, as the callback returned it
  Ref callable_code;   // the same code taking every argument slot positionally
  Ref function;        // the last closure-free function made for callable_code
  uint64_t dispatch_hash = 0;
};

// What a hit hands the hook: the function to call with the frame's argument slots, and
// the stub that returns its result from the original frame (NOTE(cpython-compat)).
struct CacheHit {
  Ref function;
  Ref stub;
};

class CodeCache {
 public:
  enum class Lookup { Hit, Miss, Error };

  // The cache of `code` (nullptr if it has none); `*skipped` tells a SKIP mark apart.
  static CodeCache* find(PyCodeObject* code, bool* skipped);
  static void mark_skip(PyCodeObject* code);
  // Adds an entry made of a callback's (guard, code) answer, creating the cache if needed,
  // and makes `hit` ready to run it for `frame`. False with an exception set if the answer
  // is unusable.
  static bool add(PyCodeObject* code, PyObject* guard, PyObject* transformed,
                  const FrameView& frame, CacheHit* hit);
  static PyObject* entries_of(PyCodeObject* code);  // new list of (guard, code)
  static void reset_all();
  static int init();

  CodeCache(const CodeCache&) = delete;
  CodeCache& operator=(const CodeCache&) = delete;

  // Looks the frame up; on a hit the entry becomes the most recently used.
  Lookup lookup(const FrameView& frame, CacheHit* hit);
  Py_ssize_t slot_count() const { return slot_count_; }

 private:
  struct DispatchSlot {
    Py_ssize_t slot;
    bool is_array;
  };

  explicit CodeCache(PyCodeObject* code);
  ~CodeCache();
  static void free_extra(void* extra);
  static int replace_extra(PyCodeObject* code, void* value);
  void release();  // the code dropped this cache (or reset did): delete once unpinned
  bool prepare_hit(CacheEntry& entry, const FrameView& frame, CacheHit* hit);
  void rebuild_dispatch();
  uint64_t frame_hash(const FrameView& frame) const;

  PyCodeObject* code_;  // borrowed: the code owns this cache through co_extra
  Py_ssize_t slot_count_;
  Ref stub_;
  std::vector<std::unique_ptr<CacheEntry>> entries_;  // most recently used first
  std::vector<DispatchSlot> dispatch_;
  uint64_t generation_ = 0;  // bumped whenever entries change
  int pins_ = 0;             // lookups in progress
  bool released_ = false;
  bool detaching_ = false;  // replace_extra is taking it out of co_extra
  CodeCache* previous_ = nullptr;  // all live caches, for reset_all
  CodeCache* next_ = nullptr;
};

// Provided by the binding layer: the program inside a GuardProgram object, or nullptr.
const GuardProgram* guard_program_from_object(PyObject* object);

}  // namespace pyjit
