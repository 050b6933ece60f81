// Readable text of Python objects for guard text and failure reasons; never raises.
#pragma once

#include <Python.h>

#include <string>

#include "ref.h"

namespace pyjit {

inline std::string text_of(PyObject* text) {
  const char* utf8 = text ? PyUnicode_AsUTF8(text) : nullptr;
  if (!utf8) {
    PyErr_Clear();
    return "<unprintable>";
  }
  return utf8;
}

inline std::string str_of(PyObject* object) {
  return text_of(Ref::steal(PyObject_Str(object)).get());
}

inline std::string repr_of(PyObject* object, size_t limit = 80) {
  std::string result = text_of(Ref::steal(PyObject_Repr(object)).get());
  return result.size() > limit ? result.substr(0, limit - 3) + "..." : result;
}

// "numpy.ndarray", "int", "mymodule.Thing".
inline std::string type_name(PyObject* type) {
  std::string name = reinterpret_cast<PyTypeObject*>(type)->tp_name;
  if (name.find('.') != std::string::npos) return name;
  Ref module = Ref::steal(PyObject_GetAttrString(type, "__module__"));
  if (!module || !PyUnicode_Check(module.get())) {
    PyErr_Clear();
    return name;
  }
  std::string module_name = text_of(module.get());
  return module_name == "builtins" ? name : module_name + "." + name;
}

inline std::string type_name_of(PyObject* object) {
  return type_name(reinterpret_cast<PyObject*>(Py_TYPE(object)));
}

}  // namespace pyjit
