#include "jit/cuda/device_code.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "jit/common/host_abi.h"
#include "jit/common/launch_limits.h"
#include "jit/cuda/codegen_cuda.h"
#include "jit/cuda/driver.h"
#include "jit/cuda/nvrtc_compiler.h"
#include "primjit/error.h"
#include "primjit/log.h"

namespace primjit::jit {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

bool has_kernels(const IRModule& lowered) {
  for (const auto& [gvar, func] : lowered->functions) {
    if (func->is_kernel()) return true;
  }
  return false;
}

// Where each launch value goes: a grid or block dimension, or the dynamic shared memory size.
enum class Slot : uint8_t { kGridX, kGridY, kGridZ, kBlockX, kBlockY, kBlockZ, kDynShared };

Slot slot_of(const std::string& tag, const std::string& kernel) {
  static const std::pair<const char*, Slot> kSlots[] = {
      {"blockIdx.x", Slot::kGridX},
      {"blockIdx.y", Slot::kGridY},
      {"blockIdx.z", Slot::kGridZ},
      {"threadIdx.x", Slot::kBlockX},
      {"threadIdx.y", Slot::kBlockY},
      {"threadIdx.z", Slot::kBlockZ},
      {attr::kUseDynSharedMemory, Slot::kDynShared}};
  for (const auto& [name, slot] : kSlots) {
    if (tag == name) return slot;
  }
  PRIMJIT_USER_ERROR() << "kernel '" << kernel << "' has launch parameter '" << tag
                       << "', which a CUDA launch cannot set";
}

class CudaKernel : public KernelHandle {
 public:
  CudaKernel(CudaDriver& driver, CUfunc_st* function, std::string name, std::vector<Slot> slots,
             const LaunchLimits& limits, CUstream_st* stream)
      : driver_(driver),
        stream_(stream),
        function_(function),
        name_(std::move(name)),
        slots_(std::move(slots)),
        limits_(limits) {}

  int32_t launch(const int64_t* launch, void** args) noexcept override {
    Dim3 grid, block;
    int64_t dyn = 0;
    for (size_t i = 0; i < slots_.size(); ++i) {
      int64_t v = launch[i];
      if (v < 0 || v > 0x7fffffff)
        return fail("launch value " + std::to_string(v) + " is out of range");
      switch (slots_[i]) {
        case Slot::kGridX:
          grid.x = static_cast<unsigned>(v);
          break;
        case Slot::kGridY:
          grid.y = static_cast<unsigned>(v);
          break;
        case Slot::kGridZ:
          grid.z = static_cast<unsigned>(v);
          break;
        case Slot::kBlockX:
          block.x = static_cast<unsigned>(v);
          break;
        case Slot::kBlockY:
          block.y = static_cast<unsigned>(v);
          break;
        case Slot::kBlockZ:
          block.z = static_cast<unsigned>(v);
          break;
        case Slot::kDynShared:
          dyn = v;
          break;
      }
    }
    if (grid.x == 0 || grid.y == 0 || grid.z == 0) return 0;  // an empty grid runs nothing
    // The checks the interpreter makes too (launch_limits.h), before the driver's own.
    if (std::string why = launch_config_error(limits_, {grid.x, grid.y, grid.z},
                                              {block.x, block.y, block.z}, dyn);
        !why.empty()) {
      return fail(why);
    }
    std::string error;
    if (!driver_.try_launch(function_, grid, block, static_cast<unsigned>(dyn), args, stream_,
                            &error)) {
      return fail(error);
    }
    return 0;
  }

 private:
  int32_t fail(const std::string& what) noexcept {
    try {
      set_last_error("launching kernel '" + name_ + "': " + what);
    } catch (...) {
    }
    return -1;
  }

