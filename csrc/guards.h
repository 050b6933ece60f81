// Guard programs: the checks that decide whether a cache entry may serve a frame,
// evaluated in C with no Python bytecode for the common kinds.
#pragma once

#include <Python.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ref.h"

namespace pyjit {

// What a guard can see of a frame: its bound arguments (slot order), namespaces and function.
struct FrameView {
  PyObject* const* args;
  Py_ssize_t nargs;
  PyObject* globals;
  PyObject* builtins;
  PyFunctionObject* function;
};

enum class SourceKind { Local, Global, Builtin, Closure, Attr, Item };

struct Source {
  SourceKind kind;
  int parent = -1;      // Attr, Item: index of the source read from
  Py_ssize_t index = 0; // Local slot, Closure cell
  Ref key;              // Global/Builtin/Attr name, Item key
  std::string name;     // how messages and guard text spell it
};

enum class CheckKind { Type, Id, Eq, Len, DictKeys, Array, Python, Compiler };

struct DimSpec {
  enum class Kind { Static, Any, Symbol } kind;
  Py_ssize_t value;  // the size (Static) or the symbol's index (Symbol)
};

struct ArraySpec {
  Ref type;
  Ref dtype;  // a numpy.dtype
  std::vector<DimSpec> shape;
  enum class Layout { Any, C, F, Strides } layout = Layout::Any;
  std::vector<Py_ssize_t> strides;  // Layout::Strides; kAnyStride matches every stride
  int writeable = -1;               // -1 any, 0 read-only, 1 writeable
  long device = -1;                 // -1 any
};

inline constexpr Py_ssize_t kAnyStride = PY_SSIZE_T_MIN;

struct Check {
  CheckKind kind;
  int source = -1;  // -1 only for a Python check with no value
  Ref object;       // Type: the type; Id: the object; Eq: the constant; DictKeys: the keys
                    // tuple; Python: the callable; Compiler: the compiler
  Py_ssize_t length = 0;
  std::unique_ptr<ArraySpec> array;
  std::string text;  // readable form of the check
};

// The per-slot words that cheap dispatch hashes (see NOTE(dispatch) in code_cache.cpp):
// the exact type, and for NumPy arrays the dtype's kind and size and the ndim.
struct DispatchKey {
  Py_ssize_t slot;
  uintptr_t type;
  bool is_array;
  uint64_t array_word;
};

class GuardProgram {
 public:
  // Builds a program from the Python description documented in pyjit/_C.pyi; returns
  // nullptr with a Python exception set when it is malformed.
  static std::unique_ptr<GuardProgram> parse(PyObject* sources, PyObject* checks);

  // Whether every check holds. With `failure`, the first failing check's reason is written
  // there. Never leaves a Python exception set.
  bool check(const FrameView& frame, std::string* failure = nullptr) const;

  std::string text() const;
  Py_ssize_t max_local_slot() const { return max_local_slot_; }
  const std::vector<DispatchKey>& dispatch_keys() const { return dispatch_keys_; }

 private:
  class Evaluation;
  bool parse_sources(PyObject* sources);
  bool parse_checks(PyObject* checks);
  bool parse_check(PyObject* item);
  bool parse_array_spec(Check& check, PyObject* spec);
  bool parse_shape(ArraySpec& spec, PyObject* shape);
  bool parse_strides(ArraySpec& spec, PyObject* strides);
  void derive_dispatch_keys();

  std::vector<Source> sources_;
  std::vector<Check> checks_;
  std::vector<std::string> symbols_;
  Py_ssize_t max_local_slot_ = -1;
  std::vector<DispatchKey> dispatch_keys_;
};

// The dispatch word of an actual value, matching DispatchKey::array_word for arrays.
uint64_t array_dispatch_word(PyObject* value);

// Imports NumPy's C API; call once at module init. Returns -1 with an exception set.
int guards_init();

}  // namespace pyjit
