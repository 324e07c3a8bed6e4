// One long-lived LLVM ORC LLJIT session for host code.
//
// Modules are optimized with the new pass manager and compiled to an object on the calling
// thread (with a TargetMachine from a small pool), then linked into the shared LLJIT under a
// ResourceTracker so each module can be removed again. This is the fastest arrangement
// measured for many small modules and lets several threads compile at once.
//
// The interface is free of LLVM headers: callers that build IR include LLVM themselves.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace primjit::jit {

struct HostModule;  // jit/llvm/codegen_llvm.h

/// A function with this string attribute is glue (argument checks, shape binds, launches, no
/// loop): at opt_level > 0 the engine gives it a light function pipeline, then keeps it out of
/// the full pipeline and the optimizing instruction selector (optnone), which is most of what
/// a small module's compile used to cost. Large glue (a wrapper of many parameters) is
/// optimized and compiled apart from the loop nests, its machine code at CodeGenOptLevel::None
/// (fast register allocation, linear in the wrapper's size).
inline constexpr const char* kGlueFunctionAttr = "primjit-glue";

struct OrcOptions {
  /// LLVM optimization level 0..3 (IR pipeline and codegen level).
  int opt_level = 3;
  /// Keep the optimized IR of every module for `optimized_ir` (debugging, tests).
  bool keep_optimized_ir = false;
};

/// Text forms of a module that compile_object also produces on request (PRIMJIT_DUMP).
struct CompileDumps {
  bool want_ir = false;
  bool want_optimized_ir = false;
  bool want_assembly = false;
  std::string ir;            // before LLVM's optimizer
  std::string optimized_ir;  // after it
  std::string assembly;      // the machine code it emits, as assembly text
};

class OrcEngine {
 public:
  using ModuleKey = uint64_t;

  explicit OrcEngine(OrcOptions options = {});
  ~OrcEngine();
  OrcEngine(const OrcEngine&) = delete;
  OrcEngine& operator=(const OrcEngine&) = delete;

  /// Verifies, optimizes, compiles and links a module built by primjit's code generator.
  /// A module that fails verification is a primjit bug (InternalError).
  ModuleKey add_module(std::unique_ptr<llvm::Module> module,
                       std::unique_ptr<llvm::LLVMContext> context);
  /// Same for textual LLVM IR; a parse or verification failure is a primjit::Error.
  ModuleKey add_ir_text(std::string_view ir_text, std::string_view module_name);
  /// Verifies, optimizes and compiles a module to a relocatable object for this engine's
  /// target, without linking it (for a cache: add_object links it later, in any process whose
  /// engine has the same target_triple, cpu_name, cpu_features and opt_level). A module with
  /// large glue and loop nests gives two objects in one bundle, which add_object understands.
  /// `dumps`, when given, receives the texts it asks for.
  std::string compile_object(std::unique_ptr<llvm::Module> module,
                             std::unique_ptr<llvm::LLVMContext> context,
                             CompileDumps* dumps = nullptr);
  /// Links an object made by compile_object; `name` names it in errors.
  ModuleKey add_object(std::string_view object, std::string_view name);

  /// Address of a defined symbol; throws primjit::Error when it is not defined.
  void* lookup(std::string_view symbol);
  /// Unloads a module: its symbols are gone and its code memory is released.
  void remove(ModuleKey key);
  /// Makes a host function callable from JIT code under `name`.
  void define_symbol(std::string_view name, void* address);
  /// Runs `define` (which defines the runtime's symbols) the first time it is called on this
  /// engine; later calls, from any thread, return once that first one has finished.
  void register_runtime_once(void (*define)(OrcEngine&));

  /// Optimized IR of a module added by add_module or add_ir_text (requires
  /// OrcOptions::keep_optimized_ir).
  std::string optimized_ir(ModuleKey key) const;

  const std::string& target_triple() const;
  /// Host CPU the code is compiled for, e.g. "znver4".
  const std::string& cpu_name() const;
  /// The CPU feature string the code is compiled with, e.g. "+avx2,+fma,...".
  const std::string& cpu_features() const;
  int opt_level() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// OrcEngine::compile_object for the output of host code generation, for callers without LLVM
/// headers (primjit-opt's --emit=llvm-opt and --emit=asm).
std::string compile_object(OrcEngine& engine, HostModule&& host, CompileDumps* dumps);

/// Version of the LLVM primjit is built against, e.g. "19.1.7".
std::string llvm_version();

/// The host's target triple and CPU as LLVM detects them (what an OrcEngine compiles for),
/// without creating a JIT session.
struct HostTarget {
  std::string triple;
  std::string cpu;
};
HostTarget detect_host_target();

}  // namespace primjit::jit
