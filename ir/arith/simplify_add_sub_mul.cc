// Rule family: Add, Sub, Mul.
// - floating: constant folding (float32/float64) and exact identities (x * 1.0, x - 0.0, ...);
//   commutative operands in canonical order, nothing more (floating + is not associative);
// - integer: both operands are collected into one ring form (constants folded, like terms
//   cancelled, atoms in canonical order) and rebuilt by from_linear(); quotient and remainder
//   terms recombine: `(x // d) * d + x % d` -> `x`.
#include <cmath>

#include "ir/arith/simplify_internal.h"

namespace primjit::arith::detail {
namespace {

int count_divmod(const Linear& l) {
  int n = 0;
  for (const auto& [atom, c] : l.terms) {
    NodeKind k = atom.kind();
    n += k == NodeKind::kFloorDiv || k == NodeKind::kFloorMod || k == NodeKind::kDiv ||
         k == NodeKind::kMod;
  }
  return n;
}

}  // namespace

Expr Rewriter::add_sub(NodeKind k, const Expr& a, const Expr& b) {
  DataType t = a.dtype();
  if (t.is_vector()) return vector_rule(k, a, b);
  if (t.is_floating()) {
    Expr r = float_arith(k, a, b);
    return r.defined() || k == NodeKind::kSub ? r : commute(k, a, b);
  }
  if (!t.is_integer()) return Expr();
  bool add = k == NodeKind::kAdd;
  auto x = const_int(a);
  auto y = const_int(b);
  if (x && y) return make_int(t, add ? *x + *y : *x - *y);
  if (!AnalyzerImpl::pure(a) || !AnalyzerImpl::pure(b)) {
    if (y && *y == 0) return a;
    if (add && x && *x == 0) return b;
    return Expr();
  }
  Linear l = an_.combine_ring(an_.linearize(a), 1, an_.linearize(b), add ? 1 : -1, t.bits());
  return an_.from_linear(recombine(std::move(l), t), t);
}

Expr Rewriter::mul(NodeKind k, const Expr& a, const Expr& b) {
  DataType t = a.dtype();
  if (t.is_vector()) return vector_rule(k, a, b);
  if (t.is_floating()) {
    Expr r = float_arith(k, a, b);
    return r.defined() ? r : commute(k, a, b);
  }
  if (!t.is_integer()) return Expr();
  auto x = const_int(a);
  auto y = const_int(b);
  if (x && y) return make_int(t, *fold_int(k, t, *x, *y));
  if (!AnalyzerImpl::pure(a) || !AnalyzerImpl::pure(b)) {
    if (y && *y == 1) return a;
    if (x && *x == 1) return b;
    return Expr();
  }
  return an_.from_linear(an_.linearize(Mul::make(a, b)), t);
}

// (a // d) * (c*d) + (a % d) * c  ->  a * c, and a - (a // d) * d  ->  a % d (also for the
// truncating pair): replaces a quotient term by `m*a - m*(a % d)` when that shrinks the sum.
Linear Rewriter::recombine(Linear l, DataType t) {
  int bits = t.bits();
  for (int round = 0; round < 4; ++round) {
    bool changed = false;
    for (size_t i = 0; i < l.terms.size() && !changed; ++i) {
      const Expr q = l.terms[i].first;
      i128 c = l.terms[i].second;
      Expr num, den;
      bool floor = true;
      if (const auto* fd = q.as<FloorDiv>()) {
        num = fd->a;
        den = fd->b;
      } else if (const auto* td = q.as<Div>()) {
        num = td->a;
        den = td->b;
        floor = false;
      } else {
        continue;
      }
      auto d = const_int(den);
      if (!d || *d <= 0 || c % *d != 0) continue;
      i128 m = c / *d;
      Expr rem = rewrite(floor ? FloorMod::make(num, den) : Mod::make(num, den));
      Linear only_q;
      only_q.terms.emplace_back(q, c);
      Linear cand = an_.combine_ring(l, 1, only_q, -1, bits);
      cand = an_.combine_ring(cand, 1, an_.linearize(num), m, bits);
      cand = an_.combine_ring(cand, 1, an_.linearize(rem), -m, bits);
      bool shorter = cand.terms.size() < l.terms.size() ||
                     (cand.terms.size() == l.terms.size() && count_divmod(cand) < count_divmod(l));
      if (shorter) {
        l = std::move(cand);
        changed = true;
      }
    }
    if (!changed) break;
  }
  return l;
}

Expr Rewriter::float_arith(NodeKind k, const Expr& a, const Expr& b) {
  DataType t = a.dtype();
  auto x = const_float(a);
  auto y = const_float(b);
  if (x && y && foldable_float(t)) {
    switch (k) {
      case NodeKind::kAdd:
        return FloatImm::make(t, round_to(t, *x + *y));
      case NodeKind::kSub:
        return FloatImm::make(t, round_to(t, *x - *y));
      case NodeKind::kMul:
        return FloatImm::make(t, round_to(t, *x * *y));
      case NodeKind::kDiv:
        if (*y != 0.0) return FloatImm::make(t, round_to(t, *x / *y));
        break;
      default:
        break;
    }
  }
  // Exact identities only: x - (+0.0), x + (-0.0), x * 1.0, x / 1.0.
  switch (k) {
    case NodeKind::kSub:
      if (y && *y == 0.0 && !std::signbit(*y)) return a;
      break;
    case NodeKind::kAdd:
      if (y && *y == 0.0 && std::signbit(*y)) return a;
      if (x && *x == 0.0 && std::signbit(*x)) return b;
      break;
    case NodeKind::kMul:
      if (y && *y == 1.0) return a;
      if (x && *x == 1.0) return b;
      break;
    case NodeKind::kDiv:
      if (y && *y == 1.0) return a;
      break;
    default:
      break;
  }
  return Expr();
}

// Floating Add, Mul, EQ and NE are commutative (not associative): their two operands are
// put in canonical order, nothing more.
Expr Rewriter::commute(NodeKind k, const Expr& a, const Expr& b) {
  if (an_.compare(b, a) < 0) return make_binary(k, b, a);
  return Expr();
}

}  // namespace primjit::arith::detail
