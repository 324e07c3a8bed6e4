#include "jit/runtime/host_program.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <random>
#include <set>

#include "jit/llvm/codegen_llvm.h"
#include "primjit/error.h"

namespace primjit::jit {
namespace {

// A suffix no other process is likely to have used: images from the disk cache keep the
// suffix they were compiled with, and several of them share one engine.
std::string fresh_suffix() {
  static const uint64_t seed = [] {
    std::random_device device;
    return (uint64_t{device()} << 32) ^ device() ^
           static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }();
  static std::atomic<uint64_t> next{0};
  uint64_t x = seed + 0x9E3779B97F4A7C15ull * (next.fetch_add(1) + 1);
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  char text[24];
  std::snprintf(text, sizeof(text), ".pj%016llx", static_cast<unsigned long long>(x));
  return text;
}

// Suffixes linked per engine: a second image with the same suffix would redefine its symbols.
std::mutex g_linked_mutex;
std::set<std::pair<const OrcEngine*, std::string>> g_linked;

}  // namespace

HostImage compile_host(OrcEngine& engine, const IRModule& lowered,
                       const HostCodegenOptions& options, CompileDumps* dumps) {
  HostImage image;
  image.suffix = fresh_suffix();
  HostModule host = codegen_llvm(passes::lower_for_host(lowered), image.suffix, options);
  image.launched_kernels = host.launched_kernels;
  for (const auto& [gvar, func] : lowered->functions) {
    if (func->is_packed()) image.functions.emplace_back(gvar->name, func->global_symbol());
  }
  image.object = engine.compile_object(std::move(host.module), std::move(host.context), dumps);
  return image;
}

bool HostProgram::is_linked(const OrcEngine& engine, const std::string& suffix) {
  std::lock_guard<std::mutex> lock(g_linked_mutex);
  return g_linked.count({&engine, suffix}) > 0;
}

HostProgram::HostProgram(OrcEngine& engine, const HostImage& image) : engine_(engine) {
  link(image);
}

HostProgram::HostProgram(OrcEngine& engine, const IRModule& lowered) : engine_(engine) {
  link(compile_host(engine, lowered));
}

void HostProgram::link(const HostImage& image) {
  engine_.register_runtime_once(register_host_runtime);
  {
    std::lock_guard<std::mutex> lock(g_linked_mutex);
    PRIMJIT_USER_CHECK(g_linked.emplace(&engine_, image.suffix).second)
        << "host code with symbol suffix '" << image.suffix
        << "' is already linked in this JIT session; compile the module again";
  }
  suffix_ = image.suffix;
  try {
    key_ = engine_.add_object(image.object, "host" + suffix_);
    try {
      launched_kernels_ = image.launched_kernels;
      kernel_table_.assign(launched_kernels_.size(), nullptr);
      for (const auto& [name, symbol] : image.functions) {
        functions_[name] = reinterpret_cast<PJPackedFunc>(engine_.lookup(symbol + suffix_));
      }
    } catch (...) {
      engine_.remove(key_);
      throw;
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(g_linked_mutex);
    g_linked.erase({&engine_, suffix_});
    throw;
  }
}

HostProgram::HostProgram(OrcEngine& engine, const IRModule& lowered, const KernelResolver& kernels)
    : HostProgram(engine, lowered) {
  bind_kernels(kernels);
}

void HostProgram::bind_kernels(const KernelResolver& kernels) {
  std::vector<KernelHandle*> table(launched_kernels_.size(), nullptr);
  for (size_t i = 0; i < launched_kernels_.size(); ++i) {
    table[i] = kernels ? kernels(launched_kernels_[i]) : nullptr;
    PRIMJIT_USER_CHECK(table[i] != nullptr)
        << "the host code launches kernel '" << launched_kernels_[i]
        << "', but no code was loaded for it (compile the module's kernels for a device "
           "target: cuda, or emu to run them in the interpreter)";
  }
  std::copy(table.begin(), table.end(), kernel_table_.begin());
}

HostProgram::~HostProgram() {
  try {
    engine_.remove(key_);
  } catch (const std::exception&) {
    // Unloading failed: the code stays mapped (and its suffix taken), which leaks but is safe.
    return;
  }
  std::lock_guard<std::mutex> lock(g_linked_mutex);
  g_linked.erase({&engine_, suffix_});
}

HostEntry HostProgram::function(const std::string& name) const {
  auto it = functions_.find(name);
  if (it == functions_.end()) {
    std::string names;
    for (const auto& [n, f] : functions_) names += (names.empty() ? "" : ", ") + n;
    PRIMJIT_USER_ERROR() << "no packed host function '" << name << "' in the compiled module ("
                         << (names.empty() ? "it has none" : "it has: " + names) << ")";
  }
  // Null when no kernel is launched: the code never reads it then.
  void* self = kernel_table_.empty() ? nullptr : const_cast<KernelHandle**>(kernel_table_.data());
  return HostEntry{it->second, self};
}

}  // namespace primjit::jit
