#include "jit/cuda/nvrtc_compiler.h"

#include <dlfcn.h>
#include <nvrtc.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <sstream>

#include "primjit/error.h"
#include "primjit/log.h"

#ifndef PRIMJIT_CUDA_INCLUDE_DIR
#error "PRIMJIT_CUDA_INCLUDE_DIR must name the CUDA toolkit's include directory"
#endif

namespace primjit::jit {
namespace {

void check_nvrtc(nvrtcResult result, const char* call) {
  PRIMJIT_USER_CHECK(result == NVRTC_SUCCESS)
      << "NVRTC call " << call << " failed: " << nvrtcGetErrorString(result);
}

// Owns an nvrtcProgram so every exit path destroys it.
class Program {
 public:
  explicit Program(const CudaSource& source) {
    check_nvrtc(nvrtcCreateProgram(&program_, source.code.c_str(), source.name.c_str(), 0, nullptr,
                                   nullptr),
                "nvrtcCreateProgram");
  }
  ~Program() { nvrtcDestroyProgram(&program_); }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  nvrtcProgram get() const { return program_; }

  std::string log() const {
    size_t size = 0;
    check_nvrtc(nvrtcGetProgramLogSize(program_, &size), "nvrtcGetProgramLogSize");
    std::string text(size, '\0');
    if (size > 0) check_nvrtc(nvrtcGetProgramLog(program_, text.data()), "nvrtcGetProgramLog");
    while (!text.empty() && (text.back() == '\0' || text.back() == '\n')) text.pop_back();
    return text;
  }

 private:
  nvrtcProgram program_ = nullptr;
};

// The architecture to target: a real sm_XX when NVRTC can make a CUBIN for it, otherwise PTX
// for the newest virtual architecture not above the device (the driver JITs PTX forward).
DeviceImage::Kind choose_target(const NvrtcOptions& options, const std::vector<int>& archs,
                                int* arch) {
  PRIMJIT_USER_CHECK(!archs.empty()) << "NVRTC reports no supported GPU architecture";
  PRIMJIT_USER_CHECK(options.arch >= archs.front())
      << "NVRTC " << nvrtc_info().major << "." << nvrtc_info().minor << " supports sm_"
      << archs.front() << " and newer; sm_" << options.arch
      << " cannot be targeted with this CUDA toolkit";
  bool exact = std::find(archs.begin(), archs.end(), options.arch) != archs.end();
  if (exact && !options.force_ptx) {
    *arch = options.arch;
    return DeviceImage::Kind::kCubin;
  }
  auto below = std::upper_bound(archs.begin(), archs.end(), options.arch);
  *arch = *std::prev(below);
  return DeviceImage::Kind::kPtx;
}

// NVRTC loads libnvrtc-builtins.so.<major>.<minor> with dlopen by its name at the first compile,
// so the dynamic loader finds it only through LD_LIBRARY_PATH or the loader cache, which need
// not name the toolkit's library directory (primjit finds libnvrtc itself through its RUNPATH).
// Loading it first by absolute path, from beside the libnvrtc this process loaded or else from
// the toolkit's library directory, makes NVRTC's dlopen by name find it already loaded.
void preload_nvrtc_builtins() {
  static std::once_flag once;
  std::call_once(once, [] {
    int major = 0, minor = 0;
    if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return;
    const std::string name =
        "libnvrtc-builtins.so." + std::to_string(major) + "." + std::to_string(minor);
    std::vector<std::filesystem::path> dirs;
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&nvrtcCompileProgram), &info) != 0 &&
        info.dli_fname != nullptr) {
      dirs.push_back(std::filesystem::path(info.dli_fname).parent_path());
    }
    const std::filesystem::path toolkit = std::filesystem::path(cuda_include_dir()).parent_path();
    dirs.push_back(toolkit / "lib64");
    dirs.push_back(toolkit / "lib");
    for (const std::filesystem::path& dir : dirs) {
      const std::filesystem::path path = dir / name;
      std::error_code ec;
      if (!std::filesystem::exists(path, ec)) continue;
      // Kept loaded for the life of the process, as NVRTC keeps it.
      if (dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) != nullptr) {
        PRIMJIT_LOG_DEBUG << "loaded " << path.string();
        return;
      }
      const char* reason = dlerror();
      PRIMJIT_LOG_INFO << "cannot load " << path.string() << ": "
                       << (reason != nullptr ? reason : "unknown reason");
    }
    PRIMJIT_LOG_INFO << name << " not found beside libnvrtc; NVRTC looks for it by name";
  });
}

}  // namespace

std::string cuda_include_dir() {
  if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && *home != '\0') {
    return (std::filesystem::path(home) / "include").string();
  }
  return PRIMJIT_CUDA_INCLUDE_DIR;
}

std::string numbered_source(const std::string& code) {
  std::ostringstream out;
  std::istringstream in(code);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    out.width(4);
    out << number << " | " << line << '\n';
  }
  return out.str();
}

