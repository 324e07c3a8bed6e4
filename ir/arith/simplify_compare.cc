// Rule family: comparisons (EQ, NE, LT, LE, GT, GE).
// An integer comparison is decided, when it can be, from the bounds of the exact difference
// of its operands, the assumed facts and congruences (decide()), or else case by case over an
// assumed disjunction (AnalyzerImpl::by_cases); otherwise it is normalized:
// terms to the side where their coefficient is positive, the constant to the right, common
// factors divided out. Boolean == and != reduce to the operand or its negation. Floating
// comparisons fold constants; floating == and != put their operands in canonical order.
#include "ir/arith/simplify_internal.h"

namespace primjit::arith::detail {

Expr Rewriter::compare(NodeKind k, const Expr& a, const Expr& b) {
  DataType t = a.dtype();
  if (t.is_vector()) return vector_rule(k, a, b);
  if (t.is_floating()) {
    auto x = const_float(a);
    auto y = const_float(b);
    if (x && y) return make_bool(*fold_compare(k, *x, *y));
    return k == NodeKind::kEQ || k == NodeKind::kNE ? commute(k, a, b) : Expr();
  }
  if (!t.is_int_or_bool()) return Expr();
  auto x = const_int(a);
  auto y = const_int(b);
  if (x && y) return make_bool(*fold_int(k, t, *x, *y) != 0);
  if (!AnalyzerImpl::pure(a) || !AnalyzerImpl::pure(b)) return Expr();
  if (t.is_bool()) return compare_bool(k, a, b);
  if (auto r = decide(k, a, b)) return make_bool(*r);
  if (auto r = an_.by_cases([&] { return decide(k, a, b); })) return make_bool(*r);
  return normalize_compare(k, a, b);
}

Expr Rewriter::compare_bool(NodeKind k, const Expr& a, const Expr& b) {
  if (k != NodeKind::kEQ && k != NodeKind::kNE) return Expr();
  bool eq = k == NodeKind::kEQ;
  if (AnalyzerImpl::equal(a, b)) return make_bool(eq);
  if (auto y = const_int(b)) return (eq == (*y != 0)) ? a : rewrite(Not::make(a));
  if (auto x = const_int(a)) return (eq == (*x != 0)) ? b : rewrite(Not::make(b));
  if (an_.compare(b, a) < 0) return make_binary(k, b, a);
  return Expr();
}

std::optional<bool> Rewriter::decide(NodeKind k, const Expr& a, const Expr& b) {
  DataType t = a.dtype();
  if (AnalyzerImpl::equal(a, b)) {
    return k == NodeKind::kEQ || k == NodeKind::kLE || k == NodeKind::kGE;
  }
  Linear la = an_.linearize(a);
  Linear lb = an_.linearize(b);
  bool exact = an_.fits(la, t) && an_.fits(lb, t);
  if (k == NodeKind::kEQ || k == NodeKind::kNE) {
    // Equality is a ring property: a == b exactly when a - b is 0 modulo 2^bits.
    Linear d = an_.combine_ring(la, 1, lb, -1, t.bits());
    std::optional<bool> eq;
    if (d.is_const()) {
      eq = d.constant == 0;
    } else {
      Congruence m = an_.congruence(d, t);
      if (m.coeff == 0) {
        eq = m.base == 0;
      } else if (m.base != 0) {
        eq = false;
      }
    }
    if (!eq && exact) {
      if (std::optional<Linear> dz = an_.combine(la, 1, lb, -1)) {
        if (nonneg(*dz, 1, -1) || nonneg(*dz, -1, -1)) {
          eq = false;
        } else if (nonneg(*dz, 1, 0) && nonneg(*dz, -1, 0)) {
          eq = true;
        }
      }
    }
    if (!eq) return std::nullopt;
    return k == NodeKind::kEQ ? *eq : !*eq;
  }
  if (!exact) {
    // b == a + D in the ring; when a's value plus D's exact value cannot leave the dtype,
    // b - a == D exactly (x*2 < x*2 + 1: x*2 is even, so adding 1 never wraps).
    for (bool swap : {false, true}) {
      const Expr& base = swap ? b : a;
      Linear d = swap ? an_.combine_ring(la, 1, lb, -1, t.bits())
                      : an_.combine_ring(lb, 1, la, -1, t.bits());
      Interval sum = interval_add(refined_bound(base), an_.bound(d));
      if (!interval_within(sum, dtype_range(t))) continue;
      // Now val(other) - val(base) == d: express the comparison on a - b.
      std::optional<Linear> dz = an_.combine(Linear{}, 0, d, swap ? 1 : -1);
      if (dz) return decide_exact(k, *dz);
    }
    Interval x = an_.bound(a);
    Interval y = an_.bound(b);
    switch (k) {
      case NodeKind::kLT:
        if (x.hi < y.lo) return true;
        if (x.lo >= y.hi) return false;
        break;
      case NodeKind::kLE:
        if (x.hi <= y.lo) return true;
        if (x.lo > y.hi) return false;
        break;
      case NodeKind::kGT:
        if (x.lo > y.hi) return true;
        if (x.hi <= y.lo) return false;
        break;
      case NodeKind::kGE:
        if (x.lo >= y.hi) return true;
        if (x.hi < y.lo) return false;
        break;
      default:
        break;
    }
    return std::nullopt;
  }
  std::optional<Linear> dz = an_.combine(la, 1, lb, -1);
  if (!dz) return std::nullopt;
  return decide_exact(k, *dz);
}

std::optional<bool> Rewriter::decide_exact(NodeKind k, const Linear& dz) {
  switch (k) {
    case NodeKind::kEQ:
      if (dz.is_const()) return dz.constant == 0;
      if (nonneg(dz, 1, -1) || nonneg(dz, -1, -1)) return false;
      break;
    case NodeKind::kNE:
      if (dz.is_const()) return dz.constant != 0;
      if (nonneg(dz, 1, -1) || nonneg(dz, -1, -1)) return true;
      break;
    case NodeKind::kLT:  // a - b <= -1
      if (nonneg(dz, -1, -1)) return true;
      if (nonneg(dz, 1, 0)) return false;
      break;
    case NodeKind::kLE:  // a - b <= 0
      if (nonneg(dz, -1, 0)) return true;
      if (nonneg(dz, 1, -1)) return false;
      break;
    case NodeKind::kGT:  // a - b >= 1
      if (nonneg(dz, 1, -1)) return true;
      if (nonneg(dz, -1, 0)) return false;
      break;
    case NodeKind::kGE:  // a - b >= 0
      if (nonneg(dz, 1, 0)) return true;
      if (nonneg(dz, -1, -1)) return false;
      break;
    default:
      break;
  }
  return std::nullopt;
}

Interval Rewriter::refined_bound(const Expr& e) {
  Interval r = an_.bound(e);
  if (!r.finite() || !e.dtype().is_integer() || !e.dtype().is_scalar()) return r;
  Congruence m = an_.congruence(e);
  if (m.coeff == 0) return interval_intersect(r, Interval::point(m.base));
  if (m.coeff > 1) {
    r.lo += floor_mod(m.base - r.lo, m.coeff);
    r.hi -= floor_mod(r.hi - m.base, m.coeff);
  }
  return r;
}

bool Rewriter::nonneg(const Linear& l, i128 sign, i128 add) {
  std::optional<Linear> s = an_.combine(Linear{}, 0, l, sign);
  if (!s) return false;
  s->constant += add;
  return an_.prove_nonneg(*s);
}

// Canonical form of an undecided integer comparison. Equalities are rewritten in the ring
// (`x + 3 == y` -> `x == y - 3`, first term positive); order comparisons only when both
// sides are exact: terms go to the side where their coefficient is positive, the constant
// to the right (or alone on the left), and common factors are divided out.
Expr Rewriter::normalize_compare(NodeKind k, const Expr& a, const Expr& b) {
  DataType t = a.dtype();
  int bits = t.bits();
  Linear la = an_.linearize(a);
  Linear lb = an_.linearize(b);
  Linear lhs, rhs;
  if (k == NodeKind::kEQ || k == NodeKind::kNE) {
    Linear d = an_.combine_ring(la, 1, lb, -1, bits);
    if (d.is_const()) return Expr();
    // -2^(bits-1) is its own negation: it stays on the left and does not pick the sign.
    const i128 self_negating = -(i128(1) << (bits - 1));
    for (const auto& term : d.terms) {
      if (term.second == self_negating) continue;
      if (term.second < 0) d = an_.combine_ring(Linear{}, 0, d, -1, bits);
      break;
    }
    for (const auto& [atom, c] : d.terms) {
      if (c > 0 || c == self_negating) {
        lhs.terms.emplace_back(atom, c);
      } else {
        rhs.terms.emplace_back(atom, -c);
      }
    }
    rhs.constant = -d.constant;
  } else {
    if (!an_.fits(la, t) || !an_.fits(lb, t)) return Expr();
    std::optional<Linear> dz = an_.combine(la, 1, lb, -1);
    if (!dz || dz->is_const()) return Expr();
    // terms(d) <= c for LT/LE, terms(d) >= c for GT/GE.
    bool upper = k == NodeKind::kLT || k == NodeKind::kLE;
    i128 c = (k == NodeKind::kLT ? -1 : k == NodeKind::kGT ? 1 : 0) - dz->constant;
    dz->constant = 0;
    i128 g = 0;
    for (const auto& term : dz->terms) g = gcd(g, term.second);
    if (g > 1) {
      for (auto& term : dz->terms) term.second /= g;
      c = upper ? floor_div(c, g) : -floor_div(-c, g);
    }
    i128 r = k == NodeKind::kLT ? c + 1 : (k == NodeKind::kGT ? c - 1 : c);
    Linear positive, negative;
    for (const auto& [atom, coeff] : dz->terms) {
      if (coeff > 0) {
        positive.terms.emplace_back(atom, coeff);
      } else {
        negative.terms.emplace_back(atom, -coeff);
      }
    }
    if (!positive.terms.empty()) {
      lhs = std::move(positive);
      rhs = std::move(negative);
      rhs.constant = r;
    } else {
      lhs.constant = -r;
      rhs = std::move(negative);
    }
    if (!an_.fits(lhs, t) || !an_.fits(rhs, t)) return Expr();
  }
  lhs = an_.combine_ring(Linear{}, 0, lhs, 1, bits);
  rhs = an_.combine_ring(Linear{}, 0, rhs, 1, bits);
  return make_binary(k, an_.from_linear(lhs, t), an_.from_linear(rhs, t));
}

}  // namespace primjit::arith::detail
