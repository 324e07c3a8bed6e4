// How compiled host code launches kernels: the launch ABI between host code and the runtime.
//
// For each kernel a host module launches, the module defines a global pointer named
// kernel_handle_symbol(kernel, suffix), null until the runtime stores the kernel's loaded
// KernelHandle in it. A launch `T.call_packed("k", args..., launch values...)` becomes
//
//   primjit_rt_launch(handle, launch, args)
//
// where `launch` holds the kernel's launch values in the order of its
// "tirx.kernel_launch_params" (thread extents, then the dynamic shared memory size in bytes)
// as int64, and args[i] points at the value of kernel parameter i in its own type (pointers
// as pointers, int32 as int32, ...) — the layout cuLaunchKernel takes. No lookup, no allocation.
#pragma once

#include <cstdint>
#include <string>

namespace primjit::jit {

class KernelHandle {
 public:
  virtual ~KernelHandle() = default;
  /// Runs (or enqueues) the kernel; returns 0, or -1 after recording the error with
  /// primjit_rt_set_error. Must not throw.
  virtual int32_t launch(const int64_t* launch, void** args) noexcept = 0;
};

inline constexpr const char* kLaunchSymbol = "primjit_rt_launch";

/// The name of the module global that holds kernel `kernel`'s handle.
inline std::string kernel_handle_symbol(const std::string& kernel, const std::string& suffix) {
  return "__primjit_kernel." + kernel + suffix;
}

}  // namespace primjit::jit

extern "C" int32_t primjit_rt_launch(void* handle, const int64_t* launch, void** args);
