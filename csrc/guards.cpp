#include "cpython_compat.h"  // first: it defines Py_BUILD_CORE before Python.h

#include "guards.h"

#include "eval_frame.h"
#include "object_text.h"

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL pyjit_ARRAY_API
#include <numpy/arrayobject.h>

#include <algorithm>
#include <cmath>

namespace pyjit {
namespace {

constexpr int kInlineSources = 16;
constexpr int kInlineSymbols = 8;
// NOTE(specialize-0-1): like torch.compile, sizes 0 and 1 stay specialised; a symbolic
// size only matches 2 and up, so a dynamic kernel never sees a broadcastable 1.
constexpr Py_ssize_t kSmallestSymbolicSize = 2;

// Floats compare by value *and* sign, with NaN equal to NaN: a graph specialised on 0.0
// must not serve -0.0 (1/x differs), and one specialised on nan should keep serving nan.
bool same_double(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

bool constant_equal(PyObject* value, PyObject* constant) {
  if (Py_TYPE(value) != Py_TYPE(constant)) return false;
  if (value == constant) return true;
  if (PyFloat_CheckExact(value)) {
    return same_double(PyFloat_AS_DOUBLE(value), PyFloat_AS_DOUBLE(constant));
  }
  if (PyComplex_CheckExact(value)) {
    Py_complex a = PyComplex_AsCComplex(value), b = PyComplex_AsCComplex(constant);
    return same_double(a.real, b.real) && same_double(a.imag, b.imag);
  }
  if (PyTuple_CheckExact(value)) {
    Py_ssize_t size = PyTuple_GET_SIZE(value);
    if (size != PyTuple_GET_SIZE(constant)) return false;
    for (Py_ssize_t i = 0; i < size; ++i) {
      if (!constant_equal(PyTuple_GET_ITEM(value, i), PyTuple_GET_ITEM(constant, i))) return false;
    }
    return true;
  }
  int equal = PyObject_RichCompareBool(value, constant, Py_EQ);
  if (equal < 0) PyErr_Clear();
  return equal == 1;
}

bool keys_equal(PyObject* key, PyObject* expected) {
  if (key == expected) return true;
  int equal = PyObject_RichCompareBool(key, expected, Py_EQ);
  if (equal < 0) PyErr_Clear();
  return equal == 1;
}

uint64_t dtype_dispatch_word(PyArray_Descr* dtype, int ndim) {
  return (static_cast<uint64_t>(static_cast<unsigned char>(dtype->kind)) << 48) |
         (static_cast<uint64_t>(PyDataType_ELSIZE(dtype)) << 8) | static_cast<uint64_t>(ndim);
}

// Reads an attribute chain like value.flags.c_contiguous; nullptr (no exception) if absent.
Ref read_attribute(PyObject* value, const char* first, const char* second = nullptr) {
  Ref result = Ref::steal(PyObject_GetAttrString(value, first));
  if (result && second) result = Ref::steal(PyObject_GetAttrString(result.get(), second));
  if (!result) PyErr_Clear();
  return result;
}

}  // namespace

uint64_t array_dispatch_word(PyObject* value) {
  if (Py_TYPE(value) != &PyArray_Type) return 0;
  auto* array = reinterpret_cast<PyArrayObject*>(value);
  return dtype_dispatch_word(PyArray_DESCR(array), PyArray_NDIM(array));
}

int guards_init() { return PyArray_ImportNumPyAPI(); }

// The values of a program's sources for one frame, read lazily, each at most once.
class GuardProgram::Evaluation {
 public:
  Evaluation(const GuardProgram& program, const FrameView& frame, std::string* failure)
      : program_(program), frame_(frame), failure_(failure) {
    size_t count = program.sources_.size();
    if (count > kInlineSources) {
      heap_slots_.resize(count);
      slots_ = heap_slots_.data();
    }
    if (program.symbols_.size() > kInlineSymbols) {
      heap_symbols_.assign(program.symbols_.size(), -1);
      symbols_ = heap_symbols_.data();
    }
  }
  Evaluation(const Evaluation&) = delete;
  Evaluation& operator=(const Evaluation&) = delete;
  ~Evaluation() {
    for (size_t i = 0; i < program_.sources_.size(); ++i) Py_XDECREF(slots_[i].value);
  }

