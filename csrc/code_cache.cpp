#include "cpython_compat.h"  // first: it defines Py_BUILD_CORE before Python.h

#include "code_cache.h"

#include <algorithm>

namespace pyjit {
namespace {

Py_ssize_t g_extra_index = -1;
CodeCache* g_first_cache = nullptr;
// NOTE(skip-mark): a SKIP mark is an odd tag stored in co_extra instead of a cache
// pointer, so the hook tests it with one compare. reset() moves to the next tag, which
// turns every older mark into "unknown" without visiting the code objects.
uintptr_t g_skip_tag = 1;
int g_return_value_opcode = -1;

void* skip_tag() { return reinterpret_cast<void*>(g_skip_tag); }
bool is_tag(void* extra) { return (reinterpret_cast<uintptr_t>(extra) & 1) != 0; }

constexpr int kSignatureFlags = CO_VARARGS | CO_VARKEYWORDS;
Ref replace_code(PyObject* code, PyObject* changes) {
  Ref replace = Ref::steal(PyObject_GetAttrString(code, "replace"));
  if (!replace) return Ref();
  Ref no_args = Ref::steal(PyTuple_New(0));
  return no_args ? Ref::steal(PyObject_Call(replace.get(), no_args.get(), changes)) : Ref();
}

// The original code with its locals layout kept and its body cut to RETURN_VALUE.
Ref make_stub(PyCodeObject* code) {
  const char body[2] = {static_cast<char>(g_return_value_opcode), 0};
  Ref bytecode = Ref::steal(PyBytes_FromStringAndSize(body, sizeof body));
  Ref changes = bytecode ? Ref::steal(Py_BuildValue("{s:O,s:i,s:y,s:y}", "co_code", bytecode.get(),
                                                    "co_stacksize", 1, "co_linetable", "",
                                                    "co_exceptiontable", ""))
                         : Ref();
  return changes ? replace_code(reinterpret_cast<PyObject*>(code), changes.get()) : Ref();
}

// The transformed code must be callable with exactly the original frame's argument slots.
bool check_compatible(PyCodeObject* original, PyObject* transformed) {
  if (!PyCode_Check(transformed)) {
    PyErr_Format(PyExc_TypeError, "a callback entry needs a code object, not %.100s",
                 Py_TYPE(transformed)->tp_name);
    return false;
  }
  auto* code = reinterpret_cast<PyCodeObject*>(transformed);
  if (code == original) {
    PyErr_SetString(PyExc_ValueError, "a callback entry needs a new code object; return None "
                                      "to run the original code");
    return false;
  }
  if (code->co_argcount != original->co_argcount ||
      code->co_kwonlyargcount != original->co_kwonlyargcount ||
      (code->co_flags & kSignatureFlags) != (original->co_flags & kSignatureFlags) ||
      (code->co_flags & kSuspendingCodeFlags) != 0) {
    PyErr_Format(PyExc_ValueError, "transformed code %R does not take the arguments of %R",
                 transformed, original);
    return false;
  }
  Ref freevars = Ref::steal(PyCode_GetFreevars(code));
  Ref original_freevars = Ref::steal(PyCode_GetFreevars(original));
  int same_freevars = freevars && original_freevars
                          ? PyObject_RichCompareBool(freevars.get(), original_freevars.get(), Py_EQ)
                          : -1;
  if (same_freevars != 1) {
    if (same_freevars == 0) {
      PyErr_Format(PyExc_ValueError, "transformed code %R has other free variables than %R",
                   transformed, original);
    }
    return false;
  }
  return true;
}

Ref positional_variant(PyObject* transformed, Py_ssize_t slots) {
  auto* code = reinterpret_cast<PyCodeObject*>(transformed);
  if (code->co_kwonlyargcount == 0 && (code->co_flags & kSignatureFlags) == 0) {
    return Ref::borrow(transformed);
  }
  Ref changes = Ref::steal(Py_BuildValue("{s:n,s:i,s:i,s:i}", "co_argcount", slots,
                                         "co_posonlyargcount", 0, "co_kwonlyargcount", 0,
                                         "co_flags", code->co_flags & ~kSignatureFlags));
  return changes ? replace_code(transformed, changes.get()) : Ref();
}

uint64_t mix(uint64_t hash, uint64_t word) {
  hash ^= word + 0x9e3779b97f4a7c15ull + (hash << 6) + (hash >> 2);
  return hash;
}

}  // namespace

CodeCache::CodeCache(PyCodeObject* code)
    : code_(code), slot_count_(argument_slots(code)), next_(g_first_cache) {
  if (g_first_cache) g_first_cache->previous_ = this;
  g_first_cache = this;
}

CodeCache::~CodeCache() = default;

void CodeCache::release() {
  if (previous_) previous_->next_ = next_;
  if (next_) next_->previous_ = previous_;
  if (g_first_cache == this) g_first_cache = next_;
  previous_ = next_ = nullptr;
  released_ = true;
  if (pins_ == 0) delete this;
}

// Called by CPython when the code object dies, and for the old value whenever
// co_extra is set. The latter happens *before* co_extra stops pointing at the cache,
// so replace_extra() detaches a cache itself and this ignores it.
void CodeCache::free_extra(void* extra) {
  if (!extra || is_tag(extra)) return;
  auto* cache = static_cast<CodeCache*>(extra);
  if (!cache->detaching_) cache->release();
}

// Points co_extra at `value` (a cache, a SKIP tag or nullptr) and only then lets the old
// cache go: dropping its entries may run Python code, which must not find it there, and
// which must not free the code object while CPython is writing its co_extra.
int CodeCache::replace_extra(PyCodeObject* code, void* value) {
  Ref keep_alive = Ref::borrow(reinterpret_cast<PyObject*>(code));
  bool skipped;
  CodeCache* old = find(code, &skipped);
  if (old) old->detaching_ = true;
  int status = compat::set_code_extra(code, g_extra_index, value);
  if (old) old->release();
  return status;
}

int CodeCache::init() {
  g_extra_index = compat::request_code_extra_index(&CodeCache::free_extra);
  if (g_extra_index < 0) {
    PyErr_SetString(PyExc_RuntimeError, "no co_extra index left for pyjit");
    return -1;
  }
  Ref opcode = Ref::steal(PyImport_ImportModule("opcode"));
  Ref opmap = opcode ? Ref::steal(PyObject_GetAttrString(opcode.get(), "opmap")) : Ref();
  PyObject* number = opmap ? PyDict_GetItemString(opmap.get(), "RETURN_VALUE") : nullptr;
  if (!number) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "opcode RETURN_VALUE not found");
    return -1;
  }
  g_return_value_opcode = static_cast<int>(PyLong_AsLong(number));
  return PyErr_Occurred() ? -1 : 0;
}

