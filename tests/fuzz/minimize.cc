#include "tests/fuzz/minimize.h"

#include <chrono>
#include <vector>

#include "primjit/error.h"
#include "primjit/ir/functor.h"
#include "primjit/ir/verify.h"

namespace primjit::fuzz {
namespace {

// Rewrites the statement or expression with pre-order number `target` (statements and
// expressions are numbered apart); counts them all when target is -1.
class ReplaceNth : public StmtExprMutator {
 public:
  enum class What { kStmt, kExpr };
  ReplaceNth(What what, int target, int option) : what_(what), target_(target), option_(option) {}

  Stmt mutate_stmt(const Stmt& s) override {
    if (what_ == What::kStmt && counter_++ == target_ && s.as<SeqStmt>() == nullptr) {
      replaced_ = true;
      return Evaluate::make(make_const(0));
    }
    return StmtExprMutator::mutate_stmt(s);
  }
  Expr mutate_expr(const Expr& e) override {
    if (what_ == What::kExpr && counter_++ == target_) {
      std::vector<Expr> options = simpler(e);
      if (option_ < static_cast<int>(options.size())) {
        replaced_ = true;
        return options[static_cast<size_t>(option_)];
      }
    }
    return StmtExprMutator::mutate_expr(e);
  }

  int count() const { return counter_; }
  bool replaced() const { return replaced_; }

  // Operands of the same dtype, then the constants 0 and 1 (not for what is one already).
  static std::vector<Expr> simpler(const Expr& e) {
    std::vector<Expr> out;
    if (e.as<IntImm>() != nullptr || e.as<FloatImm>() != nullptr || e.as<VarNode>() != nullptr ||
        e.as<StringImm>() != nullptr || e.dtype().is_handle()) {
      return out;
    }
    auto operand = [&](const Expr& x) {
      if (x.defined() && x.dtype() == e.dtype()) out.push_back(x);
    };
    post_order_children(e, operand);
    for (int v : {0, 1}) {
      DataType t = e.dtype().element_of();
      Expr c = t.is_float() ? FloatImm::make(t, v) : IntImm::make(t, v);
      out.push_back(e.dtype().lanes() > 1 ? Broadcast::make(c, e.dtype().lanes()) : c);
    }
    return out;
  }

 private:
  static void post_order_children(const Expr& e, const std::function<void(const Expr&)>& f) {
    if (const auto* b = e.as<Add>()) return f(b->a), f(b->b);
    if (const auto* b = e.as<Sub>()) return f(b->a), f(b->b);
    if (const auto* b = e.as<Mul>()) return f(b->a), f(b->b);
    if (const auto* b = e.as<Div>()) return f(b->a), f(b->b);
    if (const auto* b = e.as<Mod>()) return f(b->a), f(b->b);
    if (const auto* b = e.as<FloorDiv>()) return f(b->a), f(b->b);
    if (const auto* b = e.as<FloorMod>()) return f(b->a), f(b->b);
    if (const auto* b = e.as<Min>()) return f(b->a), f(b->b);
    if (const auto* b = e.as<Max>()) return f(b->a), f(b->b);
    if (const auto* s = e.as<Select>()) return f(s->true_value), f(s->false_value);
    if (const auto* c = e.as<Cast>()) return f(c->value);
    if (const auto* c = e.as<Call>()) {
      for (const Expr& a : c->args) f(a);
    }
  }

  What what_;
  int target_;
  int option_;
  int counter_ = 0;
  bool replaced_ = false;
};

bool well_formed(const PrimFunc& f) {
  try {
    verify_well_formed(f);
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

PrimFunc minimize(PrimFunc func, const std::function<bool(const PrimFunc&)>& fails,
                  int max_attempts, double max_seconds) {
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(max_seconds));
  int attempts = 0;
  bool progress = true;
  while (progress && attempts < max_attempts) {
    progress = false;
    for (ReplaceNth::What what : {ReplaceNth::What::kStmt, ReplaceNth::What::kExpr}) {
      ReplaceNth counter(what, -1, 0);
      counter.mutate_function(func);
      for (int k = counter.count() - 1; k >= 0 && attempts < max_attempts; --k) {
        for (int option = 0; option < (what == ReplaceNth::What::kStmt ? 1 : 8); ++option) {
          ReplaceNth replace(what, k, option);
          PrimFunc candidate = replace.mutate_function(func);
          if (!replace.replaced()) break;
          ++attempts;
          if (std::chrono::steady_clock::now() > deadline) return func;
          if (!well_formed(candidate) || !fails(candidate)) continue;
          func = candidate;
          progress = true;
          break;
        }
      }
    }
  }
  return func;
}

}  // namespace primjit::fuzz
