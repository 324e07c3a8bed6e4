// A lowered module's host code, compiled and linked into an OrcEngine; unloaded on destruction.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "jit/llvm/codegen_llvm.h"
#include "jit/llvm/orc_engine.h"
#include "jit/runtime/host_runtime.h"
#include "primjit/abi.h"
#include "primjit/ir/function.h"

namespace primjit::jit {

class KernelHandle;

/// The loaded kernel for a kernel symbol the host code launches (owned by the caller, alive
/// as long as the HostProgram), or nullptr when there is none.
using KernelResolver = std::function<KernelHandle*(const std::string& kernel_symbol)>;

/// A module's host code compiled to an object, with everything linking it needs: what the
/// disk cache stores. Valid for engines with the same target, CPU, features and opt level.
struct HostImage {
  std::string object;  // relocatable object (ELF), or a bundle of them (OrcEngine)
  /// Appended to every symbol the object defines (e.g. "main" is "main.pj3f2a..."), so any
  /// number of variants can be linked into one engine.
  std::string suffix;
  std::vector<std::pair<std::string, std::string>> functions;  // IR name -> packed symbol
  /// Kernel symbols in the order of their slots in the kernel table the code reads from `self`
  /// (HostModule::launched_kernels).
  std::vector<std::string> launched_kernels;
};

/// Generates, optimizes and compiles the host functions of `lowered` (after MakePackedAPI)
/// under a fresh symbol suffix; `dumps`, when given, receives the LLVM texts it asks for.
HostImage compile_host(OrcEngine& engine, const IRModule& lowered,
                       const HostCodegenOptions& options = {}, CompileDumps* dumps = nullptr);

class HostProgram {
 public:
  /// Links a compiled image. Kernels the host code launches stay unbound until bind_kernels
  /// (a launch before that is an error, not a crash: their slots of the kernel table are
  /// null), so device code can be compiled at the same time. Throws primjit::Error when the
  /// image's suffix is already linked in `engine`.
  HostProgram(OrcEngine& engine, const HostImage& image);
  /// compile_host, then link.
  HostProgram(OrcEngine& engine, const IRModule& lowered);
  /// The same, then bind_kernels(kernels).
  HostProgram(OrcEngine& engine, const IRModule& lowered, const KernelResolver& kernels);

  /// Gives each launched kernel its handle (fills the kernel table); throws primjit::Error
  /// when one has none, and then leaves the table as it was.
  void bind_kernels(const KernelResolver& kernels);
  ~HostProgram();
  HostProgram(const HostProgram&) = delete;
  HostProgram& operator=(const HostProgram&) = delete;

  /// The packed entry point of the module's function `name` (its IR name), with this
  /// program's kernel table as its `self`. Valid while the program lives.
  HostEntry function(const std::string& name) const;
  /// What this program appends to every symbol it defines.
  const std::string& symbol_suffix() const { return suffix_; }
  /// Whether code with this symbol suffix is linked in `engine` (a second copy cannot be).
  static bool is_linked(const OrcEngine& engine, const std::string& suffix);

 private:
  void link(const HostImage& image);

  OrcEngine& engine_;
  OrcEngine::ModuleKey key_ = 0;
  std::string suffix_;
  std::map<std::string, PJPackedFunc> functions_;
  std::vector<std::string> launched_kernels_;
  // The kernel table (`self` of every entry point): one slot per launched kernel. Sized at
  // link and never resized, so its address is stable.
  std::vector<KernelHandle*> kernel_table_;
};

}  // namespace primjit::jit