  // The source's value (borrowed from this evaluation), or nullptr if it cannot be read.
  PyObject* value(int index) {
    Slot& slot = slots_[index];
    if (!slot.resolved) {
      slot.resolved = true;
      slot.value = read(program_.sources_[index]);
      if (!slot.value) note_unreadable(program_.sources_[index]);
    }
    return slot.value;
  }

  bool run_check(const Check& check);

 private:
  struct Slot {
    PyObject* value = nullptr;
    bool resolved = false;
  };

  PyObject* read(const Source& source);
  bool check_array(const Check& check, PyObject* value);
  bool check_numpy_array(const Check& check, PyArrayObject* array);
  bool check_other_array(const Check& check, PyObject* value);
  bool check_dim(const Check& check, size_t index, Py_ssize_t actual);
  bool check_stride(const Check& check, size_t index, Py_ssize_t actual);
  bool fail(const std::string& reason) {
    if (failure_ && failure_->empty()) *failure_ = reason;
    return false;
  }
  bool fail_array(const Check& check, const std::string& what) {
    return failure_ ? fail("array '" + name(check) + "' " + what) : false;
  }
  const std::string& name(const Check& check) const { return program_.sources_[check.source].name; }
  void note_unreadable(const Source& source) {
    compat::StashedException exception;
    if (!failure_ || !failure_->empty()) return;
    *failure_ = "'" + source.name + "' could not be read";
    if (PyObject* error = exception.exception()) {
      *failure_ += " (" + type_name_of(error) + ": " + str_of(error) + ")";
    }
  }

