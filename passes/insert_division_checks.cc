// InsertDivisionChecks: the checked mode of integer division (KernelOptions::checked_arithmetic,
// PipelineOptions::checked_arithmetic). Without it a division by zero or INT_MIN / -1 has the
// result docs/semantics.md gives; with it the call fails with an error that names the function
// and the division, on every backend (an assert is what each of them already reports).
//
// Requires: nothing.
// Ensures:  before each statement, one assert per integer Div, Mod, FloorDiv or FloorMod that the
//           statement itself evaluates (its expressions, not its nested statements) and that is
//           not provably safe: `b != 0` unless the divisor is a nonzero literal, and for the
//           signed quotients (Div, FloorDiv) `a != MIN or b != -1` unless the divisor is a
//           literal other than -1. Checks come in evaluation order; a division on one branch of
//           T.if_then_else is checked only when that branch runs (the condition says so); Let
//           variables are replaced by their values in the conditions. A While condition is
//           checked before the loop and at the end of its body. Vector divisions are checked
//           when the divisor is a Broadcast (its scalar, for zero only), else left alone.
// Example:
//   B[i] = A[i] // n          =>      assert n != 0, "integer division by zero in `A[i] // n`
//                                         (function 'main')"
//                                     assert A[i] != -2147483648 or n != -1, "integer division
//                                         overflow in `A[i] // n` (function 'main')"
//                                     B[i] = A[i] // n
#include <limits>

#include "passes/pass_list.h"
#include "primjit/ir/functor.h"
#include "primjit/ir/text.h"

namespace primjit::passes {
namespace {

// Replaces every Let by its body with the variable substituted: a condition built from parts
// of the function must not define the function's Let variables a second time.
class LetInliner : public StmtExprMutator {
 public:
  Expr mutate(const Let* op) override {
    Expr value = mutate_expr(op->value);
    return mutate_expr(substitute(op->body, VarMap{{op->var.get(), value}}));
  }
};

Expr inline_lets(const Expr& e) { return LetInliner().mutate_expr(e); }

Expr min_value(DataType t) {
  int64_t min =
      t.bits() == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (t.bits() - 1));
  return IntImm::make(t, min);
}

// The checks of the expressions one statement evaluates, in evaluation order.
class CheckCollector : public StmtExprVisitor {
 public:
  explicit CheckCollector(const std::string& function) : function_(function) {}

  std::vector<Stmt> take() { return std::move(checks_); }

  void visit(const Div* op) override { division(Expr(op), op->a, op->b, true); }
  void visit(const Mod* op) override { division(Expr(op), op->a, op->b, false); }
  void visit(const FloorDiv* op) override { division(Expr(op), op->a, op->b, true); }
  void visit(const FloorMod* op) override { division(Expr(op), op->a, op->b, false); }

  void visit(const Let* op) override {
    visit_expr(op->value);
    lets_[op->var.get()] = closed(op->value);
    visit_expr(op->body);
    lets_.erase(op->var.get());
  }

  void visit(const Call* op) override {
    if (!op->is_op("if_then_else")) return StmtExprVisitor::visit(op);
    visit_expr(op->args[0]);  // only the chosen branch is evaluated
    Expr cond = closed(op->args[0]);
    Expr outer = guard_;
    guard_ = outer.defined() ? And::make(outer, cond) : cond;
    visit_expr(op->args[1]);
    guard_ = outer.defined() ? And::make(outer, Not::make(cond)) : Not::make(cond);
    visit_expr(op->args[2]);
    guard_ = outer;
  }

 private:
  void division(const Expr& node, const Expr& a, const Expr& b, bool quotient) {
    visit_expr(a);
    visit_expr(b);
    DataType t = node.dtype();
    if (!t.is_integer() || t.is_bool()) return;
    Expr divisor = b;
    if (t.is_vector()) {
      const auto* broadcast = b.as<Broadcast>();
      if (broadcast == nullptr) return;
      divisor = broadcast->value;
    }
    std::optional<int64_t> literal = as_const_int(divisor);
    if (!literal || *literal == 0) {
      add(NE::make(closed(divisor), IntImm::make(divisor.dtype(), 0)), "integer division by zero",
          node);
    }
    if (quotient && t.is_int() && t.is_scalar() && (!literal || *literal == -1)) {
      Expr not_min = NE::make(closed(a), min_value(t));
      add(literal ? not_min : Or::make(not_min, NE::make(closed(b), IntImm::make(t, -1))),
          "integer division overflow", node);
    }
  }

