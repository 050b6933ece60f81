// Builds GuardProgram objects from the Python description in pyjit/_C.pyi; every
// malformed program is a TypeError or ValueError naming the offending item.
#include "guards.h"

#include "object_text.h"

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL pyjit_ARRAY_API
#define NO_IMPORT_ARRAY
#include <numpy/arrayobject.h>

#include <algorithm>

namespace pyjit {
namespace {

bool is_kind(PyObject* item, const char* kind) {
  return PyUnicode_Check(item) && PyUnicode_CompareWithASCIIString(item, kind) == 0;
}

bool expect_size(PyObject* item, Py_ssize_t size, const char* form) {
  if (PyTuple_GET_SIZE(item) == size) return true;
  PyErr_Format(PyExc_ValueError, "guard item %R must have the form %s", item, form);
  return false;
}

// A non-negative index below `limit` (or any size when limit < 0); -1 with an exception set.
Py_ssize_t as_index(PyObject* value, Py_ssize_t limit, const char* what) {
  if (!PyLong_Check(value) || PyBool_Check(value)) {
    PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", what, Py_TYPE(value)->tp_name);
    return -1;
  }
  Py_ssize_t index = PyLong_AsSsize_t(value);
  if (index == -1 && PyErr_Occurred()) return -1;
  if (index < 0 || (limit >= 0 && index >= limit)) {
    PyErr_Format(PyExc_ValueError, "%s %zd is out of range", what, index);
    return -1;
  }
  return index;
}

const char* as_name(PyObject* value, const char* what) {
  if (!PyUnicode_Check(value)) {
    PyErr_Format(PyExc_TypeError, "%s must be a str, not %.100s", what, Py_TYPE(value)->tp_name);
    return nullptr;
  }
  return PyUnicode_AsUTF8(value);
}

bool is_guardable_constant(PyObject* value) {
  if (value == Py_None || PyBool_Check(value) || PyLong_CheckExact(value) ||
      PyFloat_CheckExact(value) || PyComplex_CheckExact(value) || PyUnicode_CheckExact(value) ||
      PyBytes_CheckExact(value)) {
    return true;
  }
  if (!PyTuple_CheckExact(value)) return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(value); ++i) {
    if (!is_guardable_constant(PyTuple_GET_ITEM(value, i))) return false;
  }
  return true;
}

}  // namespace

std::unique_ptr<GuardProgram> GuardProgram::parse(PyObject* sources, PyObject* checks) {
  auto program = std::make_unique<GuardProgram>();
  if (!program->parse_sources(sources) || !program->parse_checks(checks)) return nullptr;
  program->derive_dispatch_keys();
  return program;
}