  const GuardProgram& program_;
  const FrameView& frame_;
  std::string* failure_;
  Slot inline_slots_[kInlineSources];
  std::vector<Slot> heap_slots_;
  Slot* slots_ = inline_slots_;
  Py_ssize_t inline_symbols_[kInlineSymbols] = {-1, -1, -1, -1, -1, -1, -1, -1};
  std::vector<Py_ssize_t> heap_symbols_;
  Py_ssize_t* symbols_ = inline_symbols_;
};

PyObject* GuardProgram::Evaluation::read(const Source& source) {
  PyObject* borrowed = nullptr;
  switch (source.kind) {
    case SourceKind::Local:
      borrowed = source.index < frame_.nargs ? frame_.args[source.index] : nullptr;
      break;
    case SourceKind::Global:
      borrowed = PyDict_GetItemWithError(frame_.globals, source.key.get());
      break;
    case SourceKind::Builtin:
      borrowed = PyDict_Check(frame_.builtins)
                     ? PyDict_GetItemWithError(frame_.builtins, source.key.get())
                     : nullptr;
      break;
    case SourceKind::Closure: {
      PyObject* closure = PyFunction_GET_CLOSURE(frame_.function);
      if (closure && source.index < PyTuple_GET_SIZE(closure)) {
        borrowed = PyCell_GET(PyTuple_GET_ITEM(closure, source.index));
      }
      break;
    }
    case SourceKind::Attr: {
      PyObject* parent = value(source.parent);
      return parent ? PyObject_GetAttr(parent, source.key.get()) : nullptr;
    }
    case SourceKind::Item: {
      PyObject* parent = value(source.parent);
      if (!parent) return nullptr;
      if (!PyDict_CheckExact(parent)) return PyObject_GetItem(parent, source.key.get());
      borrowed = PyDict_GetItemWithError(parent, source.key.get());
      break;
    }
  }
  // Values are owned while the evaluation runs: a Python check may mutate the dicts.
  Py_XINCREF(borrowed);
  return borrowed;
}

bool GuardProgram::Evaluation::run_check(const Check& check) {
  if (check.kind == CheckKind::Compiler) {
    return callback_compiler_is(check.object.get()) || fail("check " + check.text + " failed");
  }
  if (check.kind == CheckKind::Python && check.source < 0) {
    Ref result = Ref::steal(PyObject_CallNoArgs(check.object.get()));
    int truth = result ? PyObject_IsTrue(result.get()) : -1;
    PyErr_Clear();
    return truth == 1 || fail("check " + check.text + " failed");
  }
  PyObject* subject = value(check.source);
  if (!subject) return false;
  const std::string& subject_name = name(check);
  switch (check.kind) {
    case CheckKind::Type:
      return Py_TYPE(subject) == reinterpret_cast<PyTypeObject*>(check.object.get()) ||
             (failure_ && fail("'" + subject_name + "' type mismatch: expected " +
                               type_name(check.object.get()) + ", actual " +
                               type_name_of(subject)));
    case CheckKind::Id:
      return subject == check.object.get() ||
             (failure_ && fail("'" + subject_name + "' is not the guarded object " +
                               repr_of(check.object.get()) + ", actual " + repr_of(subject)));
    case CheckKind::Eq:
      return constant_equal(subject, check.object.get()) ||
             (failure_ && fail("'" + subject_name + "' value mismatch: expected " +
                               repr_of(check.object.get()) + ", actual " + repr_of(subject)));
    case CheckKind::Len: {
      Py_ssize_t length = PyObject_Length(subject);
      if (length < 0) PyErr_Clear();
      return length == check.length ||
             (failure_ && fail("'" + subject_name + "' length mismatch: expected " +
                               std::to_string(check.length) + ", actual " + std::to_string(length)));
    }
    case CheckKind::DictKeys: {
      PyObject* keys = check.object.get();
      bool same = PyDict_CheckExact(subject) && PyDict_GET_SIZE(subject) == PyTuple_GET_SIZE(keys);
      Py_ssize_t position = 0, index = 0;
      PyObject *key, *item;
      while (same && PyDict_Next(subject, &position, &key, &item)) {
        same = keys_equal(key, PyTuple_GET_ITEM(keys, index++));
      }
      if (same || !failure_) return same;
      Ref actual = Ref::steal(PySequence_Tuple(subject));
      PyErr_Clear();
      return fail("'" + subject_name + "' dict keys mismatch: expected " + repr_of(keys) +
                  ", actual " + (actual ? repr_of(actual.get()) : type_name_of(subject)));
    }
    case CheckKind::Array:
      return check_array(check, subject);
    case CheckKind::Compiler:
      break;  // checked above: it reads no source
    case CheckKind::Python: {
      Ref result = Ref::steal(PyObject_CallOneArg(check.object.get(), subject));
      int truth = result ? PyObject_IsTrue(result.get()) : -1;
      PyErr_Clear();
      return truth == 1 ||
             (failure_ && fail("'" + subject_name + "' failed check " + check.text));
    }
  }
  return false;
}

bool GuardProgram::Evaluation::check_array(const Check& check, PyObject* value) {
  const ArraySpec& spec = *check.array;
  if (Py_TYPE(value) != reinterpret_cast<PyTypeObject*>(spec.type.get())) {
    return fail_array(check, "type mismatch: expected " + type_name(spec.type.get()) + ", actual " +
                                 type_name_of(value));
  }
  if (Py_TYPE(value) == &PyArray_Type) {
    return check_numpy_array(check, reinterpret_cast<PyArrayObject*>(value));
  }
  return check_other_array(check, value);
}

bool GuardProgram::Evaluation::check_dim(const Check& check, size_t index, Py_ssize_t actual) {
  const DimSpec& dim = check.array->shape[index];
  std::string at = " at index " + std::to_string(index);
  switch (dim.kind) {
    case DimSpec::Kind::Any:
      return true;
    case DimSpec::Kind::Static:
      return actual == dim.value ||
             fail_array(check, "size mismatch" + at + ": expected " + std::to_string(dim.value) +
                                   ", actual " + std::to_string(actual));
    case DimSpec::Kind::Symbol: {
      Py_ssize_t& bound = symbols_[dim.value];
      const std::string& symbol = program_.symbols_[dim.value];
      if (bound < 0) {
        bound = actual;
        return actual >= kSmallestSymbolicSize ||
               fail_array(check, "size" + at + " is " + std::to_string(actual) + " but " + symbol +
                                     " only matches sizes >= 2");
      }
      return actual == bound ||
             fail_array(check, "size mismatch" + at + ": expected " + symbol + " = " +
                                   std::to_string(bound) + ", actual " + std::to_string(actual));
    }
  }
  return false;
}

bool GuardProgram::Evaluation::check_stride(const Check& check, size_t index, Py_ssize_t actual) {
  Py_ssize_t expected = check.array->strides[index];
  return expected == kAnyStride || expected == actual ||
         fail_array(check, "stride mismatch at index " + std::to_string(index) + ": expected " +
                               std::to_string(expected) + ", actual " + std::to_string(actual));
}

bool GuardProgram::Evaluation::check_numpy_array(const Check& check, PyArrayObject* array) {
  const ArraySpec& spec = *check.array;
  auto* expected_dtype = reinterpret_cast<PyArray_Descr*>(spec.dtype.get());
  PyArray_Descr* dtype = PyArray_DESCR(array);
  if (dtype != expected_dtype && !PyArray_EquivTypes(dtype, expected_dtype)) {
    return fail_array(check, "dtype mismatch: expected " + str_of(spec.dtype.get()) + ", actual " +
                                 str_of(reinterpret_cast<PyObject*>(dtype)));
  }
  int ndim = PyArray_NDIM(array);
  if (static_cast<size_t>(ndim) != spec.shape.size()) {
    return fail_array(check, "ndim mismatch: expected " + std::to_string(spec.shape.size()) +
                                 ", actual " + std::to_string(ndim));
  }
  const npy_intp* dims = PyArray_DIMS(array);
  for (int i = 0; i < ndim; ++i) {
    if (!check_dim(check, i, dims[i])) return false;
  }
  switch (spec.layout) {
    case ArraySpec::Layout::Any:
      break;
    case ArraySpec::Layout::C:
      if (!PyArray_IS_C_CONTIGUOUS(array)) return fail_array(check, "is not C-contiguous");
      break;
    case ArraySpec::Layout::F:
      if (!PyArray_IS_F_CONTIGUOUS(array)) return fail_array(check, "is not F-contiguous");
      break;
    case ArraySpec::Layout::Strides: {
      const npy_intp* strides = PyArray_STRIDES(array);
      for (int i = 0; i < ndim; ++i) {
        if (!check_stride(check, i, strides[i])) return false;
      }
    }
  }
  if (spec.writeable >= 0 && PyArray_ISWRITEABLE(array) != (spec.writeable == 1)) {
    return fail_array(check, spec.writeable ? "is read-only, expected writeable"
                                            : "is writeable, expected read-only");
  }
  return spec.device < 0 || fail_array(check, "is on the CPU, expected device " +
                                                  std::to_string(spec.device));
}

// Arrays of other libraries (CuPy) are read through their NumPy-like attributes.
bool GuardProgram::Evaluation::check_other_array(const Check& check, PyObject* value) {
  const ArraySpec& spec = *check.array;
  Ref dtype = read_attribute(value, "dtype");
  int same_dtype = dtype ? PyObject_RichCompareBool(dtype.get(), spec.dtype.get(), Py_EQ) : 0;
  if (same_dtype != 1) {
    PyErr_Clear();
    return fail_array(check, "dtype mismatch: expected " + str_of(spec.dtype.get()) + ", actual " +
                                 (dtype ? str_of(dtype.get()) : std::string("none")));
  }
  Ref shape = read_attribute(value, "shape");
  if (!shape || !PyTuple_Check(shape.get()) ||
      static_cast<size_t>(PyTuple_GET_SIZE(shape.get())) != spec.shape.size()) {
    return fail_array(check, "ndim mismatch: expected " + std::to_string(spec.shape.size()));
  }
  for (size_t i = 0; i < spec.shape.size(); ++i) {
    Py_ssize_t size = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape.get(), i));
    if (size < 0) PyErr_Clear();
    if (!check_dim(check, i, size)) return false;
  }
  if (spec.layout == ArraySpec::Layout::C || spec.layout == ArraySpec::Layout::F) {
    bool c_order = spec.layout == ArraySpec::Layout::C;
    Ref contiguous = read_attribute(value, "flags", c_order ? "c_contiguous" : "f_contiguous");
    if (!contiguous || PyObject_IsTrue(contiguous.get()) != 1) {
      PyErr_Clear();
      return fail_array(check, c_order ? "is not C-contiguous" : "is not F-contiguous");
    }
  } else if (spec.layout == ArraySpec::Layout::Strides) {
    Ref strides = read_attribute(value, "strides");
    if (!strides || !PyTuple_Check(strides.get()) ||
        static_cast<size_t>(PyTuple_GET_SIZE(strides.get())) != spec.strides.size()) {
      return fail_array(check, "strides mismatch");
    }
    for (size_t i = 0; i < spec.strides.size(); ++i) {
      Py_ssize_t stride = PyLong_AsSsize_t(PyTuple_GET_ITEM(strides.get(), i));
      if (stride == -1 && PyErr_Occurred()) PyErr_Clear();
      if (!check_stride(check, i, stride)) return false;
    }
  }
  if (spec.writeable >= 0) {
    // CuPy arrays carry no writeable flag: device memory is always writeable.
    Ref flag = read_attribute(value, "flags", "writeable");
    bool writeable = !flag || PyObject_IsTrue(flag.get()) == 1;
    if (writeable != (spec.writeable == 1)) {
      return fail_array(check, writeable ? "is writeable, expected read-only"
                                         : "is read-only, expected writeable");
    }
  }
  if (spec.device >= 0) {
    Ref device = read_attribute(value, "device", "id");
    long id = device ? PyLong_AsLong(device.get()) : -1;
    if (id == -1) PyErr_Clear();
    if (id != spec.device) {
      return fail_array(check, "device mismatch: expected " + std::to_string(spec.device) +
                                   ", actual " + std::to_string(id));
    }
  }
  return true;
}