  // `e` without Let variables: those of enclosing Lets and those it binds itself.
  Expr closed(const Expr& e) { return inline_lets(lets_.empty() ? e : substitute(e, lets_)); }

  void add(const Expr& ok, const std::string& what, const Expr& node) {
    Expr cond = guard_.defined() ? Or::make(Not::make(guard_), ok) : ok;
    std::string message = what + " in `" + print(node) + "` (function '" + function_ + "')";
    checks_.push_back(AssertStmt::make(cond, StringImm::make(message)));
  }

  const std::string& function_;
  Expr guard_;   // when set, the checked expression runs only where it holds
  VarMap lets_;  // enclosing Let variables and their (closed) values
  std::vector<Stmt> checks_;
};

class CheckInserter : public StmtExprMutator {
 public:
  explicit CheckInserter(std::string function) : function_(std::move(function)) {}

  Stmt mutate(const BufferStore* op) override {
    return checked({op->value}, op->indices, StmtExprMutator::mutate(op));
  }
  Stmt mutate(const Bind* op) override {
    return checked({op->value}, {}, StmtExprMutator::mutate(op));
  }
  Stmt mutate(const Evaluate* op) override {
    return checked({op->value}, {}, StmtExprMutator::mutate(op));
  }
  Stmt mutate(const AssertStmt* op) override {  // the message is evaluated only on failure
    return checked({op->condition}, {}, StmtExprMutator::mutate(op));
  }
  Stmt mutate(const IfThenElse* op) override {
    return checked({op->condition}, {}, StmtExprMutator::mutate(op));
  }
  Stmt mutate(const For* op) override {
    return checked({op->min, op->extent}, {}, StmtExprMutator::mutate(op));
  }
  Stmt mutate(const AttrStmt* op) override {
    return checked({op->value}, {}, StmtExprMutator::mutate(op));
  }
  Stmt mutate(const AllocBuffer* op) override {
    return checked(op->buffer->shape, {}, StmtExprMutator::mutate(op));
  }
  Stmt mutate(const While* op) override {
    std::vector<Stmt> per_iteration = collect({op->condition}, {});
    Stmt s = StmtExprMutator::mutate(op);
    if (per_iteration.empty()) return s;
    const auto* loop = s.as<While>();
    std::vector<Stmt> body = {loop->body};
    body.insert(body.end(), per_iteration.begin(), per_iteration.end());
    per_iteration.push_back(While::make(loop->condition, SeqStmt::make(std::move(body))));
    return SeqStmt::make(std::move(per_iteration));
  }

 private:
  std::vector<Stmt> collect(const std::vector<Expr>& first, const std::vector<Expr>& second) {
    CheckCollector collector(function_);
    for (const Expr& e : first) collector.visit_expr(e);
    for (const Expr& e : second) collector.visit_expr(e);
    return collector.take();
  }

  // `s` preceded by the checks of `first` and `second` (a store's value, then its indices).
  Stmt checked(const std::vector<Expr>& first, const std::vector<Expr>& second, Stmt s) {
    std::vector<Stmt> seq = collect(first, second);
    if (seq.empty()) return s;
    seq.push_back(std::move(s));
    return SeqStmt::make(std::move(seq));
  }

  std::string function_;
};

}  // namespace

Pass make_insert_division_checks_pass() {
  auto run = [](const IRModule& module, const PassArgs& args) {
    check_no_args("InsertDivisionChecks", args);
    IRModule out = module;
    for (const auto& [gvar, func] : module->functions) {
      Stmt body = CheckInserter(gvar->name).mutate_stmt(func->body);
      if (!body.same_as(func->body)) out = out.with_function(gvar->name, func.with_body(body));
    }
    return out;
  };
  return Pass{"InsertDivisionChecks",
              "checked mode: assert divisors nonzero and quotients representable", run};
}

}  // namespace primjit::passes