bool GuardProgram::parse_sources(PyObject* sources) {
  Ref items = Ref::steal(PySequence_Fast(sources, "guard sources must be a sequence of tuples"));
  if (!items) return false;
  Py_ssize_t count = PySequence_Fast_GET_SIZE(items.get());
  for (Py_ssize_t i = 0; i < count; ++i) {
    PyObject* item = PySequence_Fast_GET_ITEM(items.get(), i);
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) < 2) {
      PyErr_Format(PyExc_TypeError, "guard source %R must be a tuple (kind, ...)", item);
      return false;
    }
    PyObject* kind = PyTuple_GET_ITEM(item, 0);
    PyObject* first = PyTuple_GET_ITEM(item, 1);
    Source source;
    const char* name = nullptr;
    if (is_kind(kind, "local") || is_kind(kind, "closure")) {
      source.kind = is_kind(kind, "local") ? SourceKind::Local : SourceKind::Closure;
      if (!expect_size(item, 3, "(kind, index, name)")) return false;
      source.index = as_index(first, -1, "source index");
      name = as_name(PyTuple_GET_ITEM(item, 2), "source name");
      if (source.index < 0 || !name) return false;
      source.name = name;
      if (source.kind == SourceKind::Local) max_local_slot_ = std::max(max_local_slot_, source.index);
    } else if (is_kind(kind, "global") || is_kind(kind, "builtin")) {
      source.kind = is_kind(kind, "global") ? SourceKind::Global : SourceKind::Builtin;
      if (!expect_size(item, 2, "(kind, name)") || !(name = as_name(first, "source name"))) {
        return false;
      }
      source.key = Ref::borrow(first);
      source.name = name;
    } else if (is_kind(kind, "attr") || is_kind(kind, "item")) {
      bool attr = is_kind(kind, "attr");
      source.kind = attr ? SourceKind::Attr : SourceKind::Item;
      if (!expect_size(item, 3, "(kind, parent, key)")) return false;
      Py_ssize_t parent = as_index(first, i, "parent source");
      if (parent < 0) return false;
      source.parent = static_cast<int>(parent);
      PyObject* key = PyTuple_GET_ITEM(item, 2);
      if (attr && !(name = as_name(key, "attribute name"))) return false;
      if (!attr && PyObject_Hash(key) == -1) return false;
      source.key = Ref::borrow(key);
      const std::string& parent_name = sources_[parent].name;
      source.name = attr ? parent_name + "." + name : parent_name + "[" + repr_of(key) + "]";
    } else {
      PyErr_Format(PyExc_ValueError, "unknown guard source kind %R", kind);
      return false;
    }
    sources_.push_back(std::move(source));
  }
  return true;
}

bool GuardProgram::parse_checks(PyObject* checks) {
  Ref items = Ref::steal(PySequence_Fast(checks, "guard checks must be a sequence of tuples"));
  if (!items) return false;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(items.get()); ++i) {
    if (!parse_check(PySequence_Fast_GET_ITEM(items.get(), i))) return false;
  }
  return true;
}

bool GuardProgram::parse_check(PyObject* item) {
  if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) < 3) {
    PyErr_Format(PyExc_TypeError, "guard check %R must be a tuple (kind, source, ...)", item);
    return false;
  }
  PyObject* kind = PyTuple_GET_ITEM(item, 0);
  PyObject* source = PyTuple_GET_ITEM(item, 1);
  PyObject* operand = PyTuple_GET_ITEM(item, 2);
  Check check;
  bool python = is_kind(kind, "python");
  bool compiler = is_kind(kind, "compiler");
  if (compiler) {
    // NOTE(compiler-guard) in pyjit/frontend/convert.py: the hook's callback has this
    // compiler. Checked in C: through a Python callable it cost about 100 ns per hit.
    if (source != Py_None || !expect_size(item, 4, "('compiler', None, compiler, text)")) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a compiler check reads no source");
      return false;
    }
    const char* text = as_name(PyTuple_GET_ITEM(item, 3), "compiler check text");
    if (!text) return false;
    check.kind = CheckKind::Compiler;
    check.object = Ref::borrow(operand);
    check.text = text;
    checks_.push_back(std::move(check));
    return true;
  }
  if (!(python && source == Py_None)) {
    Py_ssize_t index = as_index(source, static_cast<Py_ssize_t>(sources_.size()), "check source");
    if (index < 0) return false;
    check.source = static_cast<int>(index);
  }
  const std::string subject = check.source >= 0 ? sources_[check.source].name : std::string();
  check.object = Ref::borrow(operand);
  if (python) {
    check.kind = CheckKind::Python;
    if (!expect_size(item, 4, "('python', source, fn, text)")) return false;
    const char* text = as_name(PyTuple_GET_ITEM(item, 3), "python check text");
    if (!text) return false;
    if (!PyCallable_Check(operand)) {
      PyErr_SetString(PyExc_TypeError, "a python guard check needs a callable");
      return false;
    }
    // A check on no source is a whole expression already ("x.shape[0] > y.shape[0]").
    check.text = check.source >= 0 ? std::string(text) + "(" + subject + ")" : std::string(text);
  } else if (!expect_size(item, 3, "(kind, source, operand)")) {
    return false;
  } else if (is_kind(kind, "type")) {
    check.kind = CheckKind::Type;
    if (!PyType_Check(operand)) {
      PyErr_Format(PyExc_TypeError, "a type check needs a type, not %R", operand);
      return false;
    }
    check.text = "type(" + subject + ") is " + type_name(operand);
  } else if (is_kind(kind, "id")) {
    check.kind = CheckKind::Id;
    check.text = subject + " is " + repr_of(operand);
  } else if (is_kind(kind, "eq")) {
    check.kind = CheckKind::Eq;
    if (!is_guardable_constant(operand)) {
      PyErr_Format(PyExc_TypeError,
                   "an eq check compares with int, float, complex, str, bytes, bool, None or "
                   "tuples of these, not %.100s", Py_TYPE(operand)->tp_name);
      return false;
    }
    check.text = subject + " == " + repr_of(operand);
  } else if (is_kind(kind, "len")) {
    check.kind = CheckKind::Len;
    if ((check.length = as_index(operand, -1, "length")) < 0) return false;
    check.text = "len(" + subject + ") == " + std::to_string(check.length);
  } else if (is_kind(kind, "dict_keys")) {
    check.kind = CheckKind::DictKeys;
    if (!PyTuple_Check(operand)) {
      PyErr_SetString(PyExc_TypeError, "a dict_keys check needs a tuple of keys");
      return false;
    }
    check.text = "tuple(" + subject + ") == " + repr_of(operand);
  } else if (is_kind(kind, "array")) {
    check.kind = CheckKind::Array;
    if (!parse_array_spec(check, operand)) return false;
  } else {
    PyErr_Format(PyExc_ValueError, "unknown guard check kind %R", kind);
    return false;
  }
  checks_.push_back(std::move(check));
  return true;
}

