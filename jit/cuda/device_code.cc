#include "jit/cuda/device_code.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>

#include "ir/dump_config.h"
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

// Kernel names live as long as the process: the driver's record of the kernel launched last
// on each device (which names asynchronous faults) points at them.
const std::string* interned_name(const std::string& name) {
  static std::mutex mutex;
  static auto* names = new std::set<std::string>;  // never freed: read during exit
  std::lock_guard<std::mutex> lock(mutex);
  return &*names->insert(name).first;
}

// Where a kernel was loaded and what launching it must respect besides the launch values.
struct LoadedKernel {
  int device = 0;                // the ordinal whose context loaded the module
  int64_t static_shared = 0;     // bytes of __shared__ memory per block (the driver's count)
  bool launch_blocking = false;  // CUDA_LAUNCH_BLOCKING=1: synchronize after each launch
};

class CudaKernel : public KernelHandle {
 public:
  CudaKernel(CudaDriver& driver, CUfunc_st* function, std::string name, std::vector<Slot> slots,
             const LaunchLimits& limits, std::vector<uint32_t> param_bytes,
             std::shared_ptr<void> module, const LoadedKernel& loaded)
      : driver_(driver),
        function_(function),
        name_(std::move(name)),
        slots_(std::move(slots)),
        limits_(limits),
        param_bytes_(std::move(param_bytes)),
        module_(std::move(module)),
        loaded_(loaded),
        interned_(interned_name(name_)) {}

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
    // The checks the interpreter makes too (launch_limits.h), before the driver's own; static
    // and dynamic shared memory count together against the device's opt-in maximum.
    if (std::string why =
            launch_config_error(limits_, {grid.x, grid.y, grid.z}, {block.x, block.y, block.z}, dyn,
                                loaded_.static_shared);
        !why.empty()) {
      return fail(why);
    }
    // The stream is the call's (a variant serves calls on every stream).
    const CallContext& call = t_call_context;
    if (call.recording != nullptr) {
      return record(call.recording, grid, block, static_cast<unsigned>(dyn), args);
    }
    auto* stream = static_cast<CUstream_st*>(call.stream);
    // The module's own context: a function launched on a context that did not load it fails.
    std::string error;
    if (!driver_.try_launch_on(loaded_.device, function_, grid, block, static_cast<unsigned>(dyn),
                               args, stream, &error)) {
      if (error.find("STREAM_CAPTURE") != std::string::npos) {
        error +=
            "; while a stream captures a CUDA graph, call the kernel on that stream "
            "(CallOptions::cuda_stream), since other streams' work would join or break the "
            "capture";
      }
      return fail(error);
    }
    driver_.note_launch(loaded_.device, interned_);
    // CUDA_LAUNCH_BLOCKING=1 waits for the launch, except while the stream captures a graph
    // (nothing runs then, and a synchronize would break the capture).
    if (loaded_.launch_blocking && !capturing(stream) &&
        !driver_.try_synchronize_stream(stream, &error)) {
      return fail("(CUDA_LAUNCH_BLOCKING=1: synchronized after the launch) " + error);
    }
    return 0;
  }

 private:
  bool capturing(CUstream_st* stream) noexcept {
    try {
      return driver_.is_capturing(stream);
    } catch (const std::exception&) {
      return false;  // the synchronize that follows reports the driver's state
    }
  }

  // Keeps the launch, with copies of the argument values, instead of running it.
  int32_t record(LaunchRecording* recording, Dim3 grid, Dim3 block, unsigned dyn,
                 void** args) noexcept {
    try {
      RecordedLaunch& l = recording->launches.emplace_back();
      l.function = function_;
      l.grid = grid;
      l.block = block;
      l.dynamic_shared = dyn;
      l.module = module_;
      l.device = loaded_.device;
      l.name = interned_;
      l.launch_blocking = loaded_.launch_blocking;
      size_t words = 0;
      for (uint32_t bytes : param_bytes_) words += (bytes + 7) / 8;
      l.values.assign(words, 0);
      size_t word = 0;
      for (size_t i = 0; i < param_bytes_.size(); ++i) {
        std::memcpy(&l.values[word], args[i], param_bytes_[i]);
        word += (param_bytes_[i] + 7) / 8;
      }
      word = 0;
      for (uint32_t bytes : param_bytes_) {
        l.args.push_back(&l.values[word]);
        word += (bytes + 7) / 8;
      }
      recording->driver = &driver_;
      return 0;
    } catch (const std::exception& e) {
      return fail(std::string("recording the launch failed: ") + e.what());
    }
  }

  int32_t fail(const std::string& what) noexcept {
    try {
      set_last_error("launching kernel '" + name_ + "': " + what);
    } catch (...) {
    }
    return -1;
  }

  CudaDriver& driver_;
  CUfunc_st* function_;
  std::string name_;
  std::vector<Slot> slots_;
  LaunchLimits limits_;
  std::vector<uint32_t> param_bytes_;
  std::shared_ptr<void> module_;  // the loaded module, for recordings that outlive the variant
  LoadedKernel loaded_;
  const std::string* interned_;
};

