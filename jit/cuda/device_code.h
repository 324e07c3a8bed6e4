// CUDA compile and launch: the device side of a variant, its kernels compiled by NVRTC and
// loaded through the driver, each behind the KernelHandle the host code launches (the host
// ABI, jit/common/host_abi.h). The runtime orchestrates; emu variants run in the interpreter.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "jit/common/host_abi.h"
#include "primjit/ir/function.h"
#include "primjit/ir/target.h"
#include "primjit/jit.h"

namespace primjit::jit {

struct DeviceCode {
  std::shared_ptr<void> owner;  // modules etc.; declared first: released after the kernels
  std::map<std::string, std::unique_ptr<KernelHandle>> kernels;  // by kernel symbol
};

struct DeviceOptions {
  bool fast_math = false;
  void* stream = nullptr;                          // CUstream
  int64_t max_unroll = passes::kDefaultMaxUnroll;  // T.unroll loops with #pragma unroll
  int ptxas_opt_level = -1;                        // NvrtcOptions::ptxas_opt_level
};

/// A module's kernels compiled for a device, with what loading them needs: what the disk
/// cache stores. Empty when the module has no kernels.
struct DeviceBinary {
  struct Kernel {
    std::string name;
    std::vector<std::string> launch_params;  // "tirx.kernel_launch_params", in order
  };
  bool ptx = false;  // image is NUL-terminated PTX, else CUBIN
  int arch = 0;      // compute capability it was compiled for, e.g. 90
  std::string image;
  std::vector<Kernel> kernels;
  bool empty() const { return kernels.empty(); }
};

/// Compiles the kernels (calling_conv 2) of a lowered module for `device` (cuda), adding the
/// time of each stage to `times`. Needs a driver (the device's architecture decides the code).
DeviceBinary compile_device_code(const IRModule& lowered, const Target& device,
                                 const DeviceOptions& options, StageTimes* times);
/// Loads compiled kernels on device 0 (nothing to load: an empty DeviceCode).
std::unique_ptr<DeviceCode> load_device_binary(const DeviceBinary& binary,
                                               const DeviceOptions& options, StageTimes* times);

}  // namespace primjit::jit
