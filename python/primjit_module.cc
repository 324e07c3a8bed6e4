// The `primjit` Python module: parse text kernels, compile them lazily and call them on DLPack
// tensors (NumPy arrays through `__dlpack__`) and Python numbers.
//
//   import numpy as np, primjit
//   mod = primjit.parse(text)                       # parsed and verified; str(mod) prints it
//   jit = primjit.Jit()                             # compiler state and cache, as in C++
//   k = jit.kernel(mod, "scale", target="llvm")     # compiles nothing yet
//   a = np.arange(4, dtype=np.float32); b = np.zeros(4, dtype=np.float32)
//   k(a, b, 2.0)                                    # b is written in place
//   k.stats()["misses"]                             # 1
//
// Tensors are borrowed for the call: the module takes each argument's DLPack capsule, passes
// its DLTensor and leaves the capsule unconsumed, so its producer frees it as usual. Every
// primjit::Error becomes primjit.Error (a RuntimeError) with the same message.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "primjit/primjit.h"
#include "primjit/version.h"

namespace py = pybind11;

namespace {

using primjit::Arg;

primjit::Target parse_target(const std::string& name) {
  if (name.empty()) return primjit::Target();
  if (name == "llvm") return primjit::Target::llvm();
  if (name == "cuda") return primjit::Target::cuda();
  if (name == "emu") return primjit::Target::emu();
  throw primjit::Error(
      "target must be \"llvm\", \"cuda\", \"emu\" or \"\" (the function's own, "
      "else the GPU when there is one, else the CPU), got \"" +
      name + "\"");
}

primjit::Policy parse_policy(const std::string& name) {
  if (name == "exact") return primjit::Policy::kExact;
  if (name == "dynamic") return primjit::Policy::kDynamic;
  if (name == "auto") return primjit::Policy::kAuto;
  if (name == "bucketed") return primjit::Policy::kBucketed;
  throw primjit::Error("policy must be \"exact\", \"dynamic\", \"auto\" or \"bucketed\", got \"" +
                       name + "\"");
}

// The DLTensor inside a capsule named "dltensor" (unconsumed).
DLTensor* capsule_tensor(const py::handle& capsule, size_t index) {
  void* pointer = PyCapsule_GetPointer(capsule.ptr(), "dltensor");
  if (pointer == nullptr) {
    PyErr_Clear();
    const char* name = PyCapsule_GetName(capsule.ptr());
    PyErr_Clear();
    throw py::value_error("argument #" + std::to_string(index) + ": a DLPack capsule named \"" +
                          std::string(name != nullptr ? name : "") +
                          "\", not \"dltensor\" (already consumed?); pass the array itself, or "
                          "a fresh x.__dlpack__()");
  }
  return &static_cast<DLManagedTensor*>(pointer)->dl_tensor;
}

// Converts Python arguments; `capsules` keeps the DLPack capsules alive through the call.
std::vector<Arg> convert_args(const py::args& args, std::vector<py::object>& capsules) {
  std::vector<Arg> out;
  out.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    py::handle a = args[i];
    if (PyBool_Check(a.ptr())) {
      out.emplace_back(a.cast<bool>());
    } else if (PyLong_Check(a.ptr())) {
      out.emplace_back(a.cast<int64_t>());
    } else if (PyFloat_Check(a.ptr())) {
      out.emplace_back(a.cast<double>());
    } else if (PyCapsule_CheckExact(a.ptr())) {
      capsules.push_back(py::reinterpret_borrow<py::object>(a));
      out.emplace_back(capsule_tensor(a, i));
    } else if (py::hasattr(a, "__dlpack__")) {
      py::object capsule = a.attr("__dlpack__")();
      capsules.push_back(capsule);
      out.emplace_back(capsule_tensor(capsule, i));
    } else {
      throw py::type_error("argument #" + std::to_string(i) +
                           ": expected a tensor with __dlpack__ (a NumPy array, ...), a DLPack "
                           "capsule, a bool, an int or a float; got " +
                           std::string(py::str(py::type::handle_of(a).attr("__name__"))));
    }
  }
  return out;
}

