// primjit-crosscheck: run every GPU kernel of text programs on a device target and in the
// reference interpreter, on the same generated inputs, and compare the results.
//
//   primjit-crosscheck [--target=cuda|emu] [--verbose] FILE...
//   primjit-crosscheck --devices
//
// FILE is IR text; of a file of pass goldens (cases separated by "# -----" lines) the inputs
// are read, case by case. The GPU functions of each (callable functions whose target is cuda,
// or that launch threads) run through the Jit twice: with target emu (the reference) and with
// --target (default cuda; emu, the reference again, checks the tool itself without a GPU).
// For --target the tensors are copied to the target's memory (emu: other host memory) and
// back, views kept: strided and offset tensors keep their strides and byte offset.
// Inputs and comparison are emu::check_backend's: random, all-zero and all-one inputs;
// integers exactly, floats within docs/semantics.md's tolerances. One line per function that
// differs or is skipped (per function with --verbose), then the totals:
//   crosscheck (cuda vs emu): 14 files, 31 kernels: 27 compared, 3 skipped, 1 failed
// Exit status 1 when a kernel differs, or fails on the target where the interpreter runs it;
// also when the target cannot run at all (--target=cuda without a GPU).
//
// --devices prints the CUDA driver's API version and every device, e.g.
//   driver API version: 13000
//   device 0: NVIDIA H100 80GB HBM3 (sm_90, 132 multiprocessors)
// and exits 1 with the reason when there is no driver or no device.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "jit/cuda/driver.h"
#include "jit/emu/differential.h"
#include "primjit/error.h"
#include "primjit/ir.h"
#include "primjit/ir/functor.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/passes.h"
#include "primjit/tensor.h"
#include "tools/tool_main.h"

namespace {

namespace pj = primjit;
namespace emu = primjit::jit::emu;

constexpr const char* kUsage =
    "usage: primjit-crosscheck [--target=cuda|emu] [--verbose] FILE...\n"
    "       primjit-crosscheck --devices\n";

struct Options {
  std::string target = "cuda";
  bool verbose = false;
  bool devices = false;
  std::vector<std::string> files;
};

Options parse_args(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--target=", 0) == 0) {
      o.target = a.substr(9);
      PRIMJIT_USER_CHECK(o.target == "cuda" || o.target == "emu")
          << "--target=" << o.target << ": expected cuda or emu\n"
          << kUsage;
    } else if (a == "--verbose") {
      o.verbose = true;
    } else if (a == "--devices") {
      o.devices = true;
    } else if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      std::exit(0);
    } else {
      PRIMJIT_USER_CHECK(a.rfind("--", 0) != 0) << "unknown option '" << a << "'\n" << kUsage;
      o.files.push_back(a);
    }
  }
  PRIMJIT_USER_CHECK(o.devices || !o.files.empty()) << "no FILE given\n" << kUsage;
  return o;
}

int print_devices() {
  std::string reason;
  pj::jit::CudaDriver* driver = pj::jit::CudaDriver::try_get(&reason);
  PRIMJIT_USER_CHECK(driver != nullptr) << reason;
  std::cout << "driver API version: " << driver->version() << "\n";
  const int n = driver->device_count();
  PRIMJIT_USER_CHECK(n > 0) << "the CUDA driver (API version " << driver->version()
                            << ") sees no GPU: check nvidia-smi and CUDA_VISIBLE_DEVICES";
  for (int i = 0; i < n; ++i) {
    pj::jit::DeviceInfo d = driver->device_info(i);
    std::cout << "device " << i << ": " << d.name << " (sm_" << d.arch() << ", "
              << d.multiprocessors << " multiprocessors)\n";
  }
  return 0;
}