NvrtcInfo nvrtc_info() {
  static const NvrtcInfo info = [] {
    NvrtcInfo result;
    check_nvrtc(nvrtcVersion(&result.major, &result.minor), "nvrtcVersion");
    int count = 0;
    check_nvrtc(nvrtcGetNumSupportedArchs(&count), "nvrtcGetNumSupportedArchs");
    result.archs.resize(count);
    if (count > 0) {
      check_nvrtc(nvrtcGetSupportedArchs(result.archs.data()), "nvrtcGetSupportedArchs");
    }
    std::sort(result.archs.begin(), result.archs.end());
    return result;
  }();
  return info;
}

DeviceImage nvrtc_compile(const CudaSource& source, const NvrtcOptions& options) {
  DeviceImage image;
  image.name = source.name;
  image.kind = choose_target(options, nvrtc_info().archs, &image.arch);
  const bool cubin = image.kind == DeviceImage::Kind::kCubin;

  std::vector<std::string> flags = {
      (cubin ? "-arch=sm_" : "-arch=compute_") + std::to_string(image.arch),
      "--std=c++17",
      "-default-device",
      "-I" + cuda_include_dir(),
  };
  if (options.fast_math) flags.push_back("--use_fast_math");
  // Contraction is primjit's decision (T.fma, see FuseMultiplyAdd), also with fast math: NVRTC
  // never fuses a multiply and an add on its own.
  flags.push_back("--fmad=false");
  if (options.line_info) flags.push_back("-lineinfo");
  PRIMJIT_USER_CHECK(options.ptxas_opt_level >= -1 && options.ptxas_opt_level <= 3)
      << "ptxas optimization level must be 0, 1, 2 or 3 (or -1 for ptxas's default), not "
      << options.ptxas_opt_level;
  if (options.ptxas_opt_level >= 0 && cubin) {
    flags.push_back("--ptxas-options=-O" + std::to_string(options.ptxas_opt_level));
  }
  const NvrtcInfo& info = nvrtc_info();
  auto at_least = [&](int major, int minor) {
    return info.major > major || (info.major == major && info.minor >= minor);
  };
  if (options.minimal && at_least(12, 4)) flags.push_back("--minimal");
  if (options.pch && at_least(12, 8) && source.code.find("#include <") != std::string::npos) {
    // Quiet: no note when a PCH is made or used, nor a warning when the process's PCH was made
    // with other options (629: another architecture, fast math) or other headers (630) and is
    // not used.
    flags.push_back("-pch");
    flags.push_back("--pch-messages=false");
    flags.push_back("--diag-suppress=629");
    flags.push_back("--diag-suppress=630");
  }
  flags.insert(flags.end(), options.extra_options.begin(), options.extra_options.end());
  std::vector<const char*> argv;
  for (const std::string& flag : flags) argv.push_back(flag.c_str());

  preload_nvrtc_builtins();
  Program program(source);
  nvrtcResult result =
      nvrtcCompileProgram(program.get(), static_cast<int>(argv.size()), argv.data());
  image.log = program.log();
  if (result != NVRTC_SUCCESS) {
    std::string joined;
    for (const std::string& flag : flags) joined += " " + flag;
    PRIMJIT_USER_ERROR() << "NVRTC could not compile '" << source.name << "' ("
                         << nvrtcGetErrorString(result) << "; options:" << joined << "):\n"
                         << image.log << "\nsource:\n"
                         << numbered_source(source.code);
  }

  size_t size = 0;
  if (cubin) {
    check_nvrtc(nvrtcGetCUBINSize(program.get(), &size), "nvrtcGetCUBINSize");
    image.data.resize(size);
    check_nvrtc(nvrtcGetCUBIN(program.get(), image.data.data()), "nvrtcGetCUBIN");
  } else {
    check_nvrtc(nvrtcGetPTXSize(program.get(), &size), "nvrtcGetPTXSize");
    image.data.resize(size);  // includes the terminating NUL the driver expects
    check_nvrtc(nvrtcGetPTX(program.get(), image.data.data()), "nvrtcGetPTX");
  }
  PRIMJIT_USER_CHECK(!image.data.empty())
      << "NVRTC produced an empty image for '" << source.name << "' (" << flags.front() << ")";
  PRIMJIT_LOG_DEBUG << "NVRTC compiled " << source.name << " to " << (cubin ? "CUBIN" : "PTX")
                    << " for " << (cubin ? "sm_" : "compute_") << image.arch << " ("
                    << image.data.size() << " bytes)";
  return image;
}

std::vector<DeviceImage> nvrtc_compile_all(const std::vector<CudaSource>& sources,
                                           const NvrtcOptions& options) {
  std::vector<DeviceImage> images(sources.size());
  // Separate NVRTC programs compile independently; the first failure propagates.
  tbb::parallel_for(size_t{0}, sources.size(),
                    [&](size_t i) { images[i] = nvrtc_compile(sources[i], options); });
  return images;
}

}  // namespace primjit::jit