py::object to_python(const PJValue& v) {
  switch (v.type_index) {
    case kPJInt:
      return py::int_(v.v_int64);
    case kPJBool:
      return py::bool_(v.v_int64 != 0);
    case kPJFloat:
      return py::float_(v.v_float64);
    default:
      return py::none();
  }
}

py::dict stats_dict(const primjit::KernelStats& st) {
  py::dict d;
  d["calls"] = st.calls;
  d["hits"] = st.hits;
  d["misses"] = st.misses;
  d["disk_hits"] = st.disk_hits;
  d["remote_hits"] = st.remote_hits;
  d["variants"] = st.variants;
  d["evictions"] = st.evictions;
  d["reasons"] = st.reasons;
  return d;
}

primjit::IRModule parse_verified(const std::string& text, const std::string& file_name) {
  primjit::IRModule mod = primjit::parse(text, file_name);
  primjit::verify_well_formed(mod);
  return mod;
}

std::vector<std::string> function_names(const primjit::IRModule& mod) {
  std::vector<std::string> names;
  for (const auto& [gv, func] : mod->functions) names.push_back(gv->name);
  return names;
}

}  // namespace

PYBIND11_MODULE(primjit, m) {
  m.doc() = "primjit: parse, compile lazily and call TIR-style kernels on DLPack tensors";
  m.attr("__version__") = PRIMJIT_VERSION_STRING;
  py::register_exception<primjit::Error>(m, "Error", PyExc_RuntimeError);

  py::class_<primjit::IRModule>(m, "Module", "A parsed, verified module of PrimFuncs.")
      .def_property_readonly("functions", &function_names, "The function names, in order.")
      .def("__str__", [](const primjit::IRModule& mod) { return primjit::print(mod); })
      .def("__repr__", [](const primjit::IRModule& mod) {
        std::string names;
        for (const std::string& name : function_names(mod)) {
          names += (names.empty() ? "" : ", ") + name;
        }
        return "<primjit.Module: " + names + ">";
      });

  m.def("parse", &parse_verified, py::arg("text"), py::arg("file_name") = "<string>",
        "Parses a module (or one @T.prim_func) in the text format and verifies it; raises "
        "primjit.Error naming FILE:LINE:COL on a mistake.");

  py::class_<primjit::Kernel>(m, "Kernel", "A kernel: compiles once per argument key, lazily.")
      .def(
          "__call__",
          [](const primjit::Kernel& k, const py::args& args) {
            std::vector<py::object> capsules;
            std::vector<Arg> packed = convert_args(args, capsules);
            PJValue result;
            {
              py::gil_scoped_release release;
              result = k.call(packed);
            }
            return to_python(result);
          },
          "Calls the kernel: tensors (objects with __dlpack__) are written in place.")
      .def(
          "stats", [](const primjit::Kernel& k) { return stats_dict(k.stats()); },
          "calls, hits, misses (compiles), disk_hits, remote_hits, variants, evictions, reasons")
      .def_property_readonly("target", [](const primjit::Kernel& k) { return k.target()->kind; });

  py::class_<primjit::Jit>(m, "Jit", "Compiler state and the variant cache; one is enough.")
      .def(py::init([](const std::string& cache_dir, py::object disk_cache) {
             primjit::JitOptions options;
             options.cache_dir = cache_dir;
             if (!disk_cache.is_none()) {
               options.disk_cache = disk_cache.cast<bool>() ? primjit::DiskCacheMode::kEnabled
                                                            : primjit::DiskCacheMode::kDisabled;
             }
             return std::make_unique<primjit::Jit>(options);
           }),
           py::arg("cache_dir") = "", py::arg("disk_cache") = py::none(),
           "disk_cache: None follows PRIMJIT_CACHE, True or False forces it.")
      .def(
          "kernel",
          [](primjit::Jit& jit, const primjit::IRModule& mod, const std::string& name,
             const std::string& target, const std::string& policy) {
            primjit::KernelOptions options;
            options.target = parse_target(target);
            options.policy = parse_policy(policy);
            return jit.kernel(mod, name, options);
          },
          py::arg("module"), py::arg("name"), py::arg("target") = "", py::arg("policy") = "exact",
          py::keep_alive<0, 1>(),
          "A kernel for function `name` of `module`; compiles nothing until called.");
}