// The programs of a file: the whole text, or for pass goldens (sections separated by "# -----"
// lines, each input followed by its expected output) the inputs that are no error case.
std::vector<std::string> programs_of(const std::string& text) {
  std::vector<std::string> sections(1);
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# -----", 0) == 0) {
      sections.emplace_back();
    } else {
      sections.back() += line + "\n";
    }
  }
  if (sections.size() == 1) return sections;
  std::vector<std::string> inputs;
  for (size_t i = 0; i < sections.size(); ++i) {
    if (sections[i].find("@T.prim_func") == std::string::npos) continue;
    if (sections[i].find("# expected-error:") != std::string::npos) continue;
    inputs.push_back(sections[i]);
    ++i;  // its expected output
  }
  return inputs;
}

bool launches_threads(const pj::PrimFunc& f) {
  bool found = false;
  pj::post_order_visit(f->body, [&](const pj::Ref<pj::Object>& node) {
    if (const auto* a = node.as<pj::AttrStmt>(); a && a->key == pj::attr::kThreadExtent) {
      found = true;
    }
  });
  return found;
}

// The functions to compare: those a user calls that run on a GPU.
std::vector<std::string> gpu_functions(const pj::IRModule& module) {
  std::vector<std::string> names;
  for (const auto& [gvar, func] : module->functions) {
    if (func->is_kernel()) continue;
    pj::Target t = func->target();
    if (t.defined() && t->is_device() && !t->host.defined()) continue;  // launched, not called
    // An explicit target other than cuda (emu regions, a CPU function) is no GPU program.
    if (t.defined() && t->kind != "cuda") continue;
    if (t.defined() || launches_threads(func)) names.push_back(gvar->name);
  }
  return names;
}

// Bytes from `t.data` that the view `t` spans: its byte offset, then up to its last element,
// the gaps of a strided view included (emu::HostTensor's storage: one element per index).
size_t span_bytes(const DLTensor& t, int64_t elem_bytes) {
  int64_t last = 0;  // the last element's index from data + byte_offset
  int64_t compact = 1;
  for (int d = t.ndim; d-- > 0;) {
    if (t.shape[d] == 0) return static_cast<size_t>(t.byte_offset);
    last += (t.shape[d] - 1) * (t.strides != nullptr ? t.strides[d] : compact);
    compact *= t.shape[d];
  }
  return static_cast<size_t>(t.byte_offset) + static_cast<size_t>((last + 1) * elem_bytes);
}

// A host tensor's storage copied to `device` with the same view on it: byte offset and strides
// kept, so a strided or offset parameter reads what the interpreter reads (a compact copy of
// the first bytes would not).
struct Staged {
  pj::Tensor storage;  // `pad` bytes, then the bytes `view` spans, on the device
  DLTensor view{};
  size_t pad = 0, bytes = 0;
};

Staged stage(const DLTensor& host, DLDevice device, size_t i) {
  pj::DataType dtype;
  PRIMJIT_USER_CHECK(
      pj::DataType::from_dlpack(host.dtype.code, host.dtype.bits, host.dtype.lanes, &dtype))
      << "argument #" << i << " has a dtype a Tensor cannot hold";
  const int64_t elem_bytes = std::max(1, host.dtype.bits / 8) * host.dtype.lanes;
  if (static_cast<int64_t>(pj::Tensor::zeros({2}, dtype).nbytes()) != 2 * elem_bytes) {
    throw emu::UnsupportedError("argument #" + std::to_string(i) + " (" + dtype.str() +
                                ") is laid out differently in a Tensor");
  }
  Staged s;
  s.bytes = span_bytes(host, elem_bytes);
  // The Jit checks data + byte_offset against the buffer's data_alignment (64 by default on
  // cuda): the storage starts `pad` bytes in so that the first element is aligned, as an
  // offset view of an aligned tensor would have it.
  s.pad = (pj::kTensorAlignment - host.byte_offset % pj::kTensorAlignment) % pj::kTensorAlignment;
  pj::Tensor bytes = pj::Tensor::zeros({static_cast<int64_t>(std::max<size_t>(1, s.pad + s.bytes))},
                                       pj::DataType::UInt(8));
  if (s.bytes > 0) std::memcpy(bytes.data<uint8_t>() + s.pad, host.data, s.bytes);
  s.storage = bytes.to(device);
  s.view = host;
  s.view.device = device;
  s.view.data = s.storage.dl()->data;
  s.view.byte_offset = s.storage.dl()->byte_offset + s.pad + host.byte_offset;
  return s;
}

