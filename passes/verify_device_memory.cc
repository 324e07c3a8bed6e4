// VerifyDeviceMemory: rejects host code that touches device memory, and device code that
// touches host memory, in functions that have both (a device target with a host).
//
// Requires: nothing (it runs on the user's program, right after VerifyWellFormed).
// Ensures:  the module is returned unchanged. In a function whose "target" attribute is a cuda
//           target with a host (T.target("cuda", host="llvm")):
//           - device code is what runs under a thread launch (thread_extent, a thread-bound
//             loop), a device_scope or a "target" AttrStmt for the function's device target;
//             the rest of the body is host code
//             (a CPU region, `T.attr(T.target("llvm"), "target", 0)`, included), and so are
//             launch extents;
//           - the parameters' buffers (and every view of their data) live in device memory
//             (MakePackedAPI checks that the tensors' device is the target's): a load or store
//             of one in host code raises primjit::Error;
//           - buffers allocated in host code live in host memory (stack allocations of the
//             host code generator): a load or store of one in device code raises
//             primjit::Error;
//           - what LowerDeviceKernelLaunch has the host compute is host code too: every
//             thread extent, also of launches nested in a region, and the size of a
//             shared.dyn allocation, with the region's Binds they use substituted;
//           - a pointer Bound from a tracked pointer (`p = A.data`, `T.address_of(A[4])`) is
//             tracked as its source, and so are the views declared on it;
//           - host code may pass a device pointer to a cuda kernel (a module call whose
//             callee's target is cuda), not to another module function (a CPU helper would
//             dereference it); nor host memory to a kernel;
//           - a region of another target (a CPU or emu region in a cuda function) runs on the
//             CPU: host code, launches inside it included;
//           - an address computation (an op of kind kPointer, e.g. T.address_of(A[i])) is not
//             an access; its indices are. An extern function that dereferences a device
//             pointer it is given cannot be seen here.
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
#include <functional>
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
  DeviceMemoryChecker(const IRModule& module, std::string function, Target target)
      : module_(module), function_(std::move(function)), target_(std::move(target)) {}

  void check(const PrimFunc& func) {
    for (const auto& [param, buffer] : func->buffer_map) {
      (void)param;
      device_data_.emplace(buffer->data.get(), buffer->name);
    }
    visit_stmt(func->body);
  }

  void visit(const AttrStmt* op) override {
    const auto* target = op->node.as<TargetNode>();
    if (op->key == attr::kTarget && target != nullptr && target->kind != target_->kind &&
        !on_device_) {
      // A region of another target (a CPU or emu region) runs on the CPU, launches included.
      const bool was = in_cpu_region_;
      in_cpu_region_ = true;
      StmtExprVisitor::visit(op);
      in_cpu_region_ = was;
      return;
    }
    const bool launch = op->key == attr::kThreadExtent;
    const bool enters_device =
        !in_cpu_region_ &&
        (launch || op->key == attr::kDeviceScope ||
         (op->key == attr::kTarget && target != nullptr && target->kind == target_->kind));
    if (on_device_ && launch) {
      // A nested launch's extent: LowerDeviceKernelLaunch has the host compute it.
      on_host(substitute(op->value, device_binds_));
      return visit_stmt(op->body);
    }
    if (!enters_device || on_device_) return StmtExprVisitor::visit(op);
    visit_expr(op->value);  // a launch extent: the host computes it
    on_device_ = true;
    visit_stmt(op->body);
    on_device_ = false;
    device_binds_.clear();
  }

  // A thread-bound loop is device code (its own pass reports whether the target supports it);
  // its bounds are the host's.
  void visit(const For* op) override {
    if (op->for_kind != ForKind::kThreadBinding || on_device_ || in_cpu_region_) {
      return StmtExprVisitor::visit(op);
    }
    visit_expr(op->min);
    visit_expr(op->extent);
    on_device_ = true;
    visit_stmt(op->body);
    on_device_ = false;
    device_binds_.clear();
  }

  void visit(const Bind* op) override {
    StmtExprVisitor::visit(op);
    // Substituted as LowerDeviceKernelLaunch does: a Bind may use the region's earlier ones.
    if (on_device_) device_binds_[op->var.get()] = substitute(op->value, device_binds_);
    if (!op->value.dtype().is_handle()) return;
    // A pointer computed from a tracked one points into the same memory.
    for_each_pointer(op->value, [&](const VarNode* v) {
      if (auto it = device_data_.find(v); it != device_data_.end()) {
        device_data_.emplace(op->var.get(), it->second);
      } else if (auto h = host_data_.find(v); h != host_data_.end()) {
        host_data_.emplace(op->var.get(), h->second);
      }
    });
  }

  void visit(const AllocBuffer* op) override {
    if (!on_device_) {
      host_data_.emplace(op->buffer->data.get(), op->buffer->name);
    } else if (op->buffer->scope() == "shared.dyn") {
      // Its size is a launch parameter, which the host computes.
      for (const Expr& dim : op->buffer->shape) on_host(substitute(dim, device_binds_));
    }
    StmtExprVisitor::visit(op);
  }

  void visit(const BufferLoad* op) override {
    check_access(op->buffer, "reads", [op] { return print(Expr(op)); });
    StmtExprVisitor::visit(op);
  }

  void visit(const BufferStore* op) override {
    check_access(op->buffer, "writes", [op] { return print(Stmt(op)); });
    StmtExprVisitor::visit(op);
  }

  void visit(const Call* op) override {
    if (op->callee.defined() && !on_device_) check_module_call(op);
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
  // Checks `e` as host code wherever it appears.
  void on_host(const Expr& e) {
    const bool was = on_device_;
    on_device_ = false;
    visit_expr(e);
    on_device_ = was;
  }

  // The pointer variables `e` refers to: its variables, and the data of the buffers whose
  // elements it takes the address of (T.address_of(A[4]) points into A).
  template <typename F>
  static void for_each_pointer(const Expr& e, const F& f) {
    post_order_visit(e, [&](const Ref<Object>& node) {
      if (const auto* v = node.as<VarNode>()) return f(v);
      const auto* call = node.as<Call>();
      if (call == nullptr || !call->op.defined() || call->op->op_kind != OpKind::kPointer) return;
      for (const Expr& arg : call->args) {
        if (const auto* load = arg.as<BufferLoad>()) f(load->buffer->data.get());
      }
    });
  }

  // A device pointer may go to a kernel, not to a function that runs on the CPU; a kernel may
  // not be given host memory.
  void check_module_call(const Call* op) {
    const PrimFunc callee = module_->find(op->callee->name);
    if (!callee.defined()) return;  // VerifyWellFormed's to report
    const Target t = callee->target();
    const bool kernel = t.defined() && t->kind == target_->kind;
    for (const Expr& arg : op->args) {
      for_each_pointer(arg, [&](const VarNode* v) {
        if (kernel) {
          auto h = host_data_.find(v);
          if (h == host_data_.end()) return;
          PRIMJIT_USER_ERROR() << "function '" << function_ << "' (target " << target_->kind
                               << "): host code passes '" << h->second
                               << "', allocated by host code in host memory, to kernel '"
                               << op->callee->name << "', which runs on the device, in "
                               << quote(print(Expr(op)))
                               << ". Allocate it in the kernel, or pass a parameter buffer";
        }
        auto it = device_data_.find(v);
        if (it == device_data_.end()) return;
        PRIMJIT_USER_ERROR() << "function '" << function_ << "' (target " << target_->kind
                             << "): host code passes the data of parameter buffer '" << it->second
                             << "', which lives in " << target_->kind
                             << " device memory, to function '" << op->callee->name
                             << "', which runs on the CPU, in " << quote(print(Expr(op)))
                             << ". Pass it to a kernel, or give the function a CPU target "
                                "(T.target(\"llvm\"))";
      });
    }
  }

  // `access` prints the access, for the message only: most accesses are fine and never printed.
  void check_access(const Buffer& buffer, const char* verb,
                    const std::function<std::string()>& access) {
    const std::string kind = target_->kind;
    if (!on_device_) {
      auto it = device_data_.find(buffer->data.get());
      if (it == device_data_.end()) return;
      PRIMJIT_USER_ERROR() << "function '" << function_ << "' (target " << kind << "): host code "
                           << verb << " buffer '" << buffer->name << "' in " << quote(access())
                           << ", but parameter buffer '" << it->second << "' lives in " << kind
                           << " device memory, which the CPU cannot access. Move the access "
                              "into a kernel (under T.launch_thread), or give the function a CPU "
                              "target (T.target(\"llvm\"))";
    }
    auto it = host_data_.find(buffer->data.get());
    if (it == host_data_.end()) return;
    PRIMJIT_USER_ERROR() << "function '" << function_ << "' (target " << kind << "): device code "
                         << verb << " buffer '" << buffer->name << "' in " << quote(access())
                         << ", but '" << it->second
                         << "' is allocated by host code, in host memory, which the device "
                            "cannot access. Allocate it inside the kernel (after its "
                            "T.launch_thread), or pass the data in a parameter buffer";
  }

  IRModule module_;
  std::string function_;
  Target target_;
  bool on_device_ = false;
  bool in_cpu_region_ = false;  // inside a region of another target: never device code
  VarMap device_binds_;         // the current region's Binds, for what the host computes of it
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
                  DeviceMemoryChecker(module, gvar->name, target).check(func);
                }
                return module;
              }};
}

}  // namespace primjit::passes
