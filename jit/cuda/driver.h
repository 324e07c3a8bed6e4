// The CUDA driver, loaded at run time.
//
// primjit never links libcuda: `libcuda.so.1` is dlopen'ed on first use and every entry point
// is resolved through cuGetProcAddress with the ABI version its prototype was written for.
// Without a driver (or with the toolkit's stub library) loading fails with a primjit::Error
// that says "no CUDA driver"; nothing happens at library load time.
//
// The interface is free of CUDA headers; handles are the driver's opaque pointer types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;

namespace primjit::jit {

using DevicePtr = uint64_t;

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  int multiprocessors = 0;
  size_t max_shared_per_block_optin = 0;
  size_t l2_cache_bytes = 0;
  int arch() const { return cc_major * 10 + cc_minor; }
};

class CudaDriver {
 public:
  /// The process-wide driver, loaded on first use: libcuda.so.1, or the library the environment
  /// variable PRIMJIT_CUDA_DRIVER_LIBRARY names (read once; tests name a fake driver). Throws
  /// primjit::Error ("no CUDA driver: ...") when it cannot be loaded; the failure is remembered and
  /// reported the same way each time.
  static CudaDriver& get();
  /// Like get(), but returns nullptr (and the reason) instead of throwing.
  static CudaDriver* try_get(std::string* reason = nullptr);
  /// Loads the driver from a given library path or soname (tests use a missing or stub one).
  static std::unique_ptr<CudaDriver> load(const std::string& library);

  ~CudaDriver();
  CudaDriver(const CudaDriver&) = delete;
  CudaDriver& operator=(const CudaDriver&) = delete;

  /// Driver API version, e.g. 13000.
  int version() const;
  int device_count() const;
  DeviceInfo device_info(int ordinal) const;

  /// Retains device `ordinal`'s primary context (once) and makes it current on this thread.
  /// The calls below that need a context make device 0's current themselves on a thread that
  /// has none of this driver's yet.
  void make_current(int ordinal = 0);
  /// make_current() without exceptions for the launch path; nothing to do (and cheap) when the
  /// device's context is already this thread's current one.
  bool try_make_current(int ordinal, std::string* error) noexcept;

  DevicePtr alloc(size_t bytes);
  void free(DevicePtr pointer);
  void copy_to_device(DevicePtr destination, const void* source, size_t bytes);
  void copy_to_host(void* destination, DevicePtr source, size_t bytes);
  /// Stream-ordered device-to-device copy and byte fill (nullptr: the default stream).
  void copy_device_async(DevicePtr destination, DevicePtr source, size_t bytes,
                         CUstream_st* stream = nullptr);
  void fill_async(DevicePtr destination, unsigned char value, size_t bytes,
                  CUstream_st* stream = nullptr);

  /// Events for timing work on a stream. destroy_event ignores failures (used in cleanup).
  CUevent_st* create_event();
  void destroy_event(CUevent_st* event) noexcept;
  void record_event(CUevent_st* event, CUstream_st* stream = nullptr);
  void synchronize_event(CUevent_st* event);
  /// Milliseconds between two recorded, completed events.
  float elapsed_ms(CUevent_st* start, CUevent_st* end);
  void synchronize_stream(CUstream_st* stream);
  /// Whether `stream` is capturing a CUDA graph (the default stream: also while a blocking
  /// stream captures), when loading code, allocating or synchronizing would break the capture.
  bool is_capturing(CUstream_st* stream);
  /// Stream-ordered copies between host and device: the host buffer must stay valid (and, for
  /// copies to the host, unread) until the stream reaches the copy.
  void copy_to_device_async(DevicePtr destination, const void* source, size_t bytes,
                            CUstream_st* stream);
  void copy_to_host_async(void* destination, DevicePtr source, size_t bytes, CUstream_st* stream);

  /// Loads a CUBIN or NUL-terminated PTX image into the current context.
  CUmod_st* load_module(const std::string& image);
  void unload_module(CUmod_st* module);
  CUfunc_st* function(CUmod_st* module, const std::string& name);
  /// `args[i]` points at the value of kernel parameter i.
  void launch(CUfunc_st* function, Dim3 grid, Dim3 block, unsigned dynamic_shared_bytes,
              void** args, CUstream_st* stream = nullptr);
  /// Lets `function` use up to `bytes` of dynamic shared memory (needed above 48 KB).
  void set_max_dynamic_shared(CUfunc_st* function, int bytes);
  /// Bytes of static (__shared__) memory one block of `function` uses.
  int static_shared_bytes(CUfunc_st* function);
  /// launch() without exceptions, for the launch path of compiled code: false and the
  /// driver's error in `error` on failure.
  bool try_launch(CUfunc_st* function, Dim3 grid, Dim3 block, unsigned dynamic_shared_bytes,
                  void** args, CUstream_st* stream, std::string* error) noexcept;
  /// try_make_current(ordinal) then the launch, with one check of the current context (not
  /// one in each): the launch path of a loaded kernel, which runs on its module's device.
  bool try_launch_on(int ordinal, CUfunc_st* function, Dim3 grid, Dim3 block,
                     unsigned dynamic_shared_bytes, void** args, CUstream_st* stream,
                     std::string* error) noexcept;
  void synchronize();
  /// synchronize_stream() without exceptions, for the launch path (CUDA_LAUNCH_BLOCKING=1).
  bool try_synchronize_stream(CUstream_st* stream, std::string* error) noexcept;

  /// Records that kernel `*name` was launched last on device `ordinal`: an asynchronous fault
  /// that a later call reports (a copy, a synchronize) names it. `name` must outlive the
  /// process's use of the driver (kernel names are interned).
  void note_launch(int ordinal, const std::string* name) noexcept;
  /// The oldest driver API version the CUDA toolkit primjit compiles with needs (NVRTC's
  /// major * 1000 + minor * 10, e.g. 13000); throws primjit::Error naming both versions and the
  /// fix when this driver is older.
  void check_supports(int needed_version, const std::string& toolkit) const;

 private:
  struct Api;
  // Whether this thread's current context is still the one make_current set.
  bool still_current() const noexcept;
  // cuLaunchKernel in the current context, which the caller has made this driver's.
  bool launch_current(CUfunc_st* function, Dim3 grid, Dim3 block, unsigned dynamic_shared_bytes,
                      void** args, CUstream_st* stream, std::string* error) noexcept;
  void ensure_current();
  explicit CudaDriver(std::unique_ptr<Api> api);
  std::unique_ptr<Api> api_;
};

}  // namespace primjit::jit
