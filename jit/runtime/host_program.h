// A lowered module's host code, compiled and linked into an OrcEngine; unloaded on destruction.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "jit/llvm/orc_engine.h"
#include "primjit/abi.h"
#include "primjit/ir/function.h"

namespace primjit::jit {

class HostProgram {
 public:
  /// Generates, optimizes and links the host functions of `lowered` (after MakePackedAPI).
  /// Symbols get a suffix unique in the process, so any number of variants can be loaded.
  HostProgram(OrcEngine& engine, const IRModule& lowered);
  ~HostProgram();
  HostProgram(const HostProgram&) = delete;
  HostProgram& operator=(const HostProgram&) = delete;

  /// The packed entry point of the module's function `name` (its IR name).
  PJPackedFunc function(const std::string& name) const;

 private:
  OrcEngine& engine_;
  OrcEngine::ModuleKey key_;
  std::map<std::string, PJPackedFunc> functions_;
};

}  // namespace primjit::jit
