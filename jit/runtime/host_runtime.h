// The runtime side of the host ABI (jit/common/host_abi.h): defining its functions in an ORC
// engine, and calling packed functions. Error reporting uses a thread-local last error; the
// parallel-for runs on oneTBB.
#pragma once

#include <cstdint>
#include <string>

#include "jit/common/host_abi.h"
#include "primjit/abi.h"

namespace primjit::jit {

class OrcEngine;

/// Defines the runtime symbols in `engine` (call it through OrcEngine::register_runtime_once).
void register_host_runtime(OrcEngine& engine);

/// Calls a packed function; a non-zero return becomes a primjit::Error with its message.
/// Returns the result value (type index kPJNone when the function returns nothing).
PJValue call_packed(PJPackedFunc func, const PJValue* args, int32_t num_args);

}  // namespace primjit::jit
