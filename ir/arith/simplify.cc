// The rewriting simplifier's driver. One pass rewrites an expression bottom-up (children
// first, then the rules of the node's operator); AnalyzerImpl::simplify repeats passes until
// nothing changes (or a pass cap is hit, so it always terminates). The rules live in one file
// per rule family; simplify_internal.h lists them and says how to add one.
//
// This file holds what every family shares: the pass itself (rewrite()), the leaves, Let and
// loads, constant folding of integers, and rebuilding ring forms as expressions.
// Subexpressions holding calls with effects are never dropped, duplicated or reordered.
#include <algorithm>

#include "ir/arith/simplify_internal.h"
#include "primjit/error.h"
#include "primjit/ir/text.h"
#include "primjit/log.h"

namespace primjit::arith::detail {
namespace {

constexpr int kMaxPasses = 8;

bool uses_var(const Expr& e, const VarNode* var) {
  bool found = false;
  post_order_visit(e, [&](const Ref<Object>& node) {
    if (node.get() == var) found = true;
  });
  return found;
}

}  // namespace

Expr make_binary(NodeKind k, Expr a, Expr b) {
  switch (k) {
#define PRIMJIT_MAKE_CASE(Name) \
  case NodeKind::k##Name:       \
    return Name::make(std::move(a), std::move(b));
    PRIMJIT_MAKE_CASE(Add)
    PRIMJIT_MAKE_CASE(Sub)
    PRIMJIT_MAKE_CASE(Mul)
    PRIMJIT_MAKE_CASE(Div)
    PRIMJIT_MAKE_CASE(Mod)
    PRIMJIT_MAKE_CASE(FloorDiv)
    PRIMJIT_MAKE_CASE(FloorMod)
    PRIMJIT_MAKE_CASE(Min)
    PRIMJIT_MAKE_CASE(Max)
    PRIMJIT_MAKE_CASE(EQ)
    PRIMJIT_MAKE_CASE(NE)
    PRIMJIT_MAKE_CASE(LT)
    PRIMJIT_MAKE_CASE(LE)
    PRIMJIT_MAKE_CASE(GT)
    PRIMJIT_MAKE_CASE(GE)
    PRIMJIT_MAKE_CASE(And)
    PRIMJIT_MAKE_CASE(Or)
#undef PRIMJIT_MAKE_CASE
    default:
      PRIMJIT_INTERNAL_ERROR() << "make_binary: not a binary kind: " << node_kind_name(k);
  }
}

void flatten(NodeKind k, const Expr& e, std::vector<Expr>* out) {
  if (e.kind() == k) {
    auto [a, b] = operands(e);
    flatten(k, *a, out);
    flatten(k, *b, out);
  } else {
    out->push_back(e);
  }
}

// Integer constant folding; nullopt for division by zero.
std::optional<i128> fold_int(NodeKind k, DataType t, i128 x, i128 y) {
  int bits = t.bits();
  switch (k) {
    case NodeKind::kAdd:
      return x + y;
    case NodeKind::kSub:
      return x - y;
    case NodeKind::kMul:
      return wrap_signed(x, bits) * wrap_signed(y, bits);
    case NodeKind::kDiv:
      if (y == 0) return std::nullopt;
      return x / y;
    case NodeKind::kMod:
      if (y == 0) return std::nullopt;
      return x % y;
    case NodeKind::kFloorDiv:
      if (y == 0) return std::nullopt;
      return floor_div(x, y);
    case NodeKind::kFloorMod:
      if (y == 0) return std::nullopt;
      return floor_mod(x, y);
    case NodeKind::kMin:
      return std::min(x, y);
    case NodeKind::kMax:
      return std::max(x, y);
    case NodeKind::kAnd:
      return (x != 0) && (y != 0);
    case NodeKind::kOr:
      return (x != 0) || (y != 0);
    default:
      if (std::optional<bool> c = fold_compare(k, x, y)) return *c;
      return std::nullopt;
  }
}

// =============================================================================================
// One rewriting pass
// =============================================================================================

namespace {

// `fact` holds and is the negation of `cond`: a != b against a == b (either way round), or
// not cond. (Facts as inequalities decide order comparisons; an inequality a != b is not one.)
bool contradicts(const Expr& cond, const Expr& fact) {
  if (const auto* n = fact.as<Not>()) return AnalyzerImpl::equal(n->a, cond);
  const bool eq = cond.kind() == NodeKind::kEQ && fact.kind() == NodeKind::kNE;
  const bool ne = cond.kind() == NodeKind::kNE && fact.kind() == NodeKind::kEQ;
  if (!eq && !ne) return false;
  auto [ca, cb] = operands(cond);
  auto [fa, fb] = operands(fact);
  return AnalyzerImpl::equal(*ca, *fa) && AnalyzerImpl::equal(*cb, *fb);
}

}  // namespace

Expr Rewriter::rewrite(const Expr& e) {
  Expr r = visit_expr(e);
  DataType t = r.dtype();
  if (t.is_bool() && t.is_scalar() && !r.as<IntImm>() && !an_.known_true().empty() &&
      AnalyzerImpl::pure(r)) {
    for (const Expr& fact : an_.known_true()) {
      if (AnalyzerImpl::equal(r, fact)) return make_bool(true);
      if (contradicts(r, fact)) return make_bool(false);
    }
  }
  if (!r.same_as(e) && AnalyzerImpl::equal(r, e)) return e;
  return r;
}

bool Rewriter::rewrite_all(const std::vector<Expr>& in, std::vector<Expr>* out) {
  bool changed = false;
  out->reserve(in.size());
  for (const Expr& e : in) {
    out->push_back(rewrite(e));
    changed = changed || !out->back().same_as(e);
  }
  return changed;
}

Expr Rewriter::visit(const VarNode* op) {
  if (op->dtype.is_int_or_bool() && op->dtype.is_scalar()) {
    const AnalyzerImpl::VarInfo* vi = an_.info(op);
    if (vi != nullptr && vi->bound.is_point()) return make_int(op->dtype, vi->bound.lo);
  }
  return Expr(op);
}

Expr Rewriter::visit(const Let* op) {
  Expr value = rewrite(op->value);
  if (AnalyzerImpl::pure(value) &&
      (value.as<IntImm>() || value.as<FloatImm>() || value.as<VarNode>())) {
    return rewrite(substitute(op->body, VarMap{{op->var.get(), value}}));
  }
  Expr body;
  {
    ScopeGuard scope(an_);
    an_.bind_value(op->var, value);
    body = rewrite(op->body);
  }
  if (AnalyzerImpl::pure(value) && !uses_var(body, op->var.get())) return body;
  if (value.same_as(op->value) && body.same_as(op->body)) return Expr(op);
  return Let::make(op->var, value, body);
}

Expr Rewriter::visit(const BufferLoad* op) {
  std::vector<Expr> indices;
  bool changed = rewrite_all(op->indices, &indices);
  return changed ? BufferLoad::make(op->buffer, std::move(indices)) : Expr(op);
}

// =============================================================================================
// AnalyzerImpl entry points
// =============================================================================================

Expr simplify_passes(AnalyzerImpl& an, const Expr& e, int max_passes) {
  Expr current = e;
  for (int pass = 0; pass < max_passes; ++pass) {
    Expr next = Rewriter(an).rewrite(current);
    if (next.same_as(current)) return current;
    current = next;
  }
  // The cap was hit: with debug logging on, one more pass tells whether this is a fixed point.
  if (log_enabled(LogLevel::kDebug) && !Rewriter(an).rewrite(current).same_as(current)) {
    constexpr size_t kShown = 200;
    std::string text = print(current);
    if (text.size() > kShown) text = text.substr(0, kShown) + " ...";
    PRIMJIT_LOG_DEBUG << "simplify: stopped after " << max_passes
                      << " passes before a fixed point (another pass would still change the "
                         "result): "
                      << text;
  }
  return current;
}

Expr AnalyzerImpl::simplify(const Expr& e) {
  number_objects(e);
  return simplify_passes(*this, e, kMaxPasses);
}

Expr AnalyzerImpl::from_linear(const Linear& l, DataType t) {
  int bits = t.bits();
  // The most negative coefficient has no representable negation; it is added as it is.
  const i128 most_negative = -(i128(1) << (bits - 1));
  auto negative = [&](i128 c) { return c < 0 && c != most_negative; };
  auto scaled = [&](const Expr& atom, i128 c) {
    return c == 1 ? atom : Mul::make(atom, make_int(t, c));
  };
  if (l.terms.empty()) return make_int(t, l.constant);
  size_t first = l.terms.size();
  for (size_t i = 0; i < l.terms.size(); ++i) {
    if (!negative(l.terms[i].second)) {
      first = i;
      break;
    }
  }
  i128 constant = l.constant;
  Expr acc;
  if (first < l.terms.size()) {
    acc = scaled(l.terms[first].first, l.terms[first].second);
  } else if (constant > 0) {
    acc = make_int(t, constant);  // 5 - x
    constant = 0;
  } else {
    first = 0;
    acc = scaled(l.terms[0].first, l.terms[0].second);  // x * -1 - 3
  }
  for (size_t i = 0; i < l.terms.size(); ++i) {
    if (i == first) continue;
    const auto& [atom, c] = l.terms[i];
    acc = negative(c) ? Sub::make(acc, scaled(atom, -c)) : Add::make(acc, scaled(atom, c));
  }
  if (constant != 0) {
    acc = negative(constant) ? Sub::make(acc, make_int(t, -constant))
                             : Add::make(acc, make_int(t, constant));
  }
  return acc;
}

}  // namespace primjit::arith::detail