// Calls function `name` of `module` through the Jit with `target`. With `stage_tensors` the
// tensors travel to the target's device and back (for emu: to other host memory, so that
// --target=emu checks this staging too); without, the Jit gets the inputs' own tensors.
std::optional<emu::Arg> call_through_jit(pj::Jit& jit, const pj::IRModule& module,
                                         const pj::Target& target, bool stage_tensors,
                                         const std::string& name, std::span<const emu::Arg> args) {
  const DLDevice device = target->kind == "cuda" ? DLDevice{kDLCUDA, 0} : DLDevice{kDLCPU, 0};
  pj::KernelOptions options;
  options.target = target;
  pj::Kernel kernel = jit.kernel(module, name, options);
  std::vector<DLTensor> host(args.size());
  std::vector<Staged> staged(args.size());
  std::vector<pj::Arg> call;
  for (size_t i = 0; i < args.size(); ++i) {
    const emu::Arg& a = args[i];
    switch (a.kind()) {
      case emu::Arg::Kind::kTensor:
        host[i] = *a.tensor();
        host[i].device = DLDevice{kDLCPU, 0};
        if (!stage_tensors) {
          call.emplace_back(&host[i]);
          break;
        }
        staged[i] = stage(host[i], device, i);
        call.emplace_back(&staged[i].view);
        break;
      case emu::Arg::Kind::kInt:
        call.emplace_back(a.as_int());
        break;
      case emu::Arg::Kind::kFloat:
        call.emplace_back(a.as_float());
        break;
      case emu::Arg::Kind::kBool:
        call.emplace_back(a.as_bool());
        break;
      default:
        throw emu::UnsupportedError("argument #" + std::to_string(i) + " (" + a.str() +
                                    ") cannot be passed through the Jit");
    }
  }
  PJValue r = kernel.call(call);
  for (size_t i = 0; i < args.size(); ++i) {
    if (!staged[i].storage.defined() || staged[i].bytes == 0) continue;
    pj::Tensor back = staged[i].storage.to({kDLCPU, 0});
    std::memcpy(host[i].data, back.data<uint8_t>() + staged[i].pad, staged[i].bytes);
  }
  std::optional<emu::Arg> result;
  if (r.type_index == kPJInt) result = emu::Arg(r.v_int64);
  if (r.type_index == kPJBool) result = emu::Arg(r.v_int64 != 0);
  if (r.type_index == kPJFloat) result = emu::Arg(r.v_float64);
  return result;
}

emu::Backend jit_backend(pj::Jit& jit, const pj::IRModule& module, const pj::Target& target,
                         bool stage_tensors) {
  auto run = [&jit, module, target, stage_tensors](const std::string& name,
                                                   std::span<const emu::Arg> args) {
    return call_through_jit(jit, module, target, stage_tensors, name, args);
  };
  return emu::Backend{target->kind, run};
}

struct Totals {
  int files = 0, kernels = 0, compared = 0, skipped = 0, failed = 0, unparsed = 0;
};

// Why the Jit refuses `name` for cuda before running anything (host code touching device
// memory, VerifyDeviceMemory), or "" when it does not. Such a function is no GPU program; emu,
// whose memory is all host memory, would run it.
std::string refused_on_cuda(const pj::IRModule& module, const std::string& name) {
  pj::PrimFunc func = module->lookup(name);
  pj::Target target = func->target();
  const std::string arch = target.defined() && target->kind == "cuda" ? target->arch : "";
  pj::Target cuda = pj::Target::make("cuda", arch, pj::Target::llvm());
  try {
    pj::passes::get_pass("VerifyDeviceMemory")
        .run(pj::IRModule::from_function(name,
                                         func.with_attr(pj::attr::kTarget, pj::AttrValue(cuda))),
             {});
  } catch (const pj::Error& e) {
    return e.what();
  }
  return "";
}

