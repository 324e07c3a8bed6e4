#include "jit/cuda/driver.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>

#include "primjit/error.h"
#include "primjit/log.h"

namespace primjit::jit {
namespace {

// Every driver entry point primjit uses, with the ABI version of the prototype (the PFN_*
// suffix). Asking for CUDA_VERSION instead would silently switch some calls to newer ABIs.
#define PRIMJIT_CUDA_ENTRY_POINTS(X)  \
  X(cuGetErrorName, 6000)             \
  X(cuGetErrorString, 6000)           \
  X(cuInit, 2000)                     \
  X(cuDriverGetVersion, 2020)         \
  X(cuDeviceGetCount, 2000)           \
  X(cuDeviceGet, 2000)                \
  X(cuDeviceGetName, 2000)            \
  X(cuDeviceGetAttribute, 2000)       \
  X(cuDevicePrimaryCtxRetain, 7000)   \
  X(cuDevicePrimaryCtxRelease, 11000) \
  X(cuCtxSetCurrent, 4000)            \
  X(cuCtxGetCurrent, 4000)            \
  X(cuCtxSynchronize, 2000)           \
  X(cuModuleLoadData, 2000)           \
  X(cuModuleUnload, 2000)             \
  X(cuModuleGetFunction, 2000)        \
  X(cuFuncSetAttribute, 9000)         \
  X(cuFuncGetAttribute, 2020)         \
  X(cuLaunchKernel, 4000)             \
  X(cuMemAlloc, 3020)                 \
  X(cuMemFree, 3020)                  \
  X(cuMemcpyHtoD, 3020)               \
  X(cuMemcpyDtoH, 3020)               \
  X(cuMemcpyDtoDAsync, 3020)          \
  X(cuMemsetD8Async, 3020)            \
  X(cuEventCreate, 2000)              \
  X(cuEventDestroy, 4000)             \
  X(cuEventRecord, 2000)              \
  X(cuEventSynchronize, 2000)         \
  X(cuEventElapsedTime, 2000)         \
  X(cuStreamSynchronize, 2000)        \
  X(cuStreamIsCapturing, 10000)       \
  X(cuMemcpyHtoDAsync, 3020)          \
  X(cuMemcpyDtoHAsync, 3020)

// The driver and device whose primary context this thread made current (contexts are per
// thread): the launch path switches only when a kernel's device is not the current one.
// The context is checked against the driver's own current one before it is trusted: code
// outside primjit (cudaSetDevice, a framework's device guard) may have switched it since.
thread_local const CudaDriver* t_current_driver = nullptr;
thread_local int t_current_device = -1;
thread_local CUcontext t_current_context = nullptr;

// Devices whose last launched kernel is remembered (for naming asynchronous faults).
constexpr int kMaxNamedDevices = 64;

// Errors of kernels that already ran, reported by whatever driver call comes next (a copy, a
// synchronize, another launch): they name the last kernel launched, not that call.
bool is_async_fault(CUresult result) {
  switch (result) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
      return true;
    default:
      return false;
  }
}

constexpr const char* kNoDriver = "no CUDA driver: ";
constexpr const char* kHint =
    ". The 'cuda' target needs the NVIDIA driver (libcuda.so.1); on machines without a GPU use "
    "the 'llvm' or 'emu' target";

}  // namespace

struct CudaDriver::Api {
  void* library = nullptr;
  std::string library_name;
  PFN_cuGetProcAddress_v12000 get_proc = nullptr;
#define PRIMJIT_DECLARE(name, ver) PFN_##name##_v##ver name = nullptr;
  PRIMJIT_CUDA_ENTRY_POINTS(PRIMJIT_DECLARE)
#undef PRIMJIT_DECLARE

  std::mutex context_mutex;
  std::map<int, CUcontext> contexts;  // retained primary contexts by device ordinal

  std::mutex info_mutex;
  std::map<int, DeviceInfo> device_infos;  // device_info() by ordinal (it never changes)

  DeviceInfo query_device_info(int ordinal) const;

  // The kernel launched last on each device (interned names), for asynchronous faults.
  std::array<std::atomic<const std::string*>, kMaxNamedDevices> last_kernel{};

