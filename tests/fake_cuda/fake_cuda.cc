// The fake CUDA driver (see fake_cuda.h): devices, contexts, modules, memory, and the table
// of entry points cuGetProcAddress_v2 hands out.
#include "tests/fake_cuda/fake_cuda.h"

#include <cstdlib>
#include <cstring>
#include <sstream>

#include "tests/fake_cuda/fake_state.h"

namespace fake_cuda {

thread_local Context* t_current = nullptr;

State& state() {
  static State* s = new State;  // never destroyed: calls may come during exit
  return *s;
}

bool is_legacy(CUstream stream) { return stream == nullptr || stream == CU_STREAM_LEGACY; }

std::string stream_name(CUstream stream) {
  if (is_legacy(stream)) return "0";
  if (stream == CU_STREAM_PER_THREAD) return "per-thread";
  return std::to_string(reinterpret_cast<Stream*>(stream)->id);
}

bool valid_stream(State& s, CUstream stream) {
  return is_legacy(stream) || stream == CU_STREAM_PER_THREAD ||
         s.streams.count(reinterpret_cast<Stream*>(stream)) != 0;
}

bool any_capture(State& s) {
  for (Stream* stream : s.streams) {
    if (stream->capturing) return true;
  }
  return false;
}

void invalidate_captures(State& s) {
  for (Stream* stream : s.streams) {
    if (stream->capturing) stream->invalidated = true;
  }
}

CUresult unsafe_during_capture(State& s) {
  if (!any_capture(s)) return CUDA_SUCCESS;
  invalidate_captures(s);
  return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

CUresult synchronizing(State& s) {
  if (CUresult r = unsafe_during_capture(s); r != CUDA_SUCCESS) return r;
  if (s.settings.fault_next_sync) {
    s.settings.fault_next_sync = false;
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  }
  return CUDA_SUCCESS;
}

void write_log(State& s, std::string line) { s.log.push_back(std::move(line)); }

CUresult submit(State& s, CUstream stream, Work work) {
  if (!valid_stream(s, stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (is_legacy(stream) && any_capture(s)) {
    invalidate_captures(s);
    return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  }
  if (!is_legacy(stream) && stream != CU_STREAM_PER_THREAD) {
    Stream* st = reinterpret_cast<Stream*>(stream);
    if (st->capturing) {
      st->graph->nodes.push_back(std::move(work));
      return CUDA_SUCCESS;
    }
  }
  write_log(s, work.line(stream_name(stream)));
  if (work.launch) ++s.launches;
  if (work.action) work.action();
  return CUDA_SUCCESS;
}

namespace {

long env_long(const char* name, long fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != 0 ? std::strtol(value, nullptr, 10) : fallback;
}

std::string hex(uintptr_t value) {
  std::ostringstream out;
  out << "0x" << std::hex << value;
  return out.str();
}

// The allocation holding [pointer, pointer + bytes), or nullptr.
const Allocation* find_memory(State& s, uintptr_t pointer, size_t bytes) {
  auto it = s.allocations.upper_bound(pointer);
  if (it == s.allocations.begin()) return nullptr;
  --it;
  if (pointer + bytes > it->first + it->second.bytes) return nullptr;
  return &it->second;
}

std::string ctx_name() { return t_current != nullptr ? std::to_string(t_current->device) : "-"; }

// ---- errors, init, version, devices ---------------------------------------------------------

const std::map<CUresult, std::pair<const char*, const char*>>& error_table() {
  static const std::map<CUresult, std::pair<const char*, const char*>> table = {
      {CUDA_SUCCESS, {"CUDA_SUCCESS", "no error"}},
      {CUDA_ERROR_INVALID_VALUE, {"CUDA_ERROR_INVALID_VALUE", "invalid argument"}},
      {CUDA_ERROR_OUT_OF_MEMORY, {"CUDA_ERROR_OUT_OF_MEMORY", "out of memory"}},
      {CUDA_ERROR_NOT_INITIALIZED, {"CUDA_ERROR_NOT_INITIALIZED", "initialization error"}},
      {CUDA_ERROR_INVALID_DEVICE, {"CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"}},
      {CUDA_ERROR_INVALID_IMAGE, {"CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"}},
      {CUDA_ERROR_INVALID_CONTEXT, {"CUDA_ERROR_INVALID_CONTEXT", "invalid device context"}},
      {CUDA_ERROR_NO_BINARY_FOR_GPU,
       {"CUDA_ERROR_NO_BINARY_FOR_GPU",
        "no kernel image is available for execution on the device"}},
      {CUDA_ERROR_INVALID_HANDLE, {"CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"}},
      {CUDA_ERROR_NOT_FOUND, {"CUDA_ERROR_NOT_FOUND", "named symbol not found"}},
      {CUDA_ERROR_ILLEGAL_ADDRESS,
       {"CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"}},
      {CUDA_ERROR_LAUNCH_FAILED, {"CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"}},
      {CUDA_ERROR_ILLEGAL_STATE, {"CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed"}},
      {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
       {"CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
        "operation not permitted when stream is capturing"}},
      {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
       {"CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
        "operation failed due to a previous error during capture"}},
      {CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
       {"CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
        "operation would make the legacy stream depend on a capturing blocking stream"}},
  };
  return table;
}

CUresult get_error_name(CUresult error, const char** text) {
  auto it = error_table().find(error);
  *text = it == error_table().end() ? nullptr : it->second.first;
  return it == error_table().end() ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult get_error_string(CUresult error, const char** text) {
  auto it = error_table().find(error);
  *text = it == error_table().end() ? nullptr : it->second.second;
  return it == error_table().end() ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult init(unsigned) {
  State& s = state();
  Lock lock(s.mutex);
  if (s.initialized) return CUDA_SUCCESS;
  if (const char* devices = std::getenv("FAKE_CUDA_DEVICES"); devices != nullptr && *devices) {
    s.archs.clear();
    std::stringstream in(devices);
    for (std::string item; std::getline(in, item, ',');) s.archs.push_back(std::stoi(item));
  }
  s.environment.driver_version = env_long("FAKE_CUDA_DRIVER_VERSION", CUDA_VERSION);
  s.environment.shared_optin = env_long("FAKE_CUDA_SHARED_OPTIN", 232448);
  s.environment.fault_next_sync = env_long("FAKE_CUDA_FAULT_NEXT_SYNC", 0) != 0;
  s.settings = s.environment;
  for (size_t i = 0; i < s.archs.size(); ++i) {
    s.contexts.push_back(std::make_unique<Context>(Context{static_cast<int>(i)}));
    s.retained.push_back(0);
  }
  s.initialized = true;
  return CUDA_SUCCESS;
}

CUresult driver_get_version(int* version) {
  State& s = state();
  Lock lock(s.mutex);
  *version = static_cast<int>(s.initialized ? s.settings.driver_version
                                            : env_long("FAKE_CUDA_DRIVER_VERSION", CUDA_VERSION));
  return CUDA_SUCCESS;
}

CUresult device_get_count(int* count) {
  FAKE_LOCK();
  *count = static_cast<int>(s.archs.size());
  return CUDA_SUCCESS;
}

CUresult device_get(CUdevice* device, int ordinal) {
  FAKE_LOCK();
  if (ordinal < 0 || ordinal >= static_cast<int>(s.archs.size())) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult device_get_name(char* name, int length, CUdevice device) {
  FAKE_LOCK();
  if (device < 0 || device >= static_cast<int>(s.archs.size())) return CUDA_ERROR_INVALID_DEVICE;
  std::string text = "primjit fake CUDA device sm_" + std::to_string(s.archs[device]);
  std::snprintf(name, static_cast<size_t>(length), "%s", text.c_str());
  return CUDA_SUCCESS;
}

CUresult device_get_attribute(int* value, CUdevice_attribute attribute, CUdevice device) {
  FAKE_LOCK();
  if (device < 0 || device >= static_cast<int>(s.archs.size())) return CUDA_ERROR_INVALID_DEVICE;
  const int arch = s.archs[device];
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *value = arch / 10;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *value = arch % 10;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *value = 132;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      *value = static_cast<int>(s.settings.shared_optin);
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
      *value = 48 * 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
      *value = 50 * 1024 * 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *value = 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      *value = 32;
      break;
    default:
      *value = 0;
  }
  return CUDA_SUCCESS;
}

// ---- contexts ---------------------------------------------------------------------------------

CUresult primary_ctx_retain(CUcontext* context, CUdevice device) {
  FAKE_LOCK();
  if (device < 0 || device >= static_cast<int>(s.archs.size())) return CUDA_ERROR_INVALID_DEVICE;
  ++s.retained[device];
  *context = reinterpret_cast<CUcontext>(s.contexts[device].get());
  return CUDA_SUCCESS;
}

CUresult primary_ctx_release(CUdevice device) {
  FAKE_LOCK();
  if (device < 0 || device >= static_cast<int>(s.archs.size())) return CUDA_ERROR_INVALID_DEVICE;
  if (s.retained[device] == 0) return CUDA_ERROR_INVALID_CONTEXT;
  --s.retained[device];
  return CUDA_SUCCESS;
}

bool valid_context(State& s, CUcontext context) {
  for (const auto& c : s.contexts) {
    if (reinterpret_cast<CUcontext>(c.get()) == context) return true;
  }
  return false;
}

CUresult ctx_set_current(CUcontext context) {
  FAKE_LOCK();
  if (context != nullptr && !valid_context(s, context)) return CUDA_ERROR_INVALID_CONTEXT;
  t_current = reinterpret_cast<Context*>(context);
  return CUDA_SUCCESS;
}

CUresult ctx_get_current(CUcontext* context) {
  FAKE_LOCK();
  ++s.context_queries;
  *context = reinterpret_cast<CUcontext>(t_current);
  return CUDA_SUCCESS;
}

CUresult ctx_get_device(CUdevice* device) {
  FAKE_LOCK();
  FAKE_NEED_CONTEXT();
  *device = t_current->device;
  return CUDA_SUCCESS;
}

CUresult ctx_get_device_v13(CUdevice* device, CUcontext context) {
  if (context == nullptr) return ctx_get_device(device);
  FAKE_LOCK();
  if (!valid_context(s, context)) return CUDA_ERROR_INVALID_CONTEXT;
  *device = reinterpret_cast<Context*>(context)->device;
  return CUDA_SUCCESS;
}

CUresult ctx_synchronize_in(Context* context) {
  FAKE_LOCK();
  if (context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  write_log(s, "ctxSynchronize ctx=" + std::to_string(context->device));
  return synchronizing(s);
}

CUresult ctx_synchronize() { return ctx_synchronize_in(t_current); }
CUresult ctx_synchronize_v13(CUcontext context) {
  return ctx_synchronize_in(context != nullptr ? reinterpret_cast<Context*>(context) : t_current);
}

// ---- modules and functions --------------------------------------------------------------------

bool runs_on(const Image& image, int device_arch) {
  if (image.cubin) return image.arch / 10 == device_arch / 10 && image.arch <= device_arch;
  return image.arch <= device_arch;  // PTX is compiled forward by the driver
}

CUresult module_load_data(CUmodule* module, const void* data) {
  FAKE_LOCK();
  FAKE_NEED_CONTEXT();
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto m = std::make_unique<Module>();
  m->context = t_current;
  if (!parse_image(data, &m->image)) return CUDA_ERROR_INVALID_IMAGE;
  if (!runs_on(m->image, s.archs[t_current->device])) return CUDA_ERROR_NO_BINARY_FOR_GPU;
  write_log(s, "moduleLoad ctx=" + ctx_name() + " kind=" + (m->image.cubin ? "cubin" : "ptx") +
                   " arch=" + std::to_string(m->image.arch));
  *module = reinterpret_cast<CUmodule>(m.get());
  s.modules.insert(m.release());
  return CUDA_SUCCESS;
}

CUresult module_unload(CUmodule module) {
  FAKE_LOCK();
  Module* m = reinterpret_cast<Module*>(module);
  if (s.modules.erase(m) == 0) return CUDA_ERROR_INVALID_HANDLE;
  write_log(s, "moduleUnload ctx=" + std::to_string(m->context->device));
  delete m;
  return CUDA_SUCCESS;
}

CUresult module_get_function(CUfunction* function, CUmodule module, const char* name) {
  FAKE_LOCK();
  Module* m = reinterpret_cast<Module*>(module);
  if (s.modules.count(m) == 0) return CUDA_ERROR_INVALID_HANDLE;
  auto it = m->functions.find(name);
  if (it == m->functions.end()) {
    bool present = false;
    for (const std::string& entry : m->image.entries) present |= entry == name;
    if (!present) return CUDA_ERROR_NOT_FOUND;
    auto f = std::make_unique<Function>();
    f->module = m;
    f->name = name;
    f->static_shared = static_shared_bytes(m->image, name);
    f->max_dynamic_shared = std::max<int64_t>(48 * 1024 - f->static_shared, 0);
    it = m->functions.emplace(name, std::move(f)).first;
  }
  *function = reinterpret_cast<CUfunction>(it->second.get());
  return CUDA_SUCCESS;
}

Function* find_function(State& s, CUfunction function) {
  Function* f = reinterpret_cast<Function*>(function);
  if (f == nullptr || s.modules.count(f->module) == 0) return nullptr;
  return f;
}

// A function's static shared memory: the test's override for its name, else the image's.
int64_t static_shared(State& s, const Function& f) {
  auto it = s.settings.static_shared.find(f.name);
  return it != s.settings.static_shared.end() ? it->second : f.static_shared;
}

CUresult func_get_attribute(int* value, CUfunction_attribute attribute, CUfunction function) {
  FAKE_LOCK();
  Function* f = find_function(s, function);
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  switch (attribute) {
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
      *value = static_cast<int>(static_shared(s, *f));
      break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      *value = static_cast<int>(
          std::min<int64_t>(f->max_dynamic_shared, s.settings.shared_optin - static_shared(s, *f)));
      break;
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *value = 1024;
      break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
      *value = 32;
      break;
    default:
      *value = 0;
  }
  return CUDA_SUCCESS;
}

CUresult func_set_attribute(CUfunction function, CUfunction_attribute attribute, int value) {
  FAKE_LOCK();
  Function* f = find_function(s, function);
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (attribute != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) return CUDA_SUCCESS;
  write_log(s, "funcSetAttribute fn=" + f->name + " maxDynamicShared=" + std::to_string(value));
  if (value < 0 || static_shared(s, *f) + value > s.settings.shared_optin) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  f->max_dynamic_shared = value;
  return CUDA_SUCCESS;
}

CUresult launch_kernel(CUfunction function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                       unsigned by, unsigned bz, unsigned shared, CUstream stream, void**, void**) {
  FAKE_LOCK();
  FAKE_NEED_CONTEXT();
  Function* f = find_function(s, function);
  if (f == nullptr || f->module->context != t_current) return CUDA_ERROR_INVALID_HANDLE;
  if (!valid_stream(s, stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (!is_legacy(stream) && stream != CU_STREAM_PER_THREAD &&
      reinterpret_cast<Stream*>(stream)->context != t_current) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 ||
      uint64_t{bx} * by * bz > 1024) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const int64_t fixed = static_shared(s, *f);
  if (shared > f->max_dynamic_shared || fixed + shared > s.settings.shared_optin) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (s.settings.fault_next_launch) {
    s.settings.fault_next_launch = false;
    return CUDA_ERROR_LAUNCH_FAILED;
  }
  std::ostringstream text;
  text << "fn=" << f->name << " ctx=" << t_current->device;
  std::string fn_ctx = text.str();
  text.str("");
  text << " grid=" << gx << "," << gy << "," << gz << " block=" << bx << "," << by << "," << bz
       << " shared=" << shared << " static=" << fixed;
  std::string rest = text.str();
  Work work;
  work.launch = true;
  work.line = [fn_ctx, rest](const std::string& st) {
    return "launch " + fn_ctx + " stream=" + st + rest;
  };
  return submit(s, stream, std::move(work));
}

// ---- memory -----------------------------------------------------------------------------------

CUresult mem_alloc(CUdeviceptr* pointer, size_t bytes) {
  FAKE_LOCK();
  FAKE_NEED_CONTEXT();
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = unsafe_during_capture(s); r != CUDA_SUCCESS) return r;
  void* memory = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (memory == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  *pointer = reinterpret_cast<CUdeviceptr>(memory);
  s.allocations[*pointer] = {bytes, t_current->device};
  return CUDA_SUCCESS;
}

CUresult mem_free(CUdeviceptr pointer) {
  FAKE_LOCK();
  if (CUresult r = unsafe_during_capture(s); r != CUDA_SUCCESS) return r;
  auto it = s.allocations.find(pointer);
  if (it == s.allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  std::free(reinterpret_cast<void*>(pointer));
  s.allocations.erase(it);
  return CUDA_SUCCESS;
}

// A copy or fill on `stream`; `synchronous` ones (cuMemcpyHtoD ...) also synchronize.
CUresult memory_work(State& s, const std::string& what, CUstream stream, bool synchronous,
                     std::function<void()> action) {
  FAKE_NEED_CONTEXT();
  if (synchronous) {
    if (CUresult r = unsafe_during_capture(s); r != CUDA_SUCCESS) return r;
  }
  Work work;
  std::string ctx = ctx_name();
  work.line = [what, ctx](const std::string& st) {
    const size_t space = what.find(' ');
    return what.substr(0, space) + " ctx=" + ctx + " stream=" + st + what.substr(space);
  };
  work.action = std::move(action);
  if (CUresult r = submit(s, stream, std::move(work)); r != CUDA_SUCCESS) return r;
  return synchronous ? synchronizing(s) : CUDA_SUCCESS;
}

CUresult copy(CUdeviceptr device, void* host, size_t bytes, bool to_device, CUstream stream,
              bool synchronous) {
  FAKE_LOCK();
  if (bytes > 0 && find_memory(s, device, bytes) == nullptr) return CUDA_ERROR_INVALID_VALUE;
  void* memory = reinterpret_cast<void*>(device);
  return memory_work(
      s, std::string(to_device ? "memcpyHtoD" : "memcpyDtoH") + " bytes=" + std::to_string(bytes),
      stream, synchronous, [=] {
        if (to_device)
          std::memcpy(memory, host, bytes);
        else
          std::memcpy(host, memory, bytes);
      });
}

CUresult memcpy_htod(CUdeviceptr d, const void* h, size_t n) {
  return copy(d, const_cast<void*>(h), n, true, nullptr, true);
}
CUresult memcpy_dtoh(void* h, CUdeviceptr d, size_t n) {
  return copy(d, h, n, false, nullptr, true);
}
CUresult memcpy_htod_async(CUdeviceptr d, const void* h, size_t n, CUstream st) {
  return copy(d, const_cast<void*>(h), n, true, st, false);
}
CUresult memcpy_dtoh_async(void* h, CUdeviceptr d, size_t n, CUstream st) {
  return copy(d, h, n, false, st, false);
}

CUresult dtod(CUdeviceptr to, CUdeviceptr from, size_t n, CUstream stream, bool synchronous) {
  FAKE_LOCK();
  if (n > 0 && (find_memory(s, to, n) == nullptr || find_memory(s, from, n) == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return memory_work(s, "memcpyDtoD bytes=" + std::to_string(n), stream, synchronous, [=] {
    std::memmove(reinterpret_cast<void*>(to), reinterpret_cast<void*>(from), n);
  });
}
CUresult memcpy_dtod(CUdeviceptr to, CUdeviceptr from, size_t n) {
  return dtod(to, from, n, nullptr, true);
}
CUresult memcpy_dtod_async(CUdeviceptr to, CUdeviceptr from, size_t n, CUstream st) {
  return dtod(to, from, n, st, false);
}

CUresult memset_d8_on(CUdeviceptr to, unsigned char value, size_t n, CUstream stream,
                      bool synchronous) {
  FAKE_LOCK();
  if (n > 0 && find_memory(s, to, n) == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return memory_work(
      s,
      "memsetD8 ptr=" + hex(to) + " value=" + std::to_string(value) + " bytes=" + std::to_string(n),
      stream, synchronous, [=] { std::memset(reinterpret_cast<void*>(to), value, n); });
}
CUresult memset_d8(CUdeviceptr to, unsigned char value, size_t n) {
  return memset_d8_on(to, value, n, nullptr, true);
}
CUresult memset_d8_async(CUdeviceptr to, unsigned char value, size_t n, CUstream st) {
  return memset_d8_on(to, value, n, st, false);
}

CUresult pointer_get_attribute(void* data, CUpointer_attribute attribute, CUdeviceptr pointer) {
  FAKE_LOCK();
  const Allocation* a = find_memory(s, pointer, 1);
  if (a == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (attribute != CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) return CUDA_ERROR_INVALID_VALUE;
  *static_cast<int*>(data) = a->device;
  return CUDA_SUCCESS;
}

// ---- the table cuGetProcAddress serves --------------------------------------------------------

const std::vector<Entry>& entry_table() {
  static const std::vector<Entry> table = [] {
    std::vector<Entry> entries = {
        {"cuGetErrorName", 6000, as_pointer(get_error_name)},
        {"cuGetErrorString", 6000, as_pointer(get_error_string)},
        {"cuInit", 2000, as_pointer(init)},
        {"cuDriverGetVersion", 2020, as_pointer(driver_get_version)},
        {"cuDeviceGetCount", 2000, as_pointer(device_get_count)},
        {"cuDeviceGet", 2000, as_pointer(device_get)},
        {"cuDeviceGetName", 2000, as_pointer(device_get_name)},
        {"cuDeviceGetAttribute", 2000, as_pointer(device_get_attribute)},
        {"cuDevicePrimaryCtxRetain", 7000, as_pointer(primary_ctx_retain)},
        {"cuDevicePrimaryCtxRelease", 7000, as_pointer(primary_ctx_release)},
        {"cuCtxSetCurrent", 4000, as_pointer(ctx_set_current)},
        {"cuCtxGetCurrent", 4000, as_pointer(ctx_get_current)},
        {"cuCtxGetDevice", 2000, as_pointer(ctx_get_device)},
        {"cuCtxGetDevice", 13000, as_pointer(ctx_get_device_v13)},
        {"cuCtxSynchronize", 2000, as_pointer(ctx_synchronize)},
        {"cuCtxSynchronize", 13000, as_pointer(ctx_synchronize_v13)},
        {"cuModuleLoadData", 2000, as_pointer(module_load_data)},
        {"cuModuleUnload", 2000, as_pointer(module_unload)},
        {"cuModuleGetFunction", 2000, as_pointer(module_get_function)},
        {"cuFuncGetAttribute", 2020, as_pointer(func_get_attribute)},
        {"cuFuncSetAttribute", 9000, as_pointer(func_set_attribute)},
        {"cuLaunchKernel", 4000, as_pointer(launch_kernel)},
        {"cuMemAlloc", 3020, as_pointer(mem_alloc)},
        {"cuMemFree", 3020, as_pointer(mem_free)},
        {"cuMemcpyHtoD", 3020, as_pointer(memcpy_htod)},
        {"cuMemcpyDtoH", 3020, as_pointer(memcpy_dtoh)},
        {"cuMemcpyDtoD", 3020, as_pointer(memcpy_dtod)},
        {"cuMemcpyHtoDAsync", 3020, as_pointer(memcpy_htod_async)},
        {"cuMemcpyDtoHAsync", 3020, as_pointer(memcpy_dtoh_async)},
        {"cuMemcpyDtoDAsync", 3020, as_pointer(memcpy_dtod_async)},
        {"cuMemsetD8", 3020, as_pointer(memset_d8)},
        {"cuMemsetD8Async", 3020, as_pointer(memset_d8_async)},
        {"cuPointerGetAttribute", 4000, as_pointer(pointer_get_attribute)},
    };
    for (const Entry& entry : stream_entries()) entries.push_back(entry);
    return entries;
  }();
  return table;
}

}  // namespace
}  // namespace fake_cuda

using fake_cuda::state;

extern "C" {

// The one symbol primjit looks up by name: every entry point comes from here.
__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(
    const char* symbol, void** pfn, int cuda_version, cuuint64_t,
    CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // The newest prototype whose ABI version is not above the one asked for.
  const fake_cuda::Entry* best = nullptr;
  bool named = false;
  for (const fake_cuda::Entry& entry : fake_cuda::entry_table()) {
    if (std::strcmp(entry.name, symbol) != 0) continue;
    named = true;
    if (entry.version <= cuda_version && (best == nullptr || entry.version > best->version)) {
      best = &entry;
    }
  }
  *pfn = best != nullptr ? best->function : nullptr;
  if (status != nullptr) {
    *status = best != nullptr ? CU_GET_PROC_ADDRESS_SUCCESS
              : named         ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                              : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  }
  return best != nullptr ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

__attribute__((visibility("default"))) const char* fake_cuda_log(void) {
  fake_cuda::State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.log_text.clear();
  for (const std::string& line : s.log) s.log_text += line + "\n";
  return s.log_text.c_str();
}

__attribute__((visibility("default"))) void fake_cuda_reset(void) {
  fake_cuda::State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.log.clear();
  s.launches = 0;
  s.context_queries = 0;
  s.settings = s.environment;
}

__attribute__((visibility("default"))) int fake_cuda_set(const char* key, long value) {
  fake_cuda::State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const std::string k = key != nullptr ? key : "";
  const std::string kStatic = "static_shared:";
  if (k == "driver_version") {
    s.settings.driver_version = value;
  } else if (k == "shared_optin") {
    s.settings.shared_optin = value;
  } else if (k == "fault_next_sync") {
    s.settings.fault_next_sync = value != 0;
  } else if (k == "fault_next_launch") {
    s.settings.fault_next_launch = value != 0;
  } else if (k.rfind(kStatic, 0) == 0 && k.size() > kStatic.size()) {
    s.settings.static_shared[k.substr(kStatic.size())] = value;
  } else {
    return -1;
  }
  return 0;
}

__attribute__((visibility("default"))) long fake_cuda_get(const char* key) {
  fake_cuda::State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const std::string k = key != nullptr ? key : "";
  if (k == "modules") return static_cast<long>(s.modules.size());
  if (k == "allocations") return static_cast<long>(s.allocations.size());
  if (k == "launches") return s.launches;
  if (k == "context_queries") return s.context_queries;
  if (k == "streams") return static_cast<long>(s.streams.size());
  if (k == "contexts") {
    long count = 0;
    for (int r : s.retained) count += r > 0;
    return count;
  }
  return -1;
}

}  // extern "C"
