// RemoveNoOp: drops statements that do nothing.
//
// Requires: nothing.
// Ensures:  no Evaluate of a side-effect-free expression (`T.evaluate(0)`), no loop, launch or
//           attribute whose body does nothing (or whose extent is the constant 0), no branch
//           whose bodies do nothing, no `else` that does nothing, and no Bind whose variable is
//           never used and whose value has no side effect. A function whose body becomes empty
//           keeps a single `T.evaluate(0)`. While loops are kept (their condition decides
//           termination).
// Example:
//   x: T.int32 = n * 2                   =>      A[0] = T.float32(1)
//   for i in range(4): T.evaluate(0)
//   A[0] = T.float32(1)
#include <unordered_map>

#include "passes/pass_list.h"
#include "primjit/ir/functor.h"

namespace primjit::passes {
namespace {

bool is_no_op(const Stmt& s) {
  if (const auto* eval = s.as<Evaluate>()) return !has_side_effects(eval->value);
  return false;
}

// How often each variable occurs in expressions (definitions excluded).
class UseCounter : public StmtExprVisitor {
 public:
  std::unordered_map<const VarNode*, int> uses;
  void visit(const VarNode* op) override { ++uses[op]; }
  void visit(const Bind* op) override { visit_expr(op->value); }
  void visit_buffer_use(const Buffer& buffer) override { visit_buffer_def(buffer); }
};

class NoOpRemover : public StmtExprMutator {
 public:
  explicit NoOpRemover(const std::unordered_map<const VarNode*, int>& uses) : uses_(uses) {}

  Stmt mutate(const Bind* op) override {
    auto it = uses_.find(op->var.get());
    bool unused = it == uses_.end() || it->second == 0;
    if (unused && !has_side_effects(op->value)) return no_op();
    return StmtExprMutator::mutate(op);
  }

  Stmt mutate(const SeqStmt* op) override {
    return mutate_seq(op, [](const Stmt&, const Stmt& mutated) { return is_no_op(mutated); });
  }

  Stmt mutate(const For* op) override {
    Stmt s = StmtExprMutator::mutate(op);
    const auto* loop = s.as<For>();
    std::optional<int64_t> extent = as_const_int(loop->extent);
    bool empty = is_no_op(loop->body) || (extent && *extent <= 0);
    return empty && !has_side_effects(loop->min) && !has_side_effects(loop->extent) ? no_op() : s;
  }

  Stmt mutate(const AttrStmt* op) override {
    Stmt s = StmtExprMutator::mutate(op);
    const auto* attr = s.as<AttrStmt>();
    return is_no_op(attr->body) && !has_side_effects(attr->value) ? no_op() : s;
  }

  Stmt mutate(const IfThenElse* op) override {
    Stmt s = StmtExprMutator::mutate(op);
    const auto* branch = s.as<IfThenElse>();
    bool then_empty = is_no_op(branch->then_case);
    bool else_empty = !branch->else_case.defined() || is_no_op(branch->else_case);
    if (then_empty && else_empty) {
      return has_side_effects(branch->condition) ? Evaluate::make(branch->condition) : no_op();
    }
    if (else_empty && branch->else_case.defined()) {
      return IfThenElse::make(branch->condition, branch->then_case);
    }
    if (then_empty) {
      return IfThenElse::make(Not::make(branch->condition), branch->else_case);
    }
    return s;
  }

 private:
  static Stmt no_op() { return Evaluate::make(make_const(0)); }
  const std::unordered_map<const VarNode*, int>& uses_;
};

}  // namespace

Stmt remove_no_op(const Stmt& body) {
  // Removing a Bind can leave another unused (x = 1; y = x): repeat until nothing changes.
  Stmt current = body;
  for (int round = 0; round < 16; ++round) {
    UseCounter counter;
    counter.visit_stmt(current);
    Stmt next = NoOpRemover(counter.uses).mutate_stmt(current);
    if (next.same_as(current)) break;
    current = next;
  }
  return current;
}

Pass make_remove_no_op_pass() {
  return body_pass("RemoveNoOp", "drop statements, loops, branches and Binds that do nothing",
                   remove_no_op);
}

}  // namespace primjit::passes