bool GuardProgram::parse_array_spec(Check& check, PyObject* spec_dict) {
  static const char* const known[] = {"type", "dtype", "shape", "strides", "writeable", "device"};
  if (!PyDict_Check(spec_dict)) {
    PyErr_SetString(PyExc_TypeError, "an array check needs a dict spec");
    return false;
  }
  Py_ssize_t position = 0;
  PyObject *key, *value;
  while (PyDict_Next(spec_dict, &position, &key, &value)) {
    if (std::none_of(std::begin(known), std::end(known),
                     [key](const char* name) { return is_kind(key, name); })) {
      PyErr_Format(PyExc_ValueError, "unknown array spec key %R", key);
      return false;
    }
  }
  auto spec = std::make_unique<ArraySpec>();
  PyObject* type = PyDict_GetItemString(spec_dict, "type");
  PyObject* dtype = PyDict_GetItemString(spec_dict, "dtype");
  PyObject* shape = PyDict_GetItemString(spec_dict, "shape");
  if (!type || !dtype || !shape) {
    PyErr_SetString(PyExc_ValueError, "an array spec needs 'type', 'dtype' and 'shape'");
    return false;
  }
  if (!PyType_Check(type)) {
    PyErr_Format(PyExc_TypeError, "array spec 'type' must be a type, not %R", type);
    return false;
  }
  spec->type = Ref::borrow(type);
  PyArray_Descr* descr = nullptr;
  if (!PyArray_DescrConverter(dtype, &descr)) return false;
  spec->dtype = Ref::steal(reinterpret_cast<PyObject*>(descr));
  if (!parse_shape(*spec, shape) || !parse_strides(*spec, PyDict_GetItemString(spec_dict, "strides"))) {
    return false;
  }
  PyObject* writeable = PyDict_GetItemString(spec_dict, "writeable");
  if (writeable && writeable != Py_None) {
    if (!PyBool_Check(writeable)) {
      PyErr_SetString(PyExc_TypeError, "array spec 'writeable' must be None or a bool");
      return false;
    }
    spec->writeable = writeable == Py_True;
  }
  PyObject* device = PyDict_GetItemString(spec_dict, "device");
  if (device && device != Py_None && (spec->device = as_index(device, -1, "device")) < 0) return false;

  std::string dims;
  for (const DimSpec& dim : spec->shape) {
    if (!dims.empty()) dims += ", ";
    dims += dim.kind == DimSpec::Kind::Static ? std::to_string(dim.value)
            : dim.kind == DimSpec::Kind::Any  ? std::string("?")
                                              : symbols_[dim.value];
  }
  if (spec->shape.size() == 1) dims += ",";
  std::string layout;
  if (spec->layout == ArraySpec::Layout::C || spec->layout == ArraySpec::Layout::F) {
    layout = spec->layout == ArraySpec::Layout::C ? ", strides=C" : ", strides=F";
  } else if (spec->layout == ArraySpec::Layout::Strides) {
    std::string strides;
    for (Py_ssize_t stride : spec->strides) {
      if (!strides.empty()) strides += ", ";
      strides += stride == kAnyStride ? std::string("?") : std::to_string(stride);
    }
    layout = ", strides=(" + strides + (spec->strides.size() == 1 ? ",)" : ")");
  }
  Ref dtype_text = Ref::steal(PyObject_Str(spec->dtype.get()));
  check.text = sources_[check.source].name + " is " + type_name(type) +
               "(dtype=" + text_of(dtype_text.get()) +
               ", shape=(" + dims + ")" + layout +
               (spec->writeable < 0 ? "" : spec->writeable ? ", writeable" : ", read-only") +
               (spec->device < 0 ? "" : ", device=" + std::to_string(spec->device)) + ")";
  check.array = std::move(spec);
  return true;
}

