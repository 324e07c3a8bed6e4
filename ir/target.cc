#include "primjit/ir/target.h"

#include "ir/node_key.h"
#include "primjit/error.h"

namespace primjit {

Target Target::make(std::string kind, std::string arch, Target host) {
  PRIMJIT_USER_CHECK(kind == "llvm" || kind == "cuda" || kind == "emu")
      << "unknown target kind \"" << kind << "\"; use \"llvm\", \"cuda\" or \"emu\"";
  if (kind == "cuda") {
    if (arch.empty()) arch = "sm_90";
    bool ok = arch.size() > 3 && arch.compare(0, 3, "sm_") == 0;
    for (size_t i = 3; ok && i < arch.size(); ++i) {
      ok = (arch[i] >= '0' && arch[i] <= '9') || (i + 1 == arch.size() && arch[i] == 'a');
    }
    PRIMJIT_USER_CHECK(ok) << "CUDA arch must look like \"sm_90\", got \"" << arch << "\"";
  } else {
    PRIMJIT_USER_CHECK(arch.empty()) << "target \"" << kind << "\" takes no arch";
  }
  if (host.defined()) {
    PRIMJIT_USER_CHECK(kind != "llvm") << "the llvm target is a host target and has no host";
    PRIMJIT_USER_CHECK(host->kind == "llvm")
        << "a target's host must be \"llvm\", got \"" << host->kind << "\"";
  }
  return Target(Ref<TargetNode>(
      new TargetNode(node_key(), std::move(kind), std::move(arch), std::move(host))));
}

Target Target::llvm() { return make("llvm"); }
Target Target::cuda(std::string arch, Target host) {
  return make("cuda", std::move(arch), std::move(host));
}
Target Target::emu(Target host) { return make("emu", "", std::move(host)); }

std::string Target::str() const {
  const TargetNode* t = get();
  std::string out = "T.target(\"" + t->kind + "\"";
  if (!t->arch.empty()) out += ", arch=\"" + t->arch + "\"";
  if (t->host.defined()) out += ", host=\"" + t->host->kind + "\"";
  return out + ")";
}

int TargetNode::arch_number() const {
  if (arch.size() <= 3) return 0;
  int value = 0;
  for (size_t i = 3; i < arch.size() && arch[i] >= '0' && arch[i] <= '9'; ++i) {
    value = value * 10 + (arch[i] - '0');
  }
  return value;
}

}  // namespace primjit
