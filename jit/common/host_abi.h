// The ABI between generated host code and the runtime: the runtime functions host code calls
// (given to the JIT as absolute symbols) and how it launches kernels. The host code generator
// (jit/llvm) emits calls to these symbols, the CUDA backend (jit/cuda) implements kernel
// handles, and the runtime (jit/runtime) defines the functions; none of them includes another
// for it.
//
// Kernel handles travel in the packed calling convention's `self` argument (primjit/abi.h):
// `self` points at the module's kernel table, `KernelHandle* table[k]` with one slot per kernel
// the module's host code launches, in the order HostModule::launched_kernels lists them (the
// order in which host code generation first meets each launch). The runtime owns the table,
// fills it once the kernels are loaded and passes it as `self` on every call; a slot stays null
// until then. The generated code holds no global state: a packed function passes its `self` to
// the compute scopes and parallel tasks it runs (as a trailing parameter, or a trailing
// closure field) when they launch kernels, and to the packed functions of the module it calls.
//
// A launch `T.call_packed("k", args..., launch values...)` becomes
//
//   primjit_rt_launch(((void**)self)[slot of k], launch, args)
//
// where `launch` holds the kernel's launch values in the order of its
// "tirx.kernel_launch_params" (thread extents, then the dynamic shared memory size in bytes)
// as int64, and args[i] points at the value of kernel parameter i in its own type (pointers
// as pointers, int32 as int32, ...) — the layout cuLaunchKernel takes. No lookup, no allocation.
#pragma once

#include <cstdint>
#include <string>

#include "primjit/abi.h"

namespace primjit::jit {

/// Symbol names the host code generator emits calls to.
inline constexpr const char* kSetErrorSymbol = "primjit_rt_set_error";
inline constexpr const char* kParallelForSymbol = "primjit_rt_parallel_for";
inline constexpr const char* kLaunchSymbol = "primjit_rt_launch";
inline constexpr const char* kCheckArgsSymbol = "primjit_rt_check_args";

/// The body of a parallel loop: runs the iterations of the chunk [begin, end) in order; returns
/// 0, or -1 after setting the error.
using ParallelBody = int32_t (*)(int64_t begin, int64_t end, void* closure);

class KernelHandle {
 public:
  virtual ~KernelHandle() = default;
  /// Runs (or enqueues) the kernel; returns 0, or -1 after recording the error with
  /// set_last_error. Must not throw.
  virtual int32_t launch(const int64_t* launch, void** args) noexcept = 0;
};

/// Records the message of a failure on this thread (for runtime code that returns -1); the
/// failing call's call_packed takes it. Defined by the runtime.
void set_last_error(std::string message);

/// The launches of a call recorded instead of run (Kernel::prepare); defined by the CUDA
/// backend (jit/cuda/device_code.h).
struct LaunchRecording;

/// What the call running on this thread asks of the kernels its host code launches: the stream
/// (a CUstream; null: the default stream) and, while a call is being prepared, the recording
/// that takes the launches instead of the driver. The runtime sets it for the duration of each
/// call of a device variant (CallScope) and hands it to the threads of the call's parallel
/// loops; kernel handles read it at launch. A variant is shared by calls on any stream.
struct CallContext {
  void* stream = nullptr;
  LaunchRecording* recording = nullptr;
};
/// The calling thread's context (all null outside calls: packed functions called directly run
/// on the default stream).
extern thread_local CallContext t_call_context;

/// Sets this thread's call context for a scope, restoring the previous one after it.
class CallScope {
 public:
  explicit CallScope(CallContext context) noexcept : saved_(t_call_context) {
    t_call_context = context;
  }
  ~CallScope() { t_call_context = saved_; }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

 private:
  CallContext saved_;
};

}  // namespace primjit::jit

extern "C" {
/// Formats and records the message of a failed check on the calling thread.
void primjit_rt_set_error(const char* format, const PJValue* values, int32_t num_values);
/// Runs [begin, end) on oneTBB as chunks, calling body(chunk_begin, chunk_end, closure) once per
/// chunk; returns 0, or -1 with the first error any chunk reported (the rest of the loop is
/// cancelled).
int32_t primjit_rt_parallel_for(int64_t begin, int64_t end, primjit::jit::ParallelBody body,
                                void* closure);
/// Runs KernelHandle `handle`'s launch; a null handle (a slot of the kernel table that was
/// never filled) is an error, not a crash.
int32_t primjit_rt_launch(void* handle, const int64_t* launch, void** args);
/// T.check_args: checks a packed call's arguments against the table MakePackedAPI wrote
/// (primjit/arg_table.h); returns 0, or -1 after recording the first failed check's message.
/// Defined with the check itself, in jit/common/arg_check.cc.
int32_t primjit_rt_check_args(const PJValue* args, int32_t num_args, const char* signature,
                              const char* texts, const int64_t* table);
}