// The loaded CUDA module: unloaded when the variant goes (and only then: not copyable, so no
// temporary's destructor unloads it early). Launches are asynchronous, so its kernels may
// still run then: the device's work is waited for first, and a module whose device cannot be
// synchronized (a fault, a stream capture in progress) is left loaded rather than unloaded
// under running kernels.
struct CudaModule {
  CudaModule(CudaDriver* d, CUmod_st* m, int ordinal) : driver(d), module(m), device(ordinal) {}
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;
  CudaDriver* driver;
  CUmod_st* module;
  int device;
  ~CudaModule() {
    try {
      driver->make_current(device);
      driver->synchronize();
    } catch (const std::exception& e) {
      PRIMJIT_LOG_WARNING << "a CUDA module of device " << device
                          << " stays loaded: its kernels may still run (" << e.what() << ")";
      return;
    }
    try {
      driver->unload_module(module);
    } catch (const std::exception& e) {
      PRIMJIT_LOG_INFO << "unloading a CUDA module failed: " << e.what();
    }
  }
};

// The driver must be new enough for the code this NVRTC makes, checked before compiling and
// loading, with the fix: a CUBIN of CUDA 13.x loads on any CUDA 13 driver (minor version
// compatibility), PTX only on a driver at least as new as the NVRTC that wrote it.
void check_driver_version(CudaDriver& driver, bool ptx) {
  const NvrtcInfo nvrtc = nvrtc_info();
  const std::string version = std::to_string(nvrtc.major) + "." + std::to_string(nvrtc.minor);
  driver.check_supports(nvrtc.major * 1000 + (ptx ? nvrtc.minor * 10 : 0),
                        "NVRTC " + version + " (the CUDA " + version + " toolkit)");
}

bool launch_blocking() {
  const char* value = std::getenv("CUDA_LAUNCH_BLOCKING");
  return value != nullptr && std::string(value) == "1";
}

// PRIMJIT_DUMP=cuda: the module's CUDA source goes to <variant dump dir>/device.cu.
void dump_source(const CudaModuleSource& source, const DumpConfig* dumps) {
  if (dumps == nullptr || !dumps->cuda) return;
  write_dump_file(dumps->dir, "device.cu", source.code);
  PRIMJIT_LOG_INFO << "CUDA source written to " << dumps->dir << "/device.cu";
}

// PRIMJIT_DUMP=ptx: NVRTC's PTX goes to <variant dump dir>/device.ptx; when the variant's
// image is a CUBIN, the source is compiled to PTX once more, for the dump only.
void dump_ptx(const CudaSource& source, NvrtcOptions options, const DeviceImage& image,
              const DumpConfig* dumps) {
  if (dumps == nullptr || !dumps->ptx) return;
  std::string ptx = image.data;
  if (image.kind != DeviceImage::Kind::kPtx) {
    options.force_ptx = true;
    ptx = nvrtc_compile(source, options).data;
  }
  if (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  write_dump_file(dumps->dir, "device.ptx", ptx);
  PRIMJIT_LOG_INFO << "PTX written to " << dumps->dir << "/device.ptx";
}

}  // namespace