  ~Api() {
    for (auto& [ordinal, context] : contexts) {
      CUdevice device;
      if (cuDeviceGet(&device, ordinal) == CUDA_SUCCESS) cuDevicePrimaryCtxRelease(device);
    }
    if (library != nullptr) dlclose(library);
  }

  std::string describe(CUresult result) const {
    const char* name = nullptr;
    const char* text = nullptr;
    if (cuGetErrorName != nullptr) cuGetErrorName(result, &name);
    if (cuGetErrorString != nullptr) cuGetErrorString(result, &text);
    std::string out = name != nullptr ? name : "CUresult " + std::to_string(result);
    if (text != nullptr) out += std::string(" (") + text + ")";
    return out;
  }

  // What a failed call says: the driver's error and, for a fault of earlier asynchronous
  // work, the kernel launched last on this thread's device and how to find the culprit.
  std::string failure(CUresult result, const char* call) const {
    std::string text = std::string("CUDA driver call ") + call + " failed: " + describe(result);
    if (!is_async_fault(result)) return text;
    text += ". This is an asynchronous fault of GPU work launched earlier";
    const int device = t_current_device;
    const std::string* kernel = device >= 0 && device < kMaxNamedDevices
                                    ? last_kernel[device].load(std::memory_order_relaxed)
                                    : nullptr;
    if (kernel != nullptr) {
      text += ": the last kernel launched on device " + std::to_string(device) + " was '" +
              *kernel + "'";
    }
    return text +
           " (run with CUDA_LAUNCH_BLOCKING=1 to report each fault at the launch of the kernel "
           "that caused it); the CUDA context is unusable after it, restart the process";
  }

  // The one checked wrapper all driver calls go through.
  void check(CUresult result, const char* call) const {
    PRIMJIT_USER_CHECK(result == CUDA_SUCCESS) << failure(result, call);
  }

  template <typename F>
  void resolve(const char* name, int version, F* function) {
    void* pointer = nullptr;
    CUdriverProcAddressQueryResult status{};
    CUresult result = get_proc(name, &pointer, version, CU_GET_PROC_ADDRESS_DEFAULT, &status);
    PRIMJIT_USER_CHECK(result != CUDA_ERROR_STUB_LIBRARY)
        << kNoDriver << "'" << library_name
        << "' is the CUDA toolkit's stub library (CUDA_ERROR_STUB_LIBRARY), not a driver" << kHint;
    PRIMJIT_USER_CHECK(result == CUDA_SUCCESS && status == CU_GET_PROC_ADDRESS_SUCCESS &&
                       pointer != nullptr)
        << kNoDriver << "the driver in '" << library_name << "' does not provide " << name
        << " (ABI version " << version << "); update the NVIDIA driver";
    *function = reinterpret_cast<F>(pointer);
  }

  void open(const std::string& name) {
    library_name = name;
    library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      const char* reason = dlerror();
      PRIMJIT_USER_ERROR() << kNoDriver << "cannot load '" << name << "' ("
                           << (reason != nullptr ? reason : "unknown reason") << ")" << kHint;
    }
    get_proc = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(library, "cuGetProcAddress_v2"));
    PRIMJIT_USER_CHECK(get_proc != nullptr)
        << kNoDriver << "'" << name
        << "' has no cuGetProcAddress_v2; the driver is older than CUDA 12.0, update it";
#define PRIMJIT_RESOLVE(name, ver) resolve(#name, ver, &name);
    PRIMJIT_CUDA_ENTRY_POINTS(PRIMJIT_RESOLVE)
#undef PRIMJIT_RESOLVE
    CUresult result = cuInit(0);
    PRIMJIT_USER_CHECK(result == CUDA_SUCCESS)
        << kNoDriver << "cuInit failed with " << describe(result) << kHint;
  }
};

CudaDriver::CudaDriver(std::unique_ptr<Api> api) : api_(std::move(api)) {}
CudaDriver::~CudaDriver() = default;

std::unique_ptr<CudaDriver> CudaDriver::load(const std::string& library) {
  auto api = std::make_unique<Api>();
  api->open(library);
  PRIMJIT_LOG_INFO << "loaded CUDA driver " << library;
  return std::unique_ptr<CudaDriver>(new CudaDriver(std::move(api)));
}

