// What primjit compiles and runs with on this machine, and a self-test that uses each piece
// for real: the host JIT (LLVM ORC), the device compiler (NVRTC) and, when present, the GPU.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace primjit {

struct ToolchainReport {
  std::string primjit_version;
  std::string llvm_version;      // e.g. "19.1.7"
  std::string host_triple;       // e.g. "x86_64-pc-linux-gnu"
  std::string host_cpu;          // e.g. "znver4"
  std::string nvrtc_version;     // e.g. "13.0"
  std::vector<int> nvrtc_archs;  // CUBIN architectures NVRTC supports, e.g. 75 ... 121
  std::string cuda_include_dir;
  bool gpu_found = false;
  /// The GPU ("NVIDIA H100 80GB HBM3, sm_90, driver 13.0") or why there is none.
  std::string gpu_description;
  int gpu_arch = 0;  // e.g. 90 when a GPU was found
};

/// Inspects the toolchain. Never throws for a missing GPU; throws primjit::Error when LLVM or
/// NVRTC cannot be initialised.
ToolchainReport toolchain_report();

struct SelfTestResult {
  ToolchainReport toolchain;
  int host_add_result = 0;  // add(40, 2) built with LLVM's IRBuilder, JIT-compiled at O2
  double host_jit_ms = 0;
  int device_arch = 0;  // architecture the kernel was compiled for
  size_t cubin_bytes = 0;
  size_t ptx_bytes = 0;
  double nvrtc_ms = 0;
  bool gpu_ran = false;
  size_t gpu_correct = 0;  // elements of the vector add the GPU got right
  size_t gpu_elements = 0;
};

/// Runs the self-test; any failing step throws primjit::Error.
SelfTestResult toolchain_selftest();

}  // namespace primjit
