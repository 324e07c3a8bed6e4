// Simplify: the arithmetic simplifier over statements.
//
// Requires: nothing.
// Ensures:  every expression is simplified (primjit/arith.h) under what its position knows:
//           the ranges of enclosing loop and thread variables, earlier Binds of the same scope,
//           the condition of an enclosing branch (negated in `else`; disjunctions decided case
//           by case) or `while` (negated after it) and asserts that came before, and that the
//           parameter buffers' dimensions are >= 0. A Bind's variable is reasoned about through its
//           value (bounds, divisibility, equality) but not replaced by it unless the value is a
//           constant. A branch whose condition is proven is replaced by the branch taken; a loop
//           proven empty, a `while` proven false and an assert proven true are removed.
//           Buffer shapes are left as they are. A fact that reads memory (a condition, a Bind
//           value, a loop bound) is forgotten at every store or call that may write that
//           memory (AliasAnalysis), and on entry to a loop for what its body writes.
// Example:
//   for i in range(4):                          for i in range(4):
//       for j in range(16):           =>            for j in range(16):
//           if i * 16 + j < 64:                         A[i * 16 + j] = T.float32(0)
//               A[(i * 16 + j) // 16 * 16 + j] = T.float32(0)
#include "passes/alias_analysis.h"
#include "passes/pass_list.h"
#include "primjit/arith.h"
#include "primjit/ir/functor.h"

namespace primjit::passes {
namespace {

bool is_const_true(const Expr& e) {
  std::optional<int64_t> c = as_const_int(e);
  return c && *c != 0 && e.dtype().is_bool();
}
bool is_const_false(const Expr& e) {
  std::optional<int64_t> c = as_const_int(e);
  return c && *c == 0 && e.dtype().is_bool();
}

Stmt no_op() { return Evaluate::make(make_const(0)); }
bool is_produced_no_op(const Stmt& s) {
  const auto* eval = s.as<Evaluate>();
  return eval != nullptr && eval->value.as<IntImm>() != nullptr;
}

class StmtSimplifier : public StmtExprMutator {
 public:
  explicit StmtSimplifier(const PrimFunc& func) : alias_(func->body) {
    // Every dimension of a parameter buffer is >= 0: a call checks each tensor argument's
    // shape against it and refuses a negative one (the runtime's argument checks). Nothing
    // more is known: a dimension may be 0 (an empty tensor), strides of views may be anything.
    for (const auto& [param, buffer] : func->buffer_map) {
      for (const Expr& dim : buffer->shape) {
        if (!dim.dtype().is_integer() || !dim.dtype().is_scalar() || dim.as<IntImm>()) continue;
        analyzer_.assume(GE::make(dim, IntImm::make(dim.dtype(), 0)));
      }
    }
  }

  // Each expression in statement position is simplified as a whole by the analyzer, which
  // handles nested expressions (and Let scopes) itself. A call in it that may write memory
  // makes every fact about memory stale once it has run.
  Expr mutate_expr(const Expr& expr) override {
    Expr result = analyzer_.simplify(expr);
    if (has_side_effects(result)) forget_written(nullptr);
    return result;
  }

  Stmt mutate(const BufferStore* op) override {
    Stmt result = StmtExprMutator::mutate(op);
    forget_written(op->buffer->data.get());
    return result;
  }

  // Buffer fields are kept: rewriting them would change buffer identities for no gain.
  Buffer mutate_buffer_def(const Buffer& buffer) override { return buffer; }

  Stmt mutate(const Bind* op) override {
    Expr value = mutate_expr(op->value);
    if (value.dtype().is_int_or_bool() && value.dtype().is_scalar()) {
      analyzer_.bind(op->var, value);  // known for the rest of the enclosing scope
    }
    return value.same_as(op->value) ? Stmt(op) : Bind::make(op->var, value);
  }

  Stmt mutate(const For* op) override {
    Expr min = mutate_expr(op->min);
    Expr extent = mutate_expr(op->extent);
    if (analyzer_.can_prove(LE::make(extent, IntImm::make(extent.dtype(), 0)))) return no_op();
    forget_written_in(op->body);  // by earlier iterations
    Stmt body = analyzer_.with_scope([&] {
      analyzer_.bind(op->loop_var, min, extent);
      return mutate_stmt(op->body);
    });
    if (min.same_as(op->min) && extent.same_as(op->extent) && body.same_as(op->body)) {
      return Stmt(op);
    }
    return For::make(op->loop_var, min, extent, op->for_kind, body, op->thread_tag,
                     op->annotations);
  }