CudaDriver* CudaDriver::try_get(std::string* reason) {
  // Loaded once; a failure is remembered so every caller gets the same answer cheaply.
  static CudaDriver* instance = nullptr;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] {
    // PRIMJIT_CUDA_DRIVER_LIBRARY: the driver library primjit loads instead of libcuda.so.1
    // (tests load a fake driver this way), read once.
    const char* chosen = std::getenv("PRIMJIT_CUDA_DRIVER_LIBRARY");
    const std::string library = chosen != nullptr && *chosen != 0 ? chosen : "libcuda.so.1";
    try {
      instance = load(library).release();  // lives for the whole process
    } catch (const Error& error) {
      failure = error.what();
      PRIMJIT_LOG_INFO << failure;
    }
  });
  if (instance == nullptr && reason != nullptr) *reason = failure;
  return instance;
}

CudaDriver& CudaDriver::get() {
  std::string reason;
  CudaDriver* driver = try_get(&reason);
  PRIMJIT_USER_CHECK(driver != nullptr) << reason;
  return *driver;
}

int CudaDriver::version() const {
  int value = 0;
  api_->check(api_->cuDriverGetVersion(&value), "cuDriverGetVersion");
  return value;
}

int CudaDriver::device_count() const {
  int count = 0;
  api_->check(api_->cuDeviceGetCount(&count), "cuDeviceGetCount");
  return count;
}

DeviceInfo CudaDriver::device_info(int ordinal) const {
  {
    std::lock_guard<std::mutex> lock(api_->info_mutex);
    auto it = api_->device_infos.find(ordinal);
    if (it != api_->device_infos.end()) return it->second;
  }
  int count = device_count();
  PRIMJIT_USER_CHECK(ordinal >= 0 && ordinal < count)
      << "CUDA device " << ordinal << " does not exist; this machine has " << count;
  DeviceInfo info = api_->query_device_info(ordinal);
  std::lock_guard<std::mutex> lock(api_->info_mutex);
  return api_->device_infos.emplace(ordinal, std::move(info)).first->second;
}

// The driver queries behind device_info(), which caches their answer per ordinal.
DeviceInfo CudaDriver::Api::query_device_info(int ordinal) const {
  CUdevice device;
  check(cuDeviceGet(&device, ordinal), "cuDeviceGet");
  DeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  check(cuDeviceGetName(name, sizeof(name) - 1, device), "cuDeviceGetName");
  info.name = name;
  auto attribute = [&](CUdevice_attribute which, const char* what) {
    int value = 0;
    check(cuDeviceGetAttribute(&value, which, device), what);
    return value;
  };
  info.cc_major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "cuDeviceGetAttribute");
  info.cc_minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "cuDeviceGetAttribute");
  info.multiprocessors =
      attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "cuDeviceGetAttribute");
  info.max_shared_per_block_optin = static_cast<size_t>(
      attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "cuDeviceGetAttribute"));
  info.l2_cache_bytes =
      static_cast<size_t>(attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "cuDeviceGetAttribute"));
  return info;
}

bool CudaDriver::still_current() const noexcept {
  CUcontext current = nullptr;
  return t_current_driver == this && api_->cuCtxGetCurrent(&current) == CUDA_SUCCESS &&
         current == t_current_context;
}

void CudaDriver::ensure_current() {
  if (!still_current()) make_current(t_current_driver == this ? t_current_device : 0);
}

