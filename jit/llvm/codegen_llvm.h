// Host code generation: the host functions of a lowered module (after MakePackedAPI and the
// host lowering, passes::host_lowering_pipeline()) to LLVM IR. It translates; it lowers nothing.
//
// - Every function with calling_conv 1 becomes an external function with the packed signature
//   of primjit/abi.h, named `<global_symbol><suffix>`; private functions become internal
//   functions with their own signature. Kernels (calling_conv 2) are not host code and are
//   skipped. Other public functions are an error: run MakePackedAPI first.
// - `T.call_compute_scope("scope", ...)` (from LowerComputeScopes) calls an internal noinline
//   function whose pointer parameters are `noalias` (buffers of one call do not overlap, as TVM
//   assumes), emitted at the call; a non-zero status propagates as -1.
// - `T.parallel_for("task", ...)` (from LowerParallelLoops) passes the captures in a closure
//   struct to the runtime's parallel-for (oneTBB), which runs the task once per chunk, an
//   internal function `i32 (i64 begin, i64 end, ptr noalias closure)` emitted at its launch. A
//   parallel loop left in the IR is an error.
// - Arithmetic follows docs/semantics.md: integer division, shifts, float min/max and float to
//   int conversions through jit/llvm/semantics_llvm.h (defined for every input); no fast-math
//   flags, so a * b + c is fused only where the IR says T.fma.
// - A failed assert stores its message with primjit_rt_set_error and returns -1.
// - A T.unroll loop gets LLVM's full-unroll hint when its extent is a constant of at most
//   HostCodegenOptions::max_unroll iterations; otherwise it is a plain loop (logged at info).
// - `T.call_packed("kernel", ...)` launches a kernel through primjit_rt_launch with the handle
//   in the kernel's slot of the table `self` points at (the launch ABI of jit/common/host_abi.h);
//   a non-zero status propagates as -1. The module defines no globals: a compute scope or
//   parallel task that launches kernels gets its caller's `self` as a trailing parameter or
//   closure field, a packed callee (T.call_cpacked) as its first argument. A launch in a private
//   function, which has no `self`, is an error.
//
// The interface is free of LLVM headers; callers that use the module include LLVM themselves.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "primjit/ir/function.h"
#include "primjit/passes.h"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace primjit::jit {

struct HostModule {
  HostModule();
  ~HostModule();  // defined where the LLVM types are complete
  HostModule(HostModule&&) noexcept;
  HostModule& operator=(HostModule&&) noexcept;

  std::unique_ptr<llvm::LLVMContext> context;
  std::unique_ptr<llvm::Module> module;
  /// Symbols of the kernels the host code launches, in the order of their slots in the kernel
  /// table (`self`, jit/common/host_abi.h): the order in which code generation first meets a
  /// launch of each (functions in module order, compute scopes and tasks where they are run).
  std::vector<std::string> launched_kernels;
};

struct HostCodegenOptions {
  /// T.unroll loops of at most this many iterations are marked for full unrolling.
  int64_t max_unroll = passes::kDefaultMaxUnroll;
  /// false: loops whose trip count is not a constant are marked
  /// llvm.loop.unroll.runtime.disable. A kBucketed variant's loops have symbolic trip counts;
  /// unrolled at run time, each gets remainder loops that make LLVM's work twice that of the
  /// exact variant (bench/README.md, bench_compile).
  bool runtime_unroll = true;
};

/// LLVM IR for the host functions of `module`. `symbol_suffix` is appended to every defined
/// symbol so that variants of one function can live in one JIT session.
HostModule codegen_llvm(const IRModule& module, const std::string& symbol_suffix = "",
                        const HostCodegenOptions& options = {});

/// The module as LLVM assembly text.
std::string to_llvm_text(const HostModule& host);

}  // namespace primjit::jit