bool GuardProgram::check(const FrameView& frame, std::string* failure) const {
  Evaluation evaluation(*this, frame, failure);
  for (const Check& check : checks_) {
    if (!evaluation.run_check(check)) return false;
  }
  return true;
}

std::string GuardProgram::text() const {
  std::string result;
  for (const Check& check : checks_) {
    if (!result.empty()) result += "\n";
    result += check.text;
  }
  return result;
}

void GuardProgram::derive_dispatch_keys() {
  for (const Check& check : checks_) {
    if (check.source < 0 || sources_[check.source].kind != SourceKind::Local) continue;
    if (check.kind != CheckKind::Type && check.kind != CheckKind::Array) continue;
    Py_ssize_t slot = sources_[check.source].index;
    DispatchKey key{slot, reinterpret_cast<uintptr_t>(check.object.get()), false, 0};
    if (check.kind == CheckKind::Array) {
      const ArraySpec& spec = *check.array;
      key.type = reinterpret_cast<uintptr_t>(spec.type.get());
      key.is_array = true;
      if (spec.type.get() == reinterpret_cast<PyObject*>(&PyArray_Type)) {
        key.array_word = dtype_dispatch_word(reinterpret_cast<PyArray_Descr*>(spec.dtype.get()),
                                             static_cast<int>(spec.shape.size()));
      }
    }
    auto existing = std::find_if(dispatch_keys_.begin(), dispatch_keys_.end(),
                                 [slot](const DispatchKey& k) { return k.slot == slot; });
    if (existing == dispatch_keys_.end()) {
      dispatch_keys_.push_back(key);
    } else if (key.is_array) {
      *existing = key;
    }
  }
  std::sort(dispatch_keys_.begin(), dispatch_keys_.end(),
            [](const DispatchKey& a, const DispatchKey& b) { return a.slot < b.slot; });
}

}  // namespace pyjit
