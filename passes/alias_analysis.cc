#include "passes/alias_analysis.h"

#include "primjit/ir/functor.h"

namespace primjit::passes {
namespace {

// Collects pointer definitions in program order (a definition always precedes its uses).
class PointerDefinitions : public StmtExprVisitor {
 public:
  explicit PointerDefinitions(std::function<void(const Var&, const Expr&)> define)
      : define_(std::move(define)) {}
  void visit(const Bind* op) override {
    StmtExprVisitor::visit(op);
    if (op->var.dtype().is_handle()) define_(op->var, op->value);
  }
  void visit(const Let* op) override {
    visit_expr(op->value);
    if (op->var.dtype().is_handle()) define_(op->var, op->value);
    visit_expr(op->body);
  }

 private:
  std::function<void(const Var&, const Expr&)> define_;
};

}  // namespace

AliasAnalysis::AliasAnalysis(const Stmt& body) {
  PointerDefinitions([this](const Var& var, const Expr& value) {
    define(var, value);
  }).visit_stmt(body);
}

const VarNode* AliasAnalysis::region(const VarNode* data) const {
  auto it = regions_.find(data);
  return it == regions_.end() ? data : it->second;
}

const VarNode* AliasAnalysis::origin(const Expr& pointer) const {
  if (const auto* var = pointer.as<VarNode>()) return region(var);
  if (const auto* call = pointer.as<Call>(); call != nullptr && call->op.defined()) {
    if (call->is_op("address_of")) {
      if (const auto* load = call->args[0].as<BufferLoad>()) {
        return region(load->buffer->data.get());
      }
    } else if (call->is_op("tvm_access_ptr")) {
      return origin(call->args[1]);
    }
  }
  return nullptr;  // anywhere
}

void AliasAnalysis::define(const Var& var, const Expr& value) {
  regions_[var.get()] = origin(value);
}

bool AliasAnalysis::may_alias(const VarNode* a, const VarNode* b) const {
  const VarNode* ra = region(a);
  const VarNode* rb = region(b);
  return ra == nullptr || rb == nullptr || ra == rb;
}

bool AliasAnalysis::reads(const Expr& e, const VarNode* written) const {
  bool found = false;
  post_order_visit(e, [&](const Ref<Object>& node) {
    if (found) return;
    if (const auto* load = node.as<BufferLoad>()) {
      found = written == nullptr || may_alias(load->buffer->data.get(), written);
    } else if (const auto* call = node.as<Call>()) {
      found = call->effect() != CallEffect::kPure;
    }
  });
  return found;
}

}  // namespace primjit::passes
