// Rule family: division and remainder (FloorDiv, FloorMod, Div, Mod).
// Division by zero has a result (x / 0 is -1, x % 0 is x; see expr.h), so a rule may only
// drop or replace a division by a variable divisor when nonzero() proves the divisor nonzero.
// - floor division: constant quotients from bounds, nested divisions, terms of the numerator
//   the divisor divides pulled out of the quotient;
// - floor remainder: from bounds and congruences, terms the divisor divides dropped;
// - truncating division and remainder: become the floor forms when the numerator is
//   non-negative and the divisor positive.
#include <algorithm>

#include "ir/arith/simplify_internal.h"

namespace primjit::arith::detail {

// Floor division: the only integer rules that need the exact value of the numerator.
Expr Rewriter::floor_div_rule(NodeKind k, const Expr& a, const Expr& b) {
  DataType t = a.dtype();
  if (t.is_vector()) return vector_rule(k, a, b);
  if (!t.is_integer()) return Expr();
  auto x = const_int(a);
  auto y = const_int(b);
  if (y && *y == 0) return Expr();
  if (x && y) return make_int(t, *fold_int(k, t, *x, *y));
  if (!AnalyzerImpl::pure(a) || !AnalyzerImpl::pure(b)) {
    if (y && *y == 1) return a;
    return Expr();
  }
  if (!y) {
    if (AnalyzerImpl::equal(a, b) && nonzero(b)) return make_int(t, 1);  // 0 // 0 is -1
    if (x && *x == 0 && nonzero(b)) return make_int(t, 0);
    return symbolic_div_mod(k, a, b);
  }
  i128 d = *y;
  if (d == 1) return a;
  if (d == -1 && t.is_int()) return negate(a);
  if (x && *x == 0) return make_int(t, 0);
  if (d < 0) return Expr();
  Interval ba = an_.bound(a);
  if (ba.finite() && floor_div(ba.lo, d) == floor_div(ba.hi, d)) {
    return make_int(t, floor_div(ba.lo, d));
  }
  if (const auto* inner = a.as<FloorDiv>()) {
    auto c1 = const_int(inner->b);
    constexpr i128 kSmall = i128(1) << 62;  // keeps the product exact
    if (c1 && *c1 > 0 && *c1 < kSmall && d < kSmall &&
        interval_within(Interval::point(*c1 * d), dtype_range(t))) {
      return rewrite(FloorDiv::make(inner->a, make_int(t, *c1 * d)));
    }
  }
  Linear la = an_.linearize(a);
  if (!an_.fits(la, t)) return Expr();
  // a == d*q + r exactly, with q collecting the terms whose coefficient d divides.
  Linear q, r;
  for (const auto& [atom, c] : la.terms) {
    if (c % d == 0) {
      q.terms.emplace_back(atom, c / d);
    } else {
      r.terms.emplace_back(atom, c);
    }
  }
  q.constant = floor_div(la.constant, d);
  r.constant = floor_mod(la.constant, d);
  if (!an_.fits(r, t)) return Expr();
  Interval rb = an_.bound(r);
  if (rb.finite() && floor_div(rb.lo, d) == floor_div(rb.hi, d)) {
    q.constant += floor_div(rb.lo, d);
    return an_.from_linear(q, t);
  }
  if (q.terms.empty()) return Expr();
  Expr rest = FloorDiv::make(an_.from_linear(r, t), b);
  return rewrite(Add::make(an_.from_linear(q, t), rest));
}

Expr Rewriter::floor_mod_rule(NodeKind k, const Expr& a, const Expr& b) {
  DataType t = a.dtype();
  if (t.is_vector()) return vector_rule(k, a, b);
  if (!t.is_integer()) return Expr();
  auto x = const_int(a);
  auto y = const_int(b);
  if (y && *y == 0) return Expr();
  if (x && y) return make_int(t, *fold_int(k, t, *x, *y));
  if (!AnalyzerImpl::pure(a) || !AnalyzerImpl::pure(b)) return Expr();
  if (!y) {
    // x % x and 0 % b are 0 for every value, 0 included (x % 0 is x).
    if (AnalyzerImpl::equal(a, b) || (x && *x == 0)) return make_int(t, 0);
    return symbolic_div_mod(k, a, b);
  }
  i128 d = *y;
  if (d == 1 || d == -1) return make_int(t, 0);
  if (x && *x == 0) return make_int(t, 0);
  if (d < 0) return Expr();
  Interval ba = an_.bound(a);
  if (ba.finite() && floor_div(ba.lo, d) == floor_div(ba.hi, d)) {
    Linear la = an_.linearize(a);
    la.constant -= floor_div(ba.lo, d) * d;
    return an_.from_linear(la, t);
  }
  if (const auto* inner = a.as<FloorMod>()) {
    auto c1 = const_int(inner->b);
    if (c1 && *c1 > 0 && *c1 % d == 0) return rewrite(FloorMod::make(inner->a, b));
  }
  Congruence m = an_.congruence(a);
  if (m.coeff % d == 0) return make_int(t, floor_mod(m.base, d));  // also coeff 0: a constant
  Linear la = an_.linearize(a);
  // The remainder modulo d only depends on the terms d does not divide, when the ring form
  // is exact, or always when d divides 2^bits (wraparound preserves residues mod d).
  bool exact = an_.fits(la, t);
  bool power_of_two = (d & (d - 1)) == 0;
  if (!exact && !power_of_two) return Expr();
  Linear r;
  for (const auto& [atom, c] : la.terms) {
    if (c % d != 0) r.terms.emplace_back(atom, c);
  }
  r.constant = floor_mod(la.constant, d);
  Interval rb = an_.bound(r);
  if (rb.finite() && floor_div(rb.lo, d) == floor_div(rb.hi, d)) {
    r.constant -= floor_div(rb.lo, d) * d;
    return an_.from_linear(r, t);
  }
  bool smaller = r.terms.size() != la.terms.size() || r.constant != la.constant;
  if (smaller && (power_of_two || an_.fits(r, t))) {
    return rewrite(FloorMod::make(an_.from_linear(r, t), b));
  }
  return Expr();
}

Expr Rewriter::trunc_div_mod(NodeKind k, const Expr& a, const Expr& b) {
  DataType t = a.dtype();
  bool div = k == NodeKind::kDiv;
  if (t.is_vector()) return vector_rule(k, a, b);
  if (t.is_floating()) return div ? float_arith(k, a, b) : Expr();
  if (!t.is_integer()) return Expr();
  auto x = const_int(a);
  auto y = const_int(b);
  if (y && *y == 0) return Expr();
  if (x && y) return make_int(t, *fold_int(k, t, *x, *y));
  if (!AnalyzerImpl::pure(a) || !AnalyzerImpl::pure(b)) {
    if (div && y && *y == 1) return a;
    return Expr();
  }
  if (y && *y == 1) return div ? a : make_int(t, 0);
  if (y && *y == -1 && t.is_int()) return div ? negate(a) : make_int(t, 0);
  // 0 % b and b % b are 0 for every b; 0 / b and b / b need b != 0 (x / 0 is -1).
  if (x && *x == 0 && (!div || y || nonzero(b))) return make_int(t, 0);
  if (!y && AnalyzerImpl::equal(a, b) && (!div || nonzero(b))) {
    return make_int(t, div ? 1 : 0);
  }
  Interval ba = an_.bound(a);
  Interval bb = an_.bound(b);
  // With a >= 0 and b > 0, truncation and floor agree.
  if (ba.lo >= 0 && bb.lo >= 1) {
    return rewrite(div ? FloorDiv::make(a, b) : FloorMod::make(a, b));
  }
  if (y) {
    i128 m = *y < 0 ? -*y : *y;  // |a| < |d|: the quotient is 0, the remainder a
    if (ba.lo > -m && ba.hi < m) return div ? make_int(t, 0) : a;
  }
  return Expr();
}

// True when the value of every Mul node in `e` is the exact product of its operands' values.
bool Rewriter::exact_product(const Expr& e) {
  const auto* m = e.as<Mul>();
  if (m == nullptr) return true;
  return exact_product(m->a) && exact_product(m->b) &&
         interval_within(interval_mul(an_.bound(m->a), an_.bound(m->b)), dtype_range(e.dtype()));
}

// a // b and a % b for a divisor b = c * B (B not a literal) provably >= 1: a is split into
// b * q + r, q collecting the terms c * B divides, e.g. (i * n + j) // n -> i when 0 <= j < n.
// Division by zero (x // 0 is -1, x % 0 is x) never arises: b >= 1 is proven first.
Expr Rewriter::symbolic_div_mod(NodeKind k, const Expr& a, const Expr& b) {
  DataType t = a.dtype();
  if (!t.is_int() || !t.is_scalar() || decide(NodeKind::kGE, b, make_int(t, 1)) != true) {
    return Expr();
  }
  Linear lb = an_.linearize(b);
  Linear la = an_.linearize(a);
  if (lb.terms.size() != 1 || lb.constant != 0 || !an_.fits(lb, t) || !an_.fits(la, t)) {
    return Expr();
  }
  const auto& [divisor_atom, c] = lb.terms[0];
  if (c <= 0 || !exact_product(divisor_atom)) return Expr();
  std::vector<Expr> divisor_factors;
  flatten(NodeKind::kMul, divisor_atom, &divisor_factors);
  Linear q, r;
  r.constant = la.constant;
  for (const auto& [atom, e] : la.terms) {
    std::vector<Expr> factors;
    flatten(NodeKind::kMul, atom, &factors);
    bool divides = e % c == 0 && exact_product(atom);
    for (const Expr& f : divisor_factors) {
      auto it = std::find_if(factors.begin(), factors.end(),
                             [&](const Expr& g) { return AnalyzerImpl::equal(f, g); });
      if (it == factors.end()) {
        divides = false;
        break;
      }
      factors.erase(it);
    }
    Expr quotient;
    if (divides && !factors.empty()) {
      quotient = factors[0];
      for (size_t i = 1; i < factors.size(); ++i) quotient = Mul::make(quotient, factors[i]);
      divides = exact_product(quotient);
    }
    if (!divides) {
      r.terms.emplace_back(atom, e);
    } else if (quotient.defined()) {
      q = an_.combine_ring(q, 1, an_.linearize(quotient), e / c, t.bits());
    } else {
      q.constant += e / c;
    }
  }
  if (q.terms.empty() && q.constant == 0) return Expr();
  if (!an_.fits(r, t)) return Expr();
  Expr rest = an_.from_linear(r, t);
  bool within =
      decide(NodeKind::kGE, rest, make_int(t, 0)) == true && decide(NodeKind::kLT, rest, b) == true;
  if (k == NodeKind::kFloorMod) return within ? rest : rewrite(FloorMod::make(rest, b));
  if (within) return an_.from_linear(q, t);
  return rewrite(Add::make(an_.from_linear(q, t), FloorDiv::make(rest, b)));
}

bool Rewriter::nonzero(const Expr& b) {
  return decide(NodeKind::kNE, b, make_int(b.dtype(), 0)) == std::optional<bool>(true);
}

Expr Rewriter::negate(const Expr& a) {
  DataType t = a.dtype();
  return an_.from_linear(an_.combine_ring(Linear{}, 0, an_.linearize(a), -1, t.bits()), t);
}

}  // namespace primjit::arith::detail