void check_case(pj::Jit& jit, const pj::IRModule& module, const std::string& where,
                const Options& o, Totals* totals) {
  emu::DifferentialOptions options;
  for (const std::string& name : gpu_functions(module)) {
    const std::string refused = refused_on_cuda(module, name);
    if (refused.empty()) {
      options.functions.push_back(name);
      continue;
    }
    ++totals->kernels;
    ++totals->skipped;
    std::cout << where << ": " << name << ": skipped: no cuda program: " << refused << "\n";
  }
  if (options.functions.empty()) return;
  const pj::Target target = o.target == "cuda" ? pj::Jit::default_target() : pj::Target::emu();
  emu::DifferentialReport report =
      emu::check_backend(module, jit_backend(jit, module, pj::Target::emu(), false),
                         jit_backend(jit, module, target, true), options);
  for (const emu::FunctionOutcome& f : report.functions) {
    ++totals->kernels;
    const char* verdict = "compared";
    switch (f.status) {
      case emu::FunctionOutcome::Status::kUnchanged:
        ++totals->compared;
        break;
      case emu::FunctionOutcome::Status::kChanged:
        ++totals->failed;
        verdict = "FAILED";
        break;
      case emu::FunctionOutcome::Status::kSkipped:
        ++totals->skipped;
        verdict = "skipped";
        break;
    }
    if (o.verbose || f.status != emu::FunctionOutcome::Status::kUnchanged) {
      std::cout << where << ": " << f.function << ": " << verdict;
      if (f.status == emu::FunctionOutcome::Status::kUnchanged) {
        std::cout << " (" << f.runs / 2 << " input sets agree)";  // a run on each side
      } else {
        std::cout << ": " << f.detail;
      }
      std::cout << "\n";
    }
  }
}

int main_impl(int argc, char** argv) {
  Options o = parse_args(argc, argv);
  if (o.devices) return print_devices();
  if (o.target == "cuda") {
    PRIMJIT_USER_CHECK(pj::Jit::default_target()->kind == "cuda")
        << "--target=cuda needs a GPU (a CUDA driver and a device); this machine has none. "
           "--target=emu runs the programs without one (against themselves: a check of the tool)";
  }
  pj::Jit jit(pj::JitOptions{.cache_capacity = 64, .disk_cache = pj::DiskCacheMode::kDisabled});
  Totals totals;
  for (const std::string& file : o.files) {
    std::ifstream in(file);
    PRIMJIT_USER_CHECK(in.good()) << "cannot read '" << file << "'";
    std::stringstream text;
    text << in.rdbuf();
    ++totals.files;
    const std::vector<std::string> cases = programs_of(text.str());
    for (size_t c = 0; c < cases.size(); ++c) {
      const std::string where = cases.size() == 1 ? file : file + " case " + std::to_string(c + 1);
      pj::IRModule module;
      try {
        module = pj::parse(cases[c], file);
      } catch (const pj::Error& e) {
        // Error cases of goldens and malformed inputs: no program to run.
        ++totals.unparsed;
        if (o.verbose) std::cout << where << ": not parsed: " << e.what() << "\n";
        continue;
      }
      check_case(jit, module, where, o, &totals);
    }
    std::cout.flush();  // what ran so far is in the log even if a later file crashes
  }
  std::cout << "crosscheck (" << o.target << " vs emu): " << totals.files << " files, "
            << totals.kernels << " kernels: " << totals.compared << " compared, " << totals.skipped
            << " skipped, " << totals.failed << " failed";
  if (totals.unparsed > 0) std::cout << " (" << totals.unparsed << " cases do not parse)";
  std::cout << "\n";
  return totals.failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return primjit::tools::run_tool("primjit-crosscheck", argc, argv, main_impl);
}
