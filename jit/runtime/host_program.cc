#include "jit/runtime/host_program.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <atomic>
#include <mutex>

#include "jit/llvm/codegen_llvm.h"
#include "jit/runtime/host_runtime.h"
#include "jit/runtime/launch.h"
#include "primjit/error.h"

namespace primjit::jit {
namespace {

std::string unique_suffix() {
  static std::atomic<uint64_t> next{0};
  return ".pj" + std::to_string(next.fetch_add(1));
}

void ensure_runtime(OrcEngine& engine) {
  static std::mutex mutex;
  static std::map<OrcEngine*, bool> registered;  // engines are long-lived
  std::lock_guard<std::mutex> lock(mutex);
  if (registered[&engine]) return;
  register_host_runtime(engine);
  registered[&engine] = true;
}

}  // namespace

HostProgram::HostProgram(OrcEngine& engine, const IRModule& lowered) : engine_(engine) {
  ensure_runtime(engine);
  suffix_ = unique_suffix();
  const std::string& suffix = suffix_;
  HostModule host = codegen_llvm(lowered, suffix);
  key_ = engine.add_module(std::move(host.module), std::move(host.context));
  try {
    for (const std::string& kernel : host.launched_kernels) {
      void* slot = engine.lookup(kernel_handle_symbol(kernel, suffix));
      kernel_slots_.emplace_back(kernel, static_cast<KernelHandle**>(slot));
    }
    for (const auto& [gvar, func] : lowered->functions) {
      if (!func->is_packed()) continue;
      functions_[gvar->name] =
          reinterpret_cast<PJPackedFunc>(engine.lookup(func->global_symbol() + suffix));
    }
  } catch (...) {
    engine.remove(key_);
    throw;
  }
}

HostProgram::HostProgram(OrcEngine& engine, const IRModule& lowered, const KernelResolver& kernels)
    : HostProgram(engine, lowered) {
  bind_kernels(kernels);
}

void HostProgram::bind_kernels(const KernelResolver& kernels) {
  for (const auto& [kernel, slot] : kernel_slots_) {
    KernelHandle* handle = kernels ? kernels(kernel) : nullptr;
    PRIMJIT_USER_CHECK(handle != nullptr)
        << "the host code launches kernel '" << kernel
        << "', but no code was loaded for it (compile the module's kernels for a device "
           "target: cuda, or emu to run them in the interpreter)";
    *slot = handle;
  }
}

HostProgram::~HostProgram() {
  try {
    engine_.remove(key_);
  } catch (const std::exception&) {
    // Unloading failed: the code stays mapped, which leaks but is safe.
  }
}

PJPackedFunc HostProgram::function(const std::string& name) const {
  auto it = functions_.find(name);
  if (it == functions_.end()) {
    std::string names;
    for (const auto& [n, f] : functions_) names += (names.empty() ? "" : ", ") + n;
    PRIMJIT_USER_ERROR() << "no packed host function '" << name << "' in the compiled module ("
                         << (names.empty() ? "it has none" : "it has: " + names) << ")";
  }
  return it->second;
}

}  // namespace primjit::jit