CodeCache* CodeCache::find(PyCodeObject* code, bool* skipped) {
  void* extra = compat::code_extra(code, g_extra_index);
  *skipped = extra == skip_tag();
  return extra && !is_tag(extra) ? static_cast<CodeCache*>(extra) : nullptr;
}

void CodeCache::mark_skip(PyCodeObject* code) { replace_extra(code, skip_tag()); }

void CodeCache::reset_all() {
  g_skip_tag += 2;
  // Releasing one cache can free others (a guarded object's code dies with it), so take
  // the current first cache each time rather than a snapshot.
  while (g_first_cache) replace_extra(g_first_cache->code_, nullptr);
}

PyObject* CodeCache::entries_of(PyCodeObject* code) {
  bool skipped;
  CodeCache* cache = find(code, &skipped);
  PyObject* list = PyList_New(0);
  for (size_t i = 0; list && cache && i < cache->entries_.size(); ++i) {
    const CacheEntry& entry = *cache->entries_[i];
    Ref pair = Ref::steal(PyTuple_Pack(2, entry.guard.get(), entry.code.get()));
    if (!pair || PyList_Append(list, pair.get()) < 0) Py_CLEAR(list);
  }
  return list;
}

bool CodeCache::add(PyCodeObject* code, PyObject* guard, PyObject* transformed,
                    const FrameView& frame, CacheHit* hit) {
  const GuardProgram* program = guard_program_from_object(guard);
  if (!program) {
    PyErr_Format(PyExc_TypeError, "a callback entry needs a GuardProgram, not %.100s",
                 Py_TYPE(guard)->tp_name);
    return false;
  }
  if (!check_compatible(code, transformed)) return false;
  Py_ssize_t slots = argument_slots(code);
  if (program->max_local_slot() >= slots) {
    PyErr_Format(PyExc_ValueError, "guard reads local slot %zd but %R has %zd argument slots",
                 program->max_local_slot(), code, slots);
    return false;
  }
  Ref callable = positional_variant(transformed, slots);
  if (!callable) return false;
  bool skipped;
  CodeCache* cache = find(code, &skipped);
  Ref stub = cache ? cache->stub_ : make_stub(code);
  if (!stub) return false;
  if (!cache) {
    cache = new CodeCache(code);
    if (replace_extra(code, cache) < 0) {
      cache->release();
      return false;
    }
    cache->stub_ = stub;
  }
  // Frames of the transformed code run as they are; the frames they start are hooked.
  mark_skip(reinterpret_cast<PyCodeObject*>(callable.get()));
  auto entry = std::make_unique<CacheEntry>();
  entry->guard = Ref::borrow(guard);
  entry->program = program;
  entry->code = Ref::borrow(transformed);
  entry->callable_code = std::move(callable);
  cache->entries_.insert(cache->entries_.begin(), std::move(entry));
  cache->generation_++;
  cache->rebuild_dispatch();
  return cache->prepare_hit(*cache->entries_.front(), frame, hit);
}

