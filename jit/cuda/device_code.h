// CUDA compile and launch: the device side of a variant, its kernels compiled by NVRTC and
// loaded through the driver, each behind the KernelHandle the host code launches (the host
// ABI, jit/common/host_abi.h). The runtime orchestrates; emu variants run in the interpreter.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/dump_config.h"
#include "jit/common/host_abi.h"
#include "jit/cuda/driver.h"
#include "primjit/ir/function.h"
#include "primjit/ir/target.h"
#include "primjit/jit.h"

namespace primjit::jit {

struct DeviceCode {
  std::shared_ptr<void> owner;  // modules etc.; declared first: released after the kernels
  std::map<std::string, std::unique_ptr<KernelHandle>> kernels;  // by kernel symbol
};

/// What device code depends on (the stream does not: it comes with each call, CallContext).
struct DeviceOptions {
  bool fast_math = false;
  int64_t max_unroll = passes::kDefaultMaxUnroll;  // T.unroll loops with #pragma unroll
  int device = 0;  // the CUDA device ordinal compiled for (its architecture) and loaded on
  int ptxas_opt_level = -1;  // NvrtcOptions::ptxas_opt_level
};

/// A module's kernels compiled for a device, with what loading them needs: what the disk
/// cache stores. Empty when the module has no kernels.
struct DeviceBinary {
  struct Kernel {
    std::string name;
    std::vector<std::string> launch_params;  // "tirx.kernel_launch_params", in order
    std::vector<uint32_t> param_bytes;       // size of each parameter's value, in order
  };
  bool ptx = false;  // image is NUL-terminated PTX, else CUBIN
  int arch = 0;      // compute capability it was compiled for, e.g. 90
  std::string image;
  std::vector<Kernel> kernels;
  bool empty() const { return kernels.empty(); }
};

/// Compiles the kernels (calling_conv 2) of a lowered module for `device` (cuda), adding the
/// time of each stage to `times`. Needs a driver: the architecture of device `options.device`
/// decides the code, and a driver older than NVRTC is an error that says so. `dumps`
/// (PRIMJIT_DUMP, `dir` the variant's directory), when given, says which of the CUDA source
/// (device.cu) and PTX (device.ptx) to write.
DeviceBinary compile_device_code(const IRModule& lowered, const Target& device,
                                 const DeviceOptions& options, StageTimes* times,
                                 const DumpConfig* dumps = nullptr);
/// Loads compiled kernels in the primary context of device `options.device` (nothing to
/// load: an empty DeviceCode); their launches make that context current.
std::unique_ptr<DeviceCode> load_device_binary(const DeviceBinary& binary,
                                               const DeviceOptions& options, StageTimes* times);

/// One kernel launch as a call's host code made it, with copies of its argument values.
struct RecordedLaunch {
  RecordedLaunch() = default;
  // `args` points into `values`: a copy would point into the original.
  RecordedLaunch(const RecordedLaunch&) = delete;
  RecordedLaunch& operator=(const RecordedLaunch&) = delete;
  RecordedLaunch(RecordedLaunch&&) = default;  // vectors keep their buffers when moved
  RecordedLaunch& operator=(RecordedLaunch&&) = default;

  CUfunc_st* function = nullptr;
  Dim3 grid, block;
  unsigned dynamic_shared = 0;
  std::vector<uint64_t> values;       // each argument's bytes from an 8-byte boundary
  std::vector<void*> args;            // into `values`, as cuLaunchKernel takes them
  std::shared_ptr<void> module;       // keeps the kernel's code loaded
  int device = 0;                     // the device whose context loaded it
  const std::string* name = nullptr;  // the kernel's, interned (CudaDriver::note_launch)
  bool launch_blocking = false;       // CUDA_LAUNCH_BLOCKING=1 when it was loaded
};

/// The launches a call made while recording (CallContext::recording), in order.
struct LaunchRecording {
  std::vector<RecordedLaunch> launches;
  CudaDriver* driver = nullptr;  // set with the first launch
};

/// Launches recorded launches again on `stream`; a failure throws primjit::Error naming the
/// kernel. Nothing else runs: no lookup, no allocation.
void replay_launches(const LaunchRecording& recording, CUstream_st* stream);

}  // namespace primjit::jit
