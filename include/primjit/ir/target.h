// Compilation targets: where a function's code runs.
//   llvm  the host CPU, compiled by LLVM ORC
//   cuda  an NVIDIA GPU (arch "sm_XY"), with a host target for the code that launches kernels
//   emu   device kernels run by primjit's reference interpreter on the CPU
#pragma once

#include <string>

#include "primjit/ir/object.h"

namespace primjit {

class TargetNode;

class Target : public Ref<TargetNode> {
 public:
  Target() = default;
  explicit Target(Ref<TargetNode> ref) : Ref<TargetNode>(std::move(ref)) {}

  /// kind is "llvm", "cuda" or "emu"; arch only for cuda ("sm_90"); host only for cuda/emu.
  static Target make(std::string kind, std::string arch = "", Target host = Target());
  static Target llvm();
  static Target cuda(std::string arch = "sm_90", Target host = llvm());
  static Target emu(Target host = llvm());

  /// The short TVMScript form: T.target("cuda", arch="sm_90", host="llvm").
  std::string str() const;
};

class TargetNode : public Object {
 public:
  static constexpr NodeKind kKind = NodeKind::kTarget;
  TargetNode(NodeKey, std::string kind, std::string arch, Target host)
      : Object(kKind), kind(std::move(kind)), arch(std::move(arch)), host(std::move(host)) {}

  const std::string kind;
  const std::string arch;
  const Target host;

  bool is_device() const { return kind == "cuda" || kind == "emu"; }
  /// 90 for "sm_90"; 0 when there is no arch.
  int arch_number() const;
};

}  // namespace primjit
