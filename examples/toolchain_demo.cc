// The main job for now: proves the toolchain end to end. It JIT-compiles a host function with
// LLVM ORC and calls it, compiles a CUDA kernel with NVRTC, and runs that kernel when a GPU is
// present.
#include <cstdio>

#include "primjit/primjit.h"

int main() {
  try {
    primjit::SelfTestResult r = primjit::toolchain_selftest();
    const primjit::ToolchainReport& t = r.toolchain;
    std::printf("primjit %s toolchain check\n", t.primjit_version.c_str());
    std::printf("host JIT: LLVM %s ORC on %s (%s): add(40, 2) = %d  [%.1f ms at O2]\n",
                t.llvm_version.c_str(), t.host_triple.c_str(), t.host_cpu.c_str(),
                r.host_add_result, r.host_jit_ms);
    std::printf(
        "device compile: NVRTC %s: vadd -> CUBIN for sm_%d, %zu bytes; PTX %zu bytes"
        "  [%.1f ms]\n",
        t.nvrtc_version.c_str(), r.device_arch, r.cubin_bytes, r.ptx_bytes, r.nvrtc_ms);
    if (t.gpu_found) {
      std::printf("GPU: found %s; vadd correct on %zu of %zu elements\n", t.gpu_description.c_str(),
                  r.gpu_correct, r.gpu_elements);
    } else {
      std::printf("GPU: none (%s)\n", t.gpu_description.c_str());
    }
    bool ok = r.host_add_result == 42 && r.cubin_bytes > 0 && r.ptx_bytes > 0 &&
              (!r.gpu_ran || r.gpu_correct == r.gpu_elements);
    std::printf("toolchain check %s\n", ok ? "passed" : "FAILED");
    return ok ? 0 : 1;
  } catch (const primjit::Error& error) {
    std::fprintf(stderr, "primjit error: %s\n", error.what());
    return 1;
  }
}
