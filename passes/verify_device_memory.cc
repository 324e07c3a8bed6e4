// VerifyDeviceMemory: rejects host code that touches device memory, and device code that
// touches host memory, in functions that have both (a device target with a host).
//
// Requires: nothing (it runs on the user's program, right after VerifyWellFormed).
// Ensures:  the module is returned unchanged. In a function whose "target" attribute is a cuda
//           target with a host (T.target("cuda", host="llvm")):
//           - device code is what runs under a thread launch (thread_extent), a device_scope
//             or a "target" AttrStmt for a device target; the rest of the body is host code
//             (a CPU region, `T.attr(T.target("llvm"), "target", 0)`, included), and so are
//             launch extents;
//           - the parameters' buffers (and every view of their data) live in device memory
//             (MakePackedAPI checks that the tensors' device is the target's): a load or store
//             of one in host code raises primjit::Error;
//           - buffers allocated in host code live in host memory (stack allocations of the
//             host code generator): a load or store of one in device code raises
//             primjit::Error;
//           - an address computation (an op of kind kPointer, e.g. T.address_of(A[i])) is not
//             an access; its indices are.
//           On a GPU the first reads a device address on the CPU (a segmentation fault), the
//           second a host address on the GPU (an illegal-address error that ends the CUDA
//           context). TVM's VerifyMemory checks the same. Functions without a target, with a
//           host-only target, with a cuda target without host (kernels), and emu functions are
//           not checked: emu is also the reference interpreter of every program, whose memory
//           is all host memory (primjit-crosscheck skips, with this error, the GPU functions
//           that cuda rejects).
// Example:
//   def main(A: T.Buffer((16,), "float32")):
//       T.func_attr({"target": T.target("cuda", host="llvm")})
//       A[0] = T.float32(1)          # error: host code writes buffer 'A' ... device memory
#include <string>
#include <unordered_map>

#include "passes/pass_list.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"
#include "primjit/ir/op.h"
#include "primjit/ir/text.h"

namespace primjit::passes {
namespace {

// One line of an access for messages (a store's first line, without its value's tail).
std::string quote(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > 100) line = line.substr(0, 97) + "...";
  return "`" + line + "`";
}

class DeviceMemoryChecker : public StmtExprVisitor {
 public:
  DeviceMemoryChecker(std::string function, Target target)
      : function_(std::move(function)), target_(std::move(target)) {}

  void check(const PrimFunc& func) {
    for (const auto& [param, buffer] : func->buffer_map) {
      (void)param;
      device_data_.emplace(buffer->data.get(), buffer->name);
    }
    visit_stmt(func->body);
  }

  void visit(const AttrStmt* op) override {
    const auto* target = op->node.as<TargetNode>();
    const bool enters_device =
        op->key == attr::kThreadExtent || op->key == attr::kDeviceScope ||
        (op->key == attr::kTarget && target != nullptr && target->is_device());
    if (!enters_device || on_device_) return StmtExprVisitor::visit(op);
    visit_expr(op->value);  // a launch extent: the host computes it
    on_device_ = true;
    visit_stmt(op->body);
    on_device_ = false;
  }

  void visit(const AllocBuffer* op) override {
    if (!on_device_) host_data_.emplace(op->buffer->data.get(), op->buffer->name);
    StmtExprVisitor::visit(op);
  }

  void visit(const BufferLoad* op) override {
    check_access(op->buffer, "reads", print(Expr(op)));
    StmtExprVisitor::visit(op);
  }

  void visit(const BufferStore* op) override {
    check_access(op->buffer, "writes", print(Stmt(op)));
    StmtExprVisitor::visit(op);
  }

  void visit(const Call* op) override {
    if (!op->op.defined() || op->op->op_kind != OpKind::kPointer) return StmtExprVisitor::visit(op);
    // An address, not an access: only the indices are evaluated.
    for (const Expr& arg : op->args) {
      if (const auto* load = arg.as<BufferLoad>()) {
        for (const Expr& index : load->indices) visit_expr(index);
      } else {
        visit_expr(arg);
      }
    }
  }

 private:
  void check_access(const Buffer& buffer, const char* verb, const std::string& access) {
    const std::string kind = target_->kind;
    if (!on_device_) {
      auto it = device_data_.find(buffer->data.get());
      if (it == device_data_.end()) return;
      PRIMJIT_USER_ERROR() << "function '" << function_ << "' (target " << kind << "): host code "
                           << verb << " buffer '" << buffer->name << "' in " << quote(access)
                           << ", but parameter buffer '" << it->second << "' lives in " << kind
                           << " device memory, which the CPU cannot access. Move the access "
                              "into a kernel (under T.launch_thread), or give the function a CPU "
                              "target (T.target(\"llvm\"))";
    }
    auto it = host_data_.find(buffer->data.get());
    if (it == host_data_.end()) return;
    PRIMJIT_USER_ERROR() << "function '" << function_ << "' (target " << kind << "): device code "
                         << verb << " buffer '" << buffer->name << "' in " << quote(access)
                         << ", but '" << it->second
                         << "' is allocated by host code, in host memory, which the device "
                            "cannot access. Allocate it inside the kernel (after its "
                            "T.launch_thread), or pass the data in a parameter buffer";
  }

  std::string function_;
  Target target_;
  bool on_device_ = false;
  std::unordered_map<const VarNode*, std::string> device_data_;  // data -> parameter buffer
  std::unordered_map<const VarNode*, std::string> host_data_;    // data -> host allocation
};

}  // namespace

Pass make_verify_device_memory_pass() {
  return Pass{"VerifyDeviceMemory",
              "reject host code touching device buffers and device code touching host buffers",
              [](const IRModule& module, const PassArgs& args) {
                check_no_args("VerifyDeviceMemory", args);
                for (const auto& [gvar, func] : module->functions) {
                  const Target target = func->target();
                  // Only cuda keeps device memory apart from the host's.
                  if (!target.defined() || target->kind != "cuda" || !target->host.defined()) {
                    continue;
                  }
                  DeviceMemoryChecker(gvar->name, target).check(func);
                }
                return module;
              }};
}

}  // namespace primjit::passes