DeviceBinary compile_device_code(const IRModule& lowered, const Target& device,
                                 const DeviceOptions& device_options, StageTimes* times,
                                 const DumpConfig* dumps) {
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
  dump_source(source, dumps);

  // Then the driver: without one this is the "no CUDA driver" error, before NVRTC runs.
  CudaDriver& driver = CudaDriver::get();
  check_driver_version(driver, /*ptx=*/false);
  driver.make_current(device_options.device);
  DeviceInfo info = driver.device_info(device_options.device);

  start = Clock::now();
  NvrtcOptions options;
  options.arch = info.arch();  // the device's exact architecture (PTX when NVRTC lacks it)
  options.fast_math = device_options.fast_math;
  options.ptxas_opt_level = device_options.ptxas_opt_level;
#ifndef NDEBUG
  options.line_info = true;  // debug builds: source lines in profilers and sanitizers
#endif
  CudaSource cuda_source{"primjit_kernels.cu", source.code};
  DeviceImage image = nvrtc_compile(cuda_source, options);
  times->device_compile_ms += ms_since(start);
  dump_ptx(cuda_source, options, image, dumps);
  binary.ptx = image.kind == DeviceImage::Kind::kPtx;
  binary.arch = image.arch;
  binary.image = std::move(image.data);
  for (const CudaKernelInfo& kernel : source.kernels) {
    std::vector<uint32_t> param_bytes;
    for (DataType t : kernel.param_types) {
      param_bytes.push_back(t.is_handle() ? uint32_t{sizeof(void*)}
                                          : static_cast<uint32_t>(t.bytes()));
    }
    binary.kernels.push_back({kernel.name, kernel.launch_params, std::move(param_bytes)});
  }
  return binary;
}

std::unique_ptr<DeviceCode> load_device_binary(const DeviceBinary& binary,
                                               const DeviceOptions& device_options,
                                               StageTimes* times) {
  auto code = std::make_unique<DeviceCode>();
  if (binary.empty()) return code;
  CudaDriver& driver = CudaDriver::get();
  check_driver_version(driver, binary.ptx);
  const int ordinal = device_options.device;
  driver.make_current(ordinal);
  DeviceInfo device = driver.device_info(ordinal);
  Clock::time_point start = Clock::now();
  auto module = std::make_shared<CudaModule>(&driver, driver.load_module(binary.image), ordinal);
  code->owner = module;
  const int64_t optin = static_cast<int64_t>(device.max_shared_per_block_optin);
  LoadedKernel loaded;
  loaded.device = ordinal;
  loaded.launch_blocking = launch_blocking();
  for (const DeviceBinary::Kernel& info : binary.kernels) {
    CUfunc_st* function = driver.function(module->module, info.name);
    std::vector<Slot> slots;
    bool dynamic_shared = false;
    for (const std::string& tag : info.launch_params) {
      slots.push_back(slot_of(tag, info.name));
      dynamic_shared |= slots.back() == Slot::kDynShared;
    }
    loaded.static_shared = driver.static_shared_bytes(function);
    // Above 48 KB of shared memory per block a kernel must opt in. Static and dynamic shared
    // memory share the device's opt-in maximum, so the dynamic part may use what the static
    // part leaves (the driver refuses more).
    if (dynamic_shared && optin > 48 * 1024 && optin > loaded.static_shared) {
      driver.set_max_dynamic_shared(function, static_cast<int>(optin - loaded.static_shared));
    }
    LaunchLimits limits;
    limits.max_shared_per_block = std::max<int64_t>(optin, limits.max_static_shared);
    code->kernels[info.name] = std::make_unique<CudaKernel>(
        driver, function, info.name, std::move(slots), limits, info.param_bytes, module, loaded);
  }
  times->load_ms += ms_since(start);
  return code;
}

void replay_launches(const LaunchRecording& recording, CUstream_st* stream) {
  std::string error;
  for (const RecordedLaunch& l : recording.launches) {
    CudaDriver& driver = *recording.driver;
    bool ok = driver.try_launch_on(l.device, l.function, l.grid, l.block, l.dynamic_shared,
                                   const_cast<void**>(l.args.data()), stream, &error);
    if (ok) {
      // As a call's launch does: asynchronous faults name the kernel launched last, and
      // CUDA_LAUNCH_BLOCKING=1 waits for it (not while the stream captures a graph).
      driver.note_launch(l.device, l.name);
      if (l.launch_blocking && !driver.is_capturing(stream)) {
        ok = driver.try_synchronize_stream(stream, &error);
        if (!ok) error = "(CUDA_LAUNCH_BLOCKING=1: synchronized after the launch) " + error;
      }
    }
    if (!ok) {
      PRIMJIT_USER_ERROR() << "launching kernel '" << *l.name << "' of a prepared call: " << error;
    }
  }
}

}  // namespace primjit::jit
