#include "jit/common/launch_limits.h"

namespace primjit::jit {

LaunchLimits sm90_launch_limits() {
  LaunchLimits limits;
  limits.max_shared_per_block = 227 * 1024;
  return limits;
}

std::string threads_per_block_error(const LaunchLimits& limits, int64_t threads) {
  if (threads <= limits.max_threads_per_block) return "";
  return std::to_string(threads) + " threads per block; CUDA allows at most " +
         std::to_string(limits.max_threads_per_block) + " (reduce the threadIdx extents)";
}

std::string shared_memory_error(const LaunchLimits& limits, int64_t static_shared,
                                int64_t dynamic_shared) {
  if (static_shared > limits.max_static_shared) {
    return "needs " + std::to_string(static_shared) +
           " bytes of static shared memory; CUDA allows at most " +
           std::to_string(limits.max_static_shared) +
           " per block (allocate larger buffers in scope \"shared.dyn\")";
  }
  if (static_shared + dynamic_shared <= limits.max_shared_per_block) return "";
  const std::string allows =
      "; the device allows " + std::to_string(limits.max_shared_per_block) + " per block";
  if (static_shared == 0) {
    return "needs " + std::to_string(dynamic_shared) + " bytes of dynamic shared memory" + allows;
  }
  // Both kinds count against one limit: name the sum and its parts.
  return "needs " + std::to_string(static_shared + dynamic_shared) +
         " bytes of shared memory per block (" + std::to_string(static_shared) + " static + " +
         std::to_string(dynamic_shared) + " dynamic)" + allows +
         " (request less dynamic shared memory)";
}

std::string launch_config_error(const LaunchLimits& limits, const std::array<int64_t, 3>& grid,
                                const std::array<int64_t, 3>& block, int64_t dynamic_shared,
                                int64_t static_shared) {
  static const char* const kAxes[] = {"x", "y", "z"};
  // Each extent is at most 2^31 - 1 here, so the product does not overflow before the check.
  const bool huge = block[0] > INT32_MAX || block[1] > INT32_MAX || block[2] > INT32_MAX;
  if (std::string why =
          threads_per_block_error(limits, huge ? INT64_MAX : block[0] * block[1] * block[2]);
      !why.empty()) {
    return why;
  }
  for (size_t d = 0; d < 3; ++d) {
    if (block[d] > limits.max_block[d]) {
      return "threadIdx." + std::string(kAxes[d]) + " extent " + std::to_string(block[d]) +
             " is more than CUDA's limit of " + std::to_string(limits.max_block[d]);
    }
  }
  for (size_t d = 0; d < 3; ++d) {
    if (grid[d] > limits.max_grid[d]) {
      return "blockIdx." + std::string(kAxes[d]) + " extent " + std::to_string(grid[d]) +
             " is more than CUDA's limit of " + std::to_string(limits.max_grid[d]);
    }
  }
  return shared_memory_error(limits, static_shared, dynamic_shared);
}

}  // namespace primjit::jit
