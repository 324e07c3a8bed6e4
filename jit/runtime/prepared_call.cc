#include "jit/runtime/prepared_call.h"

#include <set>

#include "primjit/error.h"
#include "primjit/ir/attr_keys.h"
#include "primjit/ir/functor.h"
#include "primjit/ir/stmt.h"

namespace primjit {
namespace jit {
namespace {

// Finds the first host statement or call that is more than a kernel launch. Host code may
// compute launch values, check its arguments (asserts) and loop over launches: a replay of the
// recorded launches gives the same effect. It may not write memory, run parallel loops or
// call out, since a replay repeats none of it.
class HostWorkFinder : public StmtExprVisitor {
 public:
  explicit HostWorkFinder(const IRModule& module) : module_(module) {}

  void check_function(const std::string& name) {
    if (!visited_.insert(name).second) return;
    PrimFunc func = module_->lookup(name);
    if (func->is_kernel()) return;
    if (!func->ret_type.is_void()) {
      note("returns a value (" + name + ")");
      return;
    }
    visit_function(func);
  }

  const std::string& found() const { return found_; }

  void visit_stmt(const Stmt& stmt) override {
    if (found_.empty()) StmtExprVisitor::visit_stmt(stmt);
  }
  void visit_expr(const Expr& expr) override {
    if (found_.empty()) StmtExprVisitor::visit_expr(expr);
  }

  void visit(const AttrStmt* op) override {
    // A thread extent opens device code: its body runs in the kernel, not on the host.
    if (op->key == attr::kThreadExtent || op->key == attr::kVirtualThread) return;
    StmtExprVisitor::visit(op);
  }
  void visit(const For* op) override {
    if (op->for_kind == ForKind::kThreadBinding) return;  // device code, as above
    if (op->for_kind == ForKind::kParallel) {
      note("runs a parallel loop");
      return;
    }
    StmtExprVisitor::visit(op);
  }
  void visit(const BufferStore* op) override {
    note("stores to buffer '" + op->buffer->name + "'");
  }
  void visit(const Call* op) override {
    if (op->callee.defined()) {
      check_function(op->callee->name);
    } else if (op->has_side_effects() && !op->is_op("call_packed")) {
      // call_packed launches a kernel; other calls with effects reach outside the launches.
      note("calls T." + op->op->name);
      return;
    }
    StmtExprVisitor::visit(op);
  }

 private:
  void note(std::string what) {
    if (found_.empty()) found_ = std::move(what);
  }

  const IRModule& module_;
  std::set<std::string> visited_;
  std::string found_;
};

}  // namespace

std::string host_work_besides_launches(const IRModule& module, const std::string& name) {
  HostWorkFinder finder(module);
  finder.check_function(name);
  return finder.found();
}

}  // namespace jit

void PreparedCall::launch() const {
  PRIMJIT_USER_CHECK(state_ != nullptr) << "launch of an empty PreparedCall (use Kernel::prepare)";
  jit::replay_launches(state_->recording, state_->stream);
}

void PreparedCall::launch(void* cuda_stream) const {
  PRIMJIT_USER_CHECK(state_ != nullptr) << "launch of an empty PreparedCall (use Kernel::prepare)";
  jit::replay_launches(state_->recording, static_cast<CUstream_st*>(cuda_stream));
}

size_t PreparedCall::num_launches() const {
  return state_ == nullptr ? 0 : state_->recording.launches.size();
}

}  // namespace primjit