  CudaDriver& driver_;
  CUstream_st* stream_;
  CUfunc_st* function_;
  std::string name_;
  std::vector<Slot> slots_;
  LaunchLimits limits_;
};

// The loaded CUDA module: unloaded when the variant goes. Not copyable: a copy (once made by
// constructing a temporary for make_shared) would unload the module when it is destroyed.
struct CudaModule {
  CudaDriver* driver;
  CUmod_st* module;
  CudaModule(CudaDriver* d, CUmod_st* m) : driver(d), module(m) {}
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;
  ~CudaModule() {
    try {
      driver->unload_module(module);
    } catch (const std::exception& e) {
      PRIMJIT_LOG_INFO << "unloading a CUDA module failed: " << e.what();
    }
  }
};

// PRIMJIT_DUMP_CUDA=DIR: every module's CUDA source goes to DIR/<first kernel>.<n>.cu.
void dump_source(const CudaModuleSource& source) {
  const char* dir = std::getenv("PRIMJIT_DUMP_CUDA");
  if (dir == nullptr || *dir == 0) return;
  static std::atomic<uint64_t> count{0};
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::string stem = source.kernels.empty() ? "module" : source.kernels.front().name;
  std::filesystem::path path =
      std::filesystem::path(dir) / (stem + "." + std::to_string(count.fetch_add(1)) + ".cu");
  std::ofstream out(path);
  out << source.code;
  PRIMJIT_USER_CHECK(!ec && out.good())
      << "PRIMJIT_DUMP_CUDA: cannot write '" << path.string() << "'";
  PRIMJIT_LOG_INFO << "CUDA source written to " << path.string();
}

}  // namespace

DeviceBinary compile_device_code(const IRModule& lowered, const Target& device,
                                 const DeviceOptions& device_options, StageTimes* times) {
  DeviceBinary binary;
  if (!has_kernels(lowered)) return binary;
  PRIMJIT_USER_CHECK(device->kind == "cuda")
      << "kernels for target " << device.str()
      << " are not compiled as device code (emu variants run whole in the interpreter)";
  Clock::time_point start = Clock::now();
  CudaCodegenOptions codegen_options;
  codegen_options.fast_math = device_options.fast_math;
  codegen_options.max_unroll = device_options.max_unroll;
  CudaModuleSource source = codegen_cuda(lowered, codegen_options);
  times->device_codegen_ms += ms_since(start);
  dump_source(source);

  // Then the driver: without one this is the "no CUDA driver" error, before NVRTC runs.
  CudaDriver& driver = CudaDriver::get();
  driver.make_current(0);
  DeviceInfo info = driver.device_info(0);

  start = Clock::now();
  NvrtcOptions options;
  options.arch = info.arch();  // the device's exact architecture (PTX when NVRTC lacks it)
  options.fast_math = device_options.fast_math;
  options.ptxas_opt_level = device_options.ptxas_opt_level;
#ifndef NDEBUG
  options.line_info = true;  // debug builds: source lines in profilers and sanitizers
#endif
  DeviceImage image = nvrtc_compile({"primjit_kernels.cu", source.code}, options);
  times->device_compile_ms += ms_since(start);
  binary.ptx = image.kind == DeviceImage::Kind::kPtx;
  binary.arch = image.arch;
  binary.image = std::move(image.data);
  for (const CudaKernelInfo& kernel : source.kernels) {
    binary.kernels.push_back({kernel.name, kernel.launch_params});
  }
  return binary;
}

std::unique_ptr<DeviceCode> load_device_binary(const DeviceBinary& binary,
                                               const DeviceOptions& device_options,
                                               StageTimes* times) {
  auto code = std::make_unique<DeviceCode>();
  if (binary.empty()) return code;
  CudaDriver& driver = CudaDriver::get();
  driver.make_current(0);
  DeviceInfo device = driver.device_info(0);
  Clock::time_point start = Clock::now();
  auto module = std::make_shared<CudaModule>(&driver, driver.load_module(binary.image));
  code->owner = module;
  const int64_t optin = static_cast<int64_t>(device.max_shared_per_block_optin);
  for (const DeviceBinary::Kernel& info : binary.kernels) {
    CUfunc_st* function = driver.function(module->module, info.name);
    std::vector<Slot> slots;
    bool dynamic_shared = false;
    for (const std::string& tag : info.launch_params) {
      slots.push_back(slot_of(tag, info.name));
      dynamic_shared |= slots.back() == Slot::kDynShared;
    }
    // Above 48 KB a kernel must opt in; allow it up to what the device offers.
    if (dynamic_shared && optin > 48 * 1024) {
      driver.set_max_dynamic_shared(function, static_cast<int>(optin));
    }
    LaunchLimits limits;
    limits.max_shared_per_block = std::max<int64_t>(optin, limits.max_static_shared);
    code->kernels[info.name] =
        std::make_unique<CudaKernel>(driver, function, info.name, std::move(slots), limits,
                                     static_cast<CUstream_st*>(device_options.stream));
  }
  times->load_ms += ms_since(start);
  return code;
}

}  // namespace primjit::jit
