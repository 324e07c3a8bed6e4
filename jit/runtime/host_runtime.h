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

/// A packed entry point of compiled host code: the function and the `self` it is called with
/// (its module's kernel table, jit/common/host_abi.h; null when the module launches none).
struct HostEntry {
  PJPackedFunc fn = nullptr;
  void* self = nullptr;
};

/// Calls a packed entry point; a non-zero return becomes a primjit::Error with its message.
/// Returns the result value (type index kPJNone when the function returns nothing).
PJValue call_packed(const HostEntry& entry, const PJValue* args, int32_t num_args);

}  // namespace primjit::jit
