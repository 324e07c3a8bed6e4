// The full checks of a call's arguments, which name the problem. (The cheap ones of a cached
// call, which make its key on the way, are fast_key in jit.cc, next to the call path.)
#pragma once

#include <cstdint>
#include <cstring>
#include <span>

#include "jit/runtime/argument_memory.h"
#include "jit/runtime/cache_key.h"
#include "jit/runtime/kernel_state.h"
#include "primjit/jit.h"

namespace primjit::jit {

/// Parameters of a kernel whose cached calls take the fast path (their byte ranges are kept on
/// the stack for the overlap check).
inline constexpr size_t kMaxFastParams = 64;

/// Tensor and scalar checks that must hold before anything is compiled; raises primjit::Error
/// naming the argument and what it should be.
void check_arguments(const Kernel::State& k, std::span<const Arg> args);

/// The CUDA device ordinal of a call's CUDA tensors (check_arguments made them agree); -1 when
/// no argument is a CUDA tensor.
int cuda_device_of(std::span<const Arg> args);

}  // namespace primjit::jit
