// Rule family: logic (And, Or, Not, Select).
// - And/Or: flattened, constants folded, operands sorted, each simplified assuming the
//   previous ones hold (And) or failed (Or), redundant operands dropped; what is still open is
//   decided case by case over an assumed disjunction when every case agrees;
// - Not: of a literal, of a Not, of a comparison (the opposite comparison);
// - Select: a known condition picks its branch; each branch is simplified knowing the
//   condition, when that cannot make it fault; equal branches drop the Select.
#include <algorithm>

#include "ir/arith/simplify_internal.h"

namespace primjit::arith::detail {
namespace {

// The opposite integer comparison: not (a < b) is a >= b, and so on.
NodeKind negated_compare(NodeKind k) {
  switch (k) {
    case NodeKind::kEQ:
      return NodeKind::kNE;
    case NodeKind::kNE:
      return NodeKind::kEQ;
    case NodeKind::kLT:
      return NodeKind::kGE;
    case NodeKind::kLE:
      return NodeKind::kGT;
    case NodeKind::kGT:
      return NodeKind::kLE;
    case NodeKind::kGE:
      return NodeKind::kLT;
    default:
      return k;
  }
}

std::pair<Expr, Expr> compare_operands(const Expr& e) {
  switch (e.kind()) {
#define PRIMJIT_OPERANDS_CASE(Name) \
  case NodeKind::k##Name:           \
    return {e.as<Name>()->a, e.as<Name>()->b};
    PRIMJIT_OPERANDS_CASE(EQ)
    PRIMJIT_OPERANDS_CASE(NE)
    PRIMJIT_OPERANDS_CASE(LT)
    PRIMJIT_OPERANDS_CASE(LE)
    PRIMJIT_OPERANDS_CASE(GT)
    PRIMJIT_OPERANDS_CASE(GE)
#undef PRIMJIT_OPERANDS_CASE
    default:
      return {};
  }
}

// Select evaluates both branches and And/Or both operands, so a branch simplified under its
// condition still runs when the condition is false. Only expressions that cannot fault for any
// value (no loads, calls, or divisions by non-constants, which the checked mode reports) are
// simplified that way: otherwise
// `select(i < n, A[min(i, n - 1)], 0)` would become an out-of-bounds load.
bool safe_under_any_context(const Expr& e) {
  bool safe = true;
  post_order_visit(e, [&](const Ref<Object>& node) {
    switch (node.kind()) {
      case NodeKind::kBufferLoad:
      case NodeKind::kCall:
        safe = false;
        break;
      case NodeKind::kDiv:
        safe = safe && node.as<Div>()->b.as<IntImm>() != nullptr;
        break;
      case NodeKind::kMod:
        safe = safe && node.as<Mod>()->b.as<IntImm>() != nullptr;
        break;
      case NodeKind::kFloorDiv:
        safe = safe && node.as<FloorDiv>()->b.as<IntImm>() != nullptr;
        break;
      case NodeKind::kFloorMod:
        safe = safe && node.as<FloorMod>()->b.as<IntImm>() != nullptr;
        break;
      default:
        break;
    }
  });
  return safe;
}

}  // namespace

Expr Rewriter::visit(const Not* op) {
  Expr a = rewrite(op->a);
  if (const auto* b = a.as<Broadcast>()) {
    return rewrite(Broadcast::make(Not::make(b->value), b->lanes));
  }
  if (auto v = const_int(a)) return make_int(op->dtype, *v == 0);
  if (const auto* n = a.as<Not>()) return n->a;
  if (auto [x, y] = compare_operands(a); x.defined() && a.dtype().is_scalar()) {
    DataType t = x.dtype();
    bool negatable = t.is_int_or_bool() ||
                     (t.is_floating() && (a.kind() == NodeKind::kEQ || a.kind() == NodeKind::kNE));
    if (negatable) return rewrite(make_binary(negated_compare(a.kind()), x, y));
  }
  return a.same_as(op->a) ? Expr(op) : Not::make(a);
}

Expr Rewriter::visit(const Select* op) {
  Expr c = rewrite(op->condition);
  std::optional<i128> cv = const_int_lanes(c);
  if (cv) {
    const Expr& chosen = *cv != 0 ? op->true_value : op->false_value;
    const Expr& other = *cv != 0 ? op->false_value : op->true_value;
    if (AnalyzerImpl::pure(other)) return rewrite(chosen);
  }
  // Each branch is simplified knowing the condition's value when that cannot make it fault.
  bool context = c.dtype().is_scalar() && !cv && AnalyzerImpl::pure(c);
  auto branch = [&](const Expr& value, const Expr& holds) {
    if (!context || !safe_under_any_context(value)) return rewrite(value);
    ScopeGuard scope(an_);
    an_.assume(holds);
    return rewrite(value);
  };
  Expr t = branch(op->true_value, c);
  Expr f = branch(op->false_value, Not::make(c));
  if (AnalyzerImpl::pure(c) && AnalyzerImpl::pure(t) && AnalyzerImpl::equal(t, f)) return t;
  if (op->dtype.is_bool() && op->dtype.is_scalar() && c.dtype().is_scalar()) {
    auto tv = const_int(t);
    auto fv = const_int(f);
    if (tv && fv && *tv != 0 && *fv == 0) return c;
    if (tv && fv && *tv == 0 && *fv != 0) return rewrite(Not::make(c));
  }
  if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) {
    return Expr(op);
  }
  return Select::make(c, t, f);
}