// NOTE(dispatch): a lookup computes one signature of the frame -- for each argument slot
// that every entry pins, its exact type and, for NumPy arrays, dtype kind, item size and
// ndim -- and compares it with each entry's precomputed signature, in most-recently-used
// order. Only entries whose signature matches run their full guard program, so a hit
// costs one pass over the arguments plus one guard run, whatever the number of entries
// (at most recompile_limit). A matching signature never decides alone: it only selects.
void CodeCache::rebuild_dispatch() {
  dispatch_.clear();
  for (const DispatchKey& key : entries_.front()->program->dispatch_keys()) {
    dispatch_.push_back({key.slot, key.is_array});
  }
  for (const auto& entry : entries_) {
    const auto& keys = entry->program->dispatch_keys();
    auto kept = std::remove_if(dispatch_.begin(), dispatch_.end(), [&](DispatchSlot& slot) {
      auto key = std::find_if(keys.begin(), keys.end(),
                              [&](const DispatchKey& k) { return k.slot == slot.slot; });
      if (key == keys.end()) return true;
      slot.is_array = slot.is_array && key->is_array;
      return false;
    });
    dispatch_.erase(kept, dispatch_.end());
  }
  for (const auto& entry : entries_) {
    const auto& keys = entry->program->dispatch_keys();
    uint64_t hash = 0;
    for (const DispatchSlot& slot : dispatch_) {
      auto key = std::find_if(keys.begin(), keys.end(),
                              [&](const DispatchKey& k) { return k.slot == slot.slot; });
      hash = mix(hash, key->type);
      if (slot.is_array) hash = mix(hash, key->array_word);
    }
    entry->dispatch_hash = hash;
  }
}

uint64_t CodeCache::frame_hash(const FrameView& frame) const {
  uint64_t hash = 0;
  for (const DispatchSlot& slot : dispatch_) {
    PyObject* value = frame.args[slot.slot];
    hash = mix(hash, reinterpret_cast<uintptr_t>(Py_TYPE(value)));
    if (slot.is_array) hash = mix(hash, array_dispatch_word(value));
  }
  return hash;
}

CodeCache::Lookup CodeCache::lookup(const FrameView& frame, CacheHit* hit) {
  const uint64_t hash = frame_hash(frame);
  const uint64_t generation = generation_;
  // Guards may run Python code (attribute reads, python checks) that resets or extends
  // this cache: pinned, it outlives a reset, and any change ends the lookup as a miss.
  ++pins_;
  size_t found = entries_.size();
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i]->dispatch_hash != hash) continue;
    bool holds = entries_[i]->program->check(frame);
    if (generation_ != generation || released_) break;
    if (holds) {
      found = i;
      break;
    }
  }
  --pins_;
  if (released_ || generation_ != generation || found == entries_.size()) {
    if (released_ && pins_ == 0) delete this;
    return Lookup::Miss;
  }
  std::rotate(entries_.begin(), entries_.begin() + found, entries_.begin() + found + 1);
  if (!prepare_hit(*entries_.front(), frame, hit)) return Lookup::Error;
  return Lookup::Hit;
}

// Reusing the last function made for an entry saves an allocation per call. Only
// functions without a closure are kept: a kept closure could reach the very function
// whose code owns this cache, a cycle through co_extra that the GC cannot see.
bool CodeCache::prepare_hit(CacheEntry& entry, const FrameView& frame, CacheHit* hit) {
  PyObject* closure = PyFunction_GET_CLOSURE(frame.function);
  auto* last = reinterpret_cast<PyFunctionObject*>(entry.function.get());
  if (closure || !last || last->func_globals != frame.globals) {
    Ref function = Ref::steal(PyFunction_New(entry.callable_code.get(), frame.globals));
    if (!function || (closure && PyFunction_SetClosure(function.get(), closure) < 0)) return false;
    if (!closure) entry.function = function;
    hit->function = std::move(function);
  } else {
    hit->function = entry.function;
  }
  hit->stub = stub_;
  return true;
}

}  // namespace pyjit