void CudaDriver::make_current(int ordinal) {
  std::lock_guard<std::mutex> lock(api_->context_mutex);
  auto it = api_->contexts.find(ordinal);
  if (it == api_->contexts.end()) {
    CUdevice device;
    api_->check(api_->cuDeviceGet(&device, ordinal), "cuDeviceGet");
    CUcontext context = nullptr;
    api_->check(api_->cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
    it = api_->contexts.emplace(ordinal, context).first;
  }
  api_->check(api_->cuCtxSetCurrent(it->second), "cuCtxSetCurrent");
  t_current_driver = this;
  t_current_device = ordinal;
  t_current_context = it->second;
}

bool CudaDriver::try_make_current(int ordinal, std::string* error) noexcept {
  if (t_current_device == ordinal && still_current()) return true;
  try {
    make_current(ordinal);
    return true;
  } catch (const std::exception& e) {
    *error = e.what();
    return false;
  }
}

DevicePtr CudaDriver::alloc(size_t bytes) {
  ensure_current();
  CUdeviceptr pointer = 0;
  api_->check(api_->cuMemAlloc(&pointer, bytes), "cuMemAlloc");
  return pointer;
}

void CudaDriver::free(DevicePtr pointer) {
  ensure_current();
  api_->check(api_->cuMemFree(pointer), "cuMemFree");
}

void CudaDriver::copy_to_device(DevicePtr destination, const void* source, size_t bytes) {
  ensure_current();
  api_->check(api_->cuMemcpyHtoD(destination, source, bytes), "cuMemcpyHtoD");
}

void CudaDriver::copy_to_host(void* destination, DevicePtr source, size_t bytes) {
  ensure_current();
  api_->check(api_->cuMemcpyDtoH(destination, source, bytes), "cuMemcpyDtoH");
}

void CudaDriver::copy_device_async(DevicePtr destination, DevicePtr source, size_t bytes,
                                   CUstream_st* stream) {
  ensure_current();
  api_->check(api_->cuMemcpyDtoDAsync(destination, source, bytes, stream), "cuMemcpyDtoDAsync");
}

void CudaDriver::fill_async(DevicePtr destination, unsigned char value, size_t bytes,
                            CUstream_st* stream) {
  ensure_current();
  api_->check(api_->cuMemsetD8Async(destination, value, bytes, stream), "cuMemsetD8Async");
}

CUevent_st* CudaDriver::create_event() {
  ensure_current();
  CUevent event = nullptr;
  api_->check(api_->cuEventCreate(&event, CU_EVENT_DEFAULT), "cuEventCreate");
  return event;
}

void CudaDriver::destroy_event(CUevent_st* event) noexcept {
  if (event != nullptr) api_->cuEventDestroy(event);
}

void CudaDriver::record_event(CUevent_st* event, CUstream_st* stream) {
  ensure_current();
  api_->check(api_->cuEventRecord(event, stream), "cuEventRecord");
}

void CudaDriver::synchronize_event(CUevent_st* event) {
  api_->check(api_->cuEventSynchronize(event), "cuEventSynchronize");
}

float CudaDriver::elapsed_ms(CUevent_st* start, CUevent_st* end) {
  float ms = 0;
  api_->check(api_->cuEventElapsedTime(&ms, start, end), "cuEventElapsedTime");
  return ms;
}

void CudaDriver::synchronize_stream(CUstream_st* stream) {
  ensure_current();
  api_->check(api_->cuStreamSynchronize(stream), "cuStreamSynchronize");
}

bool CudaDriver::is_capturing(CUstream_st* stream) {
  ensure_current();
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUresult result = api_->cuStreamIsCapturing(stream, &status);
  // The legacy default stream while a blocking stream captures: work on it is illegal too.
  if (result == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) return true;
  api_->check(result, "cuStreamIsCapturing");
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

void CudaDriver::copy_to_device_async(DevicePtr destination, const void* source, size_t bytes,
                                      CUstream_st* stream) {
  ensure_current();
  api_->check(api_->cuMemcpyHtoDAsync(destination, source, bytes, stream), "cuMemcpyHtoDAsync");
}

void CudaDriver::copy_to_host_async(void* destination, DevicePtr source, size_t bytes,
                                    CUstream_st* stream) {
  ensure_current();
  api_->check(api_->cuMemcpyDtoHAsync(destination, source, bytes, stream), "cuMemcpyDtoHAsync");
}

CUmod_st* CudaDriver::load_module(const std::string& image) {
  ensure_current();
  CUmodule module = nullptr;
  api_->check(api_->cuModuleLoadData(&module, image.data()), "cuModuleLoadData");
  return module;
}

void CudaDriver::unload_module(CUmod_st* module) {
  ensure_current();
  api_->check(api_->cuModuleUnload(module), "cuModuleUnload");
}

CUfunc_st* CudaDriver::function(CUmod_st* module, const std::string& name) {
  CUfunction function = nullptr;
  CUresult result = api_->cuModuleGetFunction(&function, module, name.c_str());
  PRIMJIT_USER_CHECK(result == CUDA_SUCCESS)
      << "kernel '" << name << "' is not in the loaded module: " << api_->describe(result);
  return function;
}

void CudaDriver::launch(CUfunc_st* function, Dim3 grid, Dim3 block, unsigned dynamic_shared_bytes,
                        void** args, CUstream_st* stream) {
  std::string error;
  PRIMJIT_USER_CHECK(try_launch(function, grid, block, dynamic_shared_bytes, args, stream, &error))
      << error;
}

void CudaDriver::set_max_dynamic_shared(CUfunc_st* function, int bytes) {
  api_->check(
      api_->cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
      "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
}

bool CudaDriver::try_launch(CUfunc_st* function, Dim3 grid, Dim3 block,
                            unsigned dynamic_shared_bytes, void** args, CUstream_st* stream,
                            std::string* error) noexcept {
  if (!still_current()) {
    try {
      make_current(t_current_driver == this ? t_current_device : 0);
    } catch (const std::exception& e) {
      *error = e.what();
      return false;
    }
  }
  return launch_current(function, grid, block, dynamic_shared_bytes, args, stream, error);
}

bool CudaDriver::try_launch_on(int ordinal, CUfunc_st* function, Dim3 grid, Dim3 block,
                               unsigned dynamic_shared_bytes, void** args, CUstream_st* stream,
                               std::string* error) noexcept {
  return try_make_current(ordinal, error) &&
         launch_current(function, grid, block, dynamic_shared_bytes, args, stream, error);
}

bool CudaDriver::launch_current(CUfunc_st* function, Dim3 grid, Dim3 block,
                                unsigned dynamic_shared_bytes, void** args, CUstream_st* stream,
                                std::string* error) noexcept {
  CUresult result = api_->cuLaunchKernel(function, grid.x, grid.y, grid.z, block.x, block.y,
                                         block.z, dynamic_shared_bytes, stream, args, nullptr);
  if (result == CUDA_SUCCESS) return true;
  try {
    *error = api_->failure(result, "cuLaunchKernel");
  } catch (...) {
  }
  return false;
}

bool CudaDriver::try_synchronize_stream(CUstream_st* stream, std::string* error) noexcept {
  CUresult result = api_->cuStreamSynchronize(stream);
  if (result == CUDA_SUCCESS) return true;
  try {
    *error = api_->failure(result, "cuStreamSynchronize");
  } catch (...) {
  }
  return false;
}

void CudaDriver::note_launch(int ordinal, const std::string* name) noexcept {
  if (ordinal >= 0 && ordinal < kMaxNamedDevices) {
    api_->last_kernel[ordinal].store(name, std::memory_order_relaxed);
  }
}

int CudaDriver::static_shared_bytes(CUfunc_st* function) {
  int bytes = 0;
  api_->check(api_->cuFuncGetAttribute(&bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function),
              "cuFuncGetAttribute(SHARED_SIZE_BYTES)");
  return bytes;
}

void CudaDriver::check_supports(int needed, const std::string& toolkit) const {
  const int have = version();
  if (have >= needed) return;
  auto text = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
  // The first driver branch of each CUDA major version (NVIDIA's compatibility table).
  const char* branch = needed >= 13000   ? " (R580 or newer)"
                       : needed >= 12000 ? " (R525 or newer)"
                                         : "";
  PRIMJIT_USER_ERROR() << "the NVIDIA driver supports CUDA " << text(have)
                       << " (driver API version " << have << "), but primjit compiles kernels with "
                       << toolkit << ", which needs driver API version " << needed
                       << " or newer: update the NVIDIA driver to one for CUDA " << text(needed)
                       << branch << ", or build primjit with a CUDA toolkit no newer than "
                       << text(have);
}

void CudaDriver::synchronize() {
  ensure_current();
  api_->check(api_->cuCtxSynchronize(), "cuCtxSynchronize");
}

}  // namespace primjit::jit