Expr Rewriter::logical(const Expr& e, NodeKind k) {
  bool is_and = k == NodeKind::kAnd;
  DataType t = e.dtype();
  if (t.is_vector()) {
    auto [a0, b0] = is_and ? std::pair(e.as<And>()->a, e.as<And>()->b)
                           : std::pair(e.as<Or>()->a, e.as<Or>()->b);
    Expr a = rewrite(a0);
    Expr b = rewrite(b0);
    if (Expr r = vector_rule(k, a, b); r.defined()) return r;
    if (a.same_as(a0) && b.same_as(b0)) return e;
    return make_binary(k, a, b);
  }
  // `identity` (true for And) is dropped; `absorbing` (false for And) decides the result.
  const i128 identity = is_and ? 1 : 0;
  std::vector<Expr> raw;
  flatten(k, e, &raw);
  std::vector<Expr> ops;
  bool all_pure = true;
  for (const Expr& x : raw) {
    ops.push_back(rewrite(x));
    all_pure = all_pure && AnalyzerImpl::pure(ops.back());
  }
  auto build = [&](const std::vector<Expr>& xs) {
    if (xs.empty()) return make_bool(identity != 0);
    Expr r = xs[0];
    for (size_t i = 1; i < xs.size(); ++i) r = make_binary(k, r, xs[i]);
    return r;
  };
  std::vector<Expr> kept;
  if (!all_pure) {
    // Keep every operand and the order; only drop the literal identities.
    for (const Expr& x : ops) {
      if (const_int(x) != identity) kept.push_back(x);
    }
    return build(kept);
  }
  std::vector<Expr> candidates;
  for (const Expr& x : ops) {
    if (auto v = const_int(x)) {
      if (*v != identity) return make_bool(identity == 0);
      continue;
    }
    candidates.push_back(x);
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](const Expr& p, const Expr& q) { return an_.compare(p, q) < 0; });
  {
    // Each operand is simplified assuming the previous ones hold (And) or failed (Or).
    ScopeGuard scope(an_);
    for (const Expr& x : candidates) {
      Expr y = kept.empty() || !safe_under_any_context(x) ? x : rewrite(x);
      if (auto v = const_int(y)) {
        if (*v != identity) return make_bool(identity == 0);
        continue;
      }
      kept.push_back(y);
      an_.assume(is_and ? y : Not::make(y));
    }
  }
  // An earlier operand implied by the later ones (And) or implying them (Or) is redundant:
  // `x < 6 or x < 4` -> `x < 6`. Removed one at a time, each under the remaining others.
  for (size_t i = kept.size(); i-- > 0 && kept.size() > 1;) {
    ScopeGuard others(an_);
    for (size_t j = 0; j < kept.size(); ++j) {
      if (j != i) an_.assume(is_and ? kept[j] : Not::make(kept[j]));
    }
    if (const_int(rewrite(kept[i])) == identity) kept.erase(kept.begin() + i);
  }
  Expr result = build(kept);
  if (kept.size() > 1) {
    // `i >= n or j >= m` holds in the else branch of `if i < n and j < m`: decided case by
    // case over an assumed disjunction.
    std::optional<bool> decided = an_.by_cases([&]() -> std::optional<bool> {
      if (auto v = const_int(rewrite(result))) return *v != 0;
      return std::nullopt;
    });
    if (decided) return make_bool(*decided);
  }
  return result;
}

}  // namespace primjit::arith::detail
