// CUDA-on-CPU: runs the CUDA C that primjit generates for a module's kernels on the CPU and
// compares every output with the reference interpreter on the same inputs.
//
//   cuda_on_cpu::CheckResult r = cuda_on_cpu::check_module(module);
//   EXPECT_TRUE(r.ok()) << r.str();
//
// The module is lowered with the default pipeline for target cuda (as the Jit does), its
// kernels printed by jit::codegen_cuda, and the source compiled by the host C++ compiler
// (-O1 -ffp-contract=off -fno-fast-math) into a shared object against the shim in
// tests/cuda_on_cpu/shim/ (cuda_on_cpu.h). The host function then runs in the interpreter with
// the kernels taken out of the module: each kernel launch calls the compiled kernel instead,
// which runs every block in turn and the threads of a block as fibers (jit/emu/fiber.h) with a
// real barrier, so a missing __syncthreads gives a wrong result. The reference is the
// interpreter running the whole lowered module. Outputs must agree bit for bit (NaN equals
// NaN), or within the op table's max_ulp when the module calls math functions.
//
// What this proves is the printer (syntax, precedence, casts, indexing, shared memory,
// barriers), not GPU numerics: the math is the host's and the threads run one at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "primjit/ir/function.h"

namespace primjit::cuda_on_cpu {

struct CheckOptions {
  /// Values of the symbolic dimensions and integer parameters, by name; others get
  /// `default_dim`.
  std::map<std::string, int64_t> dims;
  int64_t default_dim = 37;
  /// Seed of the input tensors' contents.
  uint64_t seed = 1;
  /// The function to call (empty: the module's only function a user can call).
  std::string function;
  /// Edits the generated source before it is compiled (tests plant printer bugs with it).
  std::function<void(std::string&)> edit_source;
};

struct CheckResult {
  /// Why the module could not be checked (it does not lower, has no kernel, or the
  /// interpreter cannot run it); such a module never counts as checked.
  std::string skipped;
  /// Why the check failed: the source does not compile, a launch fails, or an output differs.
  std::string failure;
  /// Kernels in the generated source.
  int kernels = 0;
  std::string source;

  bool ok() const { return skipped.empty() && failure.empty(); }
  bool checked() const { return skipped.empty(); }
  std::string str() const;
};

CheckResult check_module(const IRModule& module, const CheckOptions& options = {});

}  // namespace primjit::cuda_on_cpu
