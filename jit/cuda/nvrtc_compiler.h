// CUDA C -> device image (CUBIN, or PTX as the fallback) through NVRTC. Needs no GPU. NVRTC
// always gets --fmad=false: a * b + c is fused only where the source says fma (docs/semantics.md).
#pragma once

#include <string>
#include <vector>

namespace primjit::jit {

struct NvrtcOptions {
  /// Compute capability as major*10+minor, e.g. 90 for sm_90.
  int arch = 90;
  /// Produce PTX even when a CUBIN for `arch` could be made (the driver then JITs it).
  bool force_ptx = false;
  bool fast_math = false;
  bool line_info = false;
  /// ptxas optimization level (0-3) of a CUBIN; -1: ptxas's default (3). Lower levels compile
  /// faster and may use more registers (bench/README.md, bench_compile_latency).
  int ptxas_opt_level = -1;
  /// --minimal: no texture, surface or device-runtime declarations, which generated code never
  /// uses; parsing less makes every compile faster (NVRTC 12.4 and newer).
  bool minimal = true;
  /// Automatic precompiled headers (-pch, NVRTC 12.8 and newer) for sources that include
  /// headers (cuda_fp16.h, cuda_bf16.h, cuda_fp8.h): the first compile of a process writes
  /// the header prefix once, later compiles with the same prefix and options load it.
  bool pch = true;
  std::vector<std::string> extra_options;
};

struct DeviceImage {
  enum class Kind { kCubin, kPtx };
  std::string name;
  Kind kind = Kind::kCubin;
  /// Architecture the image was compiled for (for PTX: the virtual compute_XX).
  int arch = 0;
  /// CUBIN bytes, or NUL-terminated PTX text.
  std::string data;
  /// NVRTC's log (warnings), possibly empty.
  std::string log;
};

struct CudaSource {
  std::string name;  // file name shown in diagnostics, e.g. "main_kernel.cu"
  std::string code;
};

/// Compiles one translation unit. A compile failure is a primjit::Error carrying the NVRTC log
/// and the numbered source.
DeviceImage nvrtc_compile(const CudaSource& source, const NvrtcOptions& options);

/// Compiles several translation units in parallel (oneTBB); results are in input order.
std::vector<DeviceImage> nvrtc_compile_all(const std::vector<CudaSource>& sources,
                                           const NvrtcOptions& options);

struct NvrtcInfo {
  int major = 0;
  int minor = 0;
  /// Real architectures NVRTC can emit a CUBIN for, ascending (e.g. 75, 80, ..., 120).
  std::vector<int> archs;
};
NvrtcInfo nvrtc_info();

/// The CUDA include directory handed to NVRTC (for cuda_fp16.h & co.): $CUDA_HOME/include when
/// CUDA_HOME is set, else the toolkit primjit was built with.
std::string cuda_include_dir();

/// `code` with line numbers, as shown in compile errors.
std::string numbered_source(const std::string& code);

}  // namespace primjit::jit
