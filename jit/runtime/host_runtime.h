// The runtime functions compiled host code calls, given to the JIT as absolute symbols:
// error reporting (thread-local last error) and the parallel-for on oneTBB.
#pragma once

#include <cstdint>
#include <string>

#include "primjit/abi.h"

namespace primjit::jit {

class OrcEngine;

/// Symbol names the code generator emits calls to.
inline constexpr const char* kSetErrorSymbol = "primjit_rt_set_error";
inline constexpr const char* kParallelForSymbol = "primjit_rt_parallel_for";

/// The body of a parallel loop: runs iteration `i`; returns 0, or -1 after setting the error.
using ParallelBody = int32_t (*)(int64_t i, void* closure);

/// Defines the runtime symbols in `engine` (call it through OrcEngine::register_runtime_once).
void register_host_runtime(OrcEngine& engine);

/// Records the message of a failure on this thread (for runtime code that returns -1); the
/// failing call's call_packed takes it.
void set_last_error(std::string message);

/// Calls a packed function; a non-zero return becomes a primjit::Error with its message.
/// Returns the result value (type index kPJNone when the function returns nothing).
PJValue call_packed(PJPackedFunc func, const PJValue* args, int32_t num_args);

}  // namespace primjit::jit

extern "C" {
/// Formats and records the message of a failed check on the calling thread.
void primjit_rt_set_error(const char* format, const PJValue* values, int32_t num_values);
/// Runs body(i, closure) for i in [begin, end) on oneTBB; returns 0, or -1 with the first
/// error any iteration reported (the rest of the loop is cancelled).
int32_t primjit_rt_parallel_for(int64_t begin, int64_t end, primjit::jit::ParallelBody body,
                                void* closure);
}
