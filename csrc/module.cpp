// The binding boundary: pyjit._C's functions and the GuardProgram class, via pybind11.
// The hook, the caches and the guards underneath use the raw C API.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "bench.h"
#include "block_cache.h"
#include "code_cache.h"
#include "compiled_function.h"
#include "eval_frame.h"
#include "guards.h"
#include "kernel_loader.h"
#include "launcher.h"
#include "ufuncs.h"

namespace py = pybind11;

namespace pyjit {

const GuardProgram* guard_program_from_object(PyObject* object) {
  py::handle handle(object);
  return py::isinstance<GuardProgram>(handle) ? handle.cast<const GuardProgram*>() : nullptr;
}

namespace {

py::object steal_or_throw(PyObject* object) {
  if (!object) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(object);
}

PyCodeObject* as_code(const py::handle& code) {
  if (!PyCode_Check(code.ptr())) {
    throw py::type_error("expected a code object, not " + std::string(Py_TYPE(code.ptr())->tp_name));
  }
  return reinterpret_cast<PyCodeObject*>(code.ptr());
}

FrameView view_of(const py::handle& frame) {
  FrameView view;
  if (!frame_info_view(frame.ptr(), &view)) throw py::error_already_set();
  return view;
}

void add_type(py::module_& module, const char* name, PyTypeObject* type) {
  if (PyModule_AddObjectRef(module.ptr(), name, reinterpret_cast<PyObject*>(type)) < 0) {
    throw py::error_already_set();
  }
}

}  // namespace
}  // namespace pyjit

PYBIND11_MODULE(_C, module) {
  using namespace pyjit;
  if (guards_init() < 0 || CodeCache::init() < 0 || eval_frame_init() < 0 ||
      compiled_function_init() < 0 || kernel_loader_init() < 0 || launcher_init_type() < 0 ||
      block_cache_init() < 0) {
    throw py::error_already_set();
  }
  module.doc() = "pyjit's native core: the PEP 523 frame hook, per-code caches, guards, timing, "
                 "the kernel loader.";
  py::object erf = py::reinterpret_steal<py::object>(make_erf_ufunc());
  if (!erf) throw py::error_already_set();
  module.attr("erf") = erf;

  py::class_<GuardProgram>(module, "GuardProgram")
      .def(py::init([](const py::handle& sources, const py::handle& checks) {
             std::unique_ptr<GuardProgram> program = GuardProgram::parse(sources.ptr(), checks.ptr());
             if (!program) throw py::error_already_set();
             return program;
           }),
           py::arg("sources"), py::arg("checks"))
      .def("check", [](const GuardProgram& program, const py::handle& frame) {
        return program.check(view_of(frame));
      }, py::arg("frame"))
      .def("first_failure", [](const GuardProgram& program, const py::handle& frame) {
        std::string failure;
        return program.check(view_of(frame), &failure) ? std::nullopt
                                                        : std::optional<std::string>(failure);
      }, py::arg("frame"))
      .def("__str__", &GuardProgram::text)
      .def("__repr__", [](const GuardProgram& program) {
        return "<GuardProgram\n" + program.text() + "\n>";
      });

  add_type(module, "FrameInfo", frame_info_type());
  add_type(module, "CompiledFunction", compiled_function_type());
  add_type(module, "KernelLibrary", kernel_library_type());
  add_type(module, "Kernel", kernel_type());
  add_type(module, "Launcher", launcher_type());
  module.attr("SKIP") = py::handle(skip_sentinel());

  module.def("set_eval_frame", [](const py::handle& callback) {
    return steal_or_throw(set_eval_frame(callback.ptr()));
  }, py::arg("callback"));
  module.def("get_eval_frame", [] { return steal_or_throw(get_eval_frame()); });
  module.def("hook_installed", &hook_installed);
  module.def("reset", &CodeCache::reset_all);
  module.def("cache_entries", [](const py::handle& code) {
    return steal_or_throw(CodeCache::entries_of(as_code(code)));
  }, py::arg("code"));
  module.def("mark_skip", [](const py::handle& code) { CodeCache::mark_skip(as_code(code)); },
             py::arg("code"));
  module.def("is_skipped", [](const py::handle& code) {
    bool skipped;
    CodeCache::find(as_code(code), &skipped);
    return skipped;
  }, py::arg("code"));
  module.def("block_cache_stats", [] { return steal_or_throw(block_cache_stats()); });
  module.def("empty_block_cache", &empty_block_cache);
  module.def("bench", [](const py::handle& fn, const py::handle& args, Py_ssize_t n,
                         Py_ssize_t warmup) {
    return steal_or_throw(bench(fn.ptr(), args.ptr(), n, warmup));
  }, py::arg("fn"), py::arg("args"), py::arg("n"), py::arg("warmup") = 0);
}