  Stmt mutate(const AttrStmt* op) override {
    Expr value = mutate_expr(op->value);
    const IterVarNode* iv = op->iter_var();
    Stmt body = analyzer_.with_scope([&] {
      if (iv != nullptr && op->key == attr::kThreadExtent) {
        analyzer_.bind(iv->var, IntImm::make(value.dtype(), 0), value);
      }
      return mutate_stmt(op->body);
    });
    if (value.same_as(op->value) && body.same_as(op->body)) return Stmt(op);
    return AttrStmt::make(op->node, op->key, value, body);
  }

  Stmt mutate(const IfThenElse* op) override {
    Expr cond = mutate_expr(op->condition);
    if (is_const_true(cond))
      return analyzer_.with_scope([&] { return mutate_stmt(op->then_case); });
    if (is_const_false(cond)) {
      if (!op->else_case.defined()) return no_op();
      return analyzer_.with_scope([&] { return mutate_stmt(op->else_case); });
    }
    Stmt then_case = analyzer_.with_scope([&] {
      analyzer_.assume(cond);
      return mutate_stmt(op->then_case);
    });
    Stmt else_case;
    if (op->else_case.defined()) {
      else_case = analyzer_.with_scope([&] {
        analyzer_.assume(Not::make(cond));
        return mutate_stmt(op->else_case);
      });
    }
    if (cond.same_as(op->condition) && then_case.same_as(op->then_case) &&
        else_case.same_as(op->else_case)) {
      return Stmt(op);
    }
    return IfThenElse::make(cond, then_case, else_case);
  }

  Stmt mutate(const While* op) override {
    forget_written_in(op->body);  // by earlier iterations, before the condition is evaluated
    Expr cond = mutate_expr(op->condition);
    if (is_const_false(cond)) return no_op();
    Stmt body = analyzer_.with_scope([&] {
      analyzer_.assume(cond);  // at the start of each iteration, until a store changes it
      return mutate_stmt(op->body);
    });
    // After the loop the condition failed at its last test, and nothing has run since.
    analyzer_.assume(Not::make(cond));
    if (cond.same_as(op->condition) && body.same_as(op->body)) return Stmt(op);
    return While::make(cond, body);
  }

  Stmt mutate(const AssertStmt* op) override {
    Expr cond = mutate_expr(op->condition);
    if (is_const_true(cond)) return no_op();
    analyzer_.assume(cond);  // later statements run only when it held
    return cond.same_as(op->condition) ? Stmt(op) : AssertStmt::make(cond, op->message);
  }

  Stmt mutate(const SeqStmt* op) override {
    // Drop only what this pass turned into a no-op (a branch or loop it removed).
    return mutate_seq(op, [](const Stmt& original, const Stmt& mutated) {
      return is_produced_no_op(mutated) && !is_produced_no_op(original);
    });
  }

 private:
  // Forgets the facts that read memory a store through `data` may change (null: any memory).
  void forget_written(const VarNode* data) {
    analyzer_.forget([&](const Expr& fact) { return alias_.reads(fact, data); });
  }
  // Forgets what the stores and calls of `s` may change.
  void forget_written_in(const Stmt& s) {
    std::vector<const VarNode*> written;
    bool anything = false;
    post_order_visit(s, [&](const Ref<Object>& node) {
      if (const auto* store = node.as<BufferStore>()) written.push_back(store->buffer->data.get());
      if (const auto* call = node.as<Call>()) anything = anything || call->has_side_effects();
    });
    if (!anything && written.empty()) return;
    analyzer_.forget([&](const Expr& fact) {
      if (anything) return alias_.reads(fact, nullptr);
      for (const VarNode* data : written) {
        if (alias_.reads(fact, data)) return true;
      }
      return false;
    });
  }

  AliasAnalysis alias_;
  arith::Analyzer analyzer_;
};

}  // namespace

Pass make_simplify_pass() {
  return function_pass("Simplify",
                       "simplify expressions under loop/thread bounds; fold proven branches",
                       [](const PrimFunc& func) {
                         return func.with_body(StmtSimplifier(func).mutate_stmt(func->body));
                       });
}

}  // namespace primjit::passes
