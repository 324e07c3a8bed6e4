// The primjit side of the peer benchmark: each kernel of the table as TVMScript text, compiled
// through the product path (text -> parse -> Jit::kernel -> Kernel call) on the llvm target
// under the default (exact-shape) policy. The loops are the same as reference.h's.
#pragma once

#include <string>

#include "primjit/jit.h"

namespace primjit::bench::peers {

/// The TVMScript text of `kernel` (a name of the table: "saxpy_naive", ..., "softmax_scheduled");
/// throws std::invalid_argument for any other name.
std::string primjit_kernel_text(const std::string& kernel);

/// A kernel for `kernel`'s text in `jit` (compiled on its first call) with `options`
/// (KernelOptions::fp_contract: a * b + c as one fma, as Halide and g++ contract by default).
Kernel primjit_kernel(Jit& jit, const std::string& kernel, const KernelOptions& options = {});

}  // namespace primjit::bench::peers
