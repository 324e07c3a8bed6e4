// A lowered module's host code, compiled and linked into an OrcEngine; unloaded on destruction.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "jit/llvm/orc_engine.h"
#include "primjit/abi.h"
#include "primjit/ir/function.h"

namespace primjit::jit {

class KernelHandle;

/// The loaded kernel for a kernel symbol the host code launches (owned by the caller, alive
/// as long as the HostProgram), or nullptr when there is none.
using KernelResolver = std::function<KernelHandle*(const std::string& kernel_symbol)>;

class HostProgram {
 public:
  /// Generates, optimizes and links the host functions of `lowered` (after MakePackedAPI).
  /// Symbols get a suffix unique in the process, so any number of variants can be loaded.
  /// Kernels the host code launches stay unbound until bind_kernels (a launch before that is
  /// an error, not a crash), so device code can be compiled at the same time.
  HostProgram(OrcEngine& engine, const IRModule& lowered);
  /// The same, then bind_kernels(kernels).
  HostProgram(OrcEngine& engine, const IRModule& lowered, const KernelResolver& kernels);

  /// Gives each launched kernel its handle; throws primjit::Error when one has none.
  void bind_kernels(const KernelResolver& kernels);
  ~HostProgram();
  HostProgram(const HostProgram&) = delete;
  HostProgram& operator=(const HostProgram&) = delete;

  /// The packed entry point of the module's function `name` (its IR name).
  PJPackedFunc function(const std::string& name) const;
  /// What this program appends to every symbol it defines (e.g. "main" links as "main.pj7").
  const std::string& symbol_suffix() const { return suffix_; }

 private:
  OrcEngine& engine_;
  OrcEngine::ModuleKey key_;
  std::string suffix_;
  std::map<std::string, PJPackedFunc> functions_;
  std::vector<std::pair<std::string, KernelHandle**>> kernel_slots_;  // launched kernels
};

}  // namespace primjit::jit
