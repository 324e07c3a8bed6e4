// The limits of a CUDA kernel launch, checked in one place: by the CUDA runtime before
// cuLaunchKernel, by CUDA code generation for what it knows statically (threads per block,
// static shared memory), and by the interpreter (target emu), which models a CUDA device. So a
// launch CUDA refuses is refused by emu too, with the same message.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace primjit::jit {

struct LaunchLimits {
  /// Threads of one block (the product of the threadIdx extents).
  int64_t max_threads_per_block = 1024;
  /// threadIdx.x/y/z and blockIdx.x/y/z extents.
  std::array<int64_t, 3> max_block = {1024, 1024, 64};
  std::array<int64_t, 3> max_grid = {2147483647, 65535, 65535};
  /// Statically sized __shared__ arrays of one block.
  int64_t max_static_shared = 48 * 1024;
  /// Static and dynamic shared memory of one block together (the device's opt-in maximum).
  int64_t max_shared_per_block = 48 * 1024;
};

/// The limits of a compute capability 9.0 device (H100): CUDA's per-block limits, which every
/// architecture since 7.0 shares, and 227 KiB of shared memory per block. The interpreter's
/// default device.
LaunchLimits sm90_launch_limits();

/// Why a launch of `grid` blocks of `block` threads with `dynamic_shared` bytes of dynamic
/// shared memory (and `static_shared` bytes of static shared memory) does not fit `limits`;
/// empty when it does. Callers prefix "launching kernel 'NAME': ".
std::string launch_config_error(const LaunchLimits& limits, const std::array<int64_t, 3>& grid,
                                const std::array<int64_t, 3>& block, int64_t dynamic_shared,
                                int64_t static_shared = 0);

/// The threads-per-block part of launch_config_error alone (code generation knows the count).
std::string threads_per_block_error(const LaunchLimits& limits, int64_t threads);

/// The shared-memory part of launch_config_error alone.
std::string shared_memory_error(const LaunchLimits& limits, int64_t static_shared,
                                int64_t dynamic_shared);

}  // namespace primjit::jit