bool GuardProgram::parse_shape(ArraySpec& spec, PyObject* shape) {
  if (!PyTuple_Check(shape) && !PyList_Check(shape)) {
    PyErr_SetString(PyExc_TypeError, "array spec 'shape' must be a tuple");
    return false;
  }
  Ref items = Ref::steal(PySequence_Tuple(shape));
  if (!items) return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(items.get()); ++i) {
    PyObject* dim = PyTuple_GET_ITEM(items.get(), i);
    if (dim == Py_None) {
      spec.shape.push_back({DimSpec::Kind::Any, 0});
    } else if (PyUnicode_Check(dim)) {
      std::string symbol = PyUnicode_AsUTF8(dim);
      auto found = std::find(symbols_.begin(), symbols_.end(), symbol);
      if (found == symbols_.end()) found = symbols_.insert(symbols_.end(), symbol);
      spec.shape.push_back({DimSpec::Kind::Symbol, found - symbols_.begin()});
    } else {
      Py_ssize_t size = as_index(dim, -1, "static size");
      if (size < 0) return false;
      spec.shape.push_back({DimSpec::Kind::Static, size});
    }
  }
  return true;
}

bool GuardProgram::parse_strides(ArraySpec& spec, PyObject* strides) {
  if (!strides || strides == Py_None) return true;
  if (is_kind(strides, "C") || is_kind(strides, "F")) {
    spec.layout = is_kind(strides, "C") ? ArraySpec::Layout::C : ArraySpec::Layout::F;
    return true;
  }
  if (!PyTuple_Check(strides) || static_cast<size_t>(PyTuple_GET_SIZE(strides)) != spec.shape.size()) {
    PyErr_SetString(PyExc_ValueError,
                    "array spec 'strides' must be None, 'C', 'F' or a tuple with one item per dim");
    return false;
  }
  spec.layout = ArraySpec::Layout::Strides;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(strides); ++i) {
    PyObject* stride = PyTuple_GET_ITEM(strides, i);
    if (stride == Py_None) {
      spec.strides.push_back(kAnyStride);
      continue;
    }
    if (!PyLong_Check(stride) || PyBool_Check(stride)) {
      PyErr_SetString(PyExc_TypeError, "a stride must be an int or None");
      return false;
    }
    Py_ssize_t value = PyLong_AsSsize_t(stride);
    if (value == -1 && PyErr_Occurred()) return false;
    spec.strides.push_back(value);
  }
  return true;
}

}  // namespace pyjit
