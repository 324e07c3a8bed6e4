// Congruences (modular sets): what an integer expression's value is known to be modulo some
// coefficient, from literals, multiplications, divisions and the variables' bound values.
#include <algorithm>

#include "ir/arith/arith_internal.h"
#include "primjit/error.h"

namespace primjit::arith::detail {

namespace {

Congruence congruence_union(const Congruence& a, const Congruence& b) {
  i128 g = gcd(gcd(a.coeff, b.coeff), a.base - b.base);
  return {g, g == 0 ? a.base : floor_mod(a.base, g)};
}

constexpr int kMaxCongruenceDepth = 8;

}  // namespace

Congruence AnalyzerImpl::congruence(const Expr& e) { return congruence_impl(e, 0); }

Congruence AnalyzerImpl::congruence(const Linear& l, DataType t) { return congruence_of(l, t, 0); }

Congruence AnalyzerImpl::congruence_impl(const Expr& e, int depth) {
  if (!is_int_scalar(e.dtype()) || depth > kMaxCongruenceDepth) return {};
  return congruence_of(linearize(e), e.dtype(), depth);
}

Congruence AnalyzerImpl::congruence_of(const Linear& l, DataType t, int depth) {
  constexpr i128 kLimit = i128(1) << 100;
  i128 g = 0;
  i128 base = l.constant;
  for (const auto& [atom, c] : l.terms) {
    Congruence m = atom_congruence(atom, depth);
    i128 step;
    if (__builtin_mul_overflow(abs128(c), m.coeff, &step) || step >= kLimit) step = abs128(c);
    g = gcd(g, step);
    i128 add;
    if (__builtin_mul_overflow(c, m.base, &add) || abs128(add) >= kLimit) return {};
    base += add;
    if (g != 0) base = floor_mod(base, g);
    if (abs128(base) >= kLimit) return {};
  }
  bool exact = fits(l, t);
  if (g == 0) {
    // Every atom is a known constant: the value is the ring value in the dtype's range.
    i128 v = exact ? base : int_value(make_int(t, base).as<IntImm>());
    return {0, v};
  }
  if (!exact) g = gcd(g, i128(1) << t.bits());  // wraparound keeps congruences mod 2^bits
  return {g, floor_mod(base, g)};
}

Congruence AnalyzerImpl::atom_congruence(const Expr& atom, int depth) {
  switch (atom.kind()) {
    case NodeKind::kVar: {
      const VarInfo* vi = info(atom.as<VarNode>());
      if (vi == nullptr) return {};
      if (vi->bound.is_point()) return {0, vi->bound.lo};
      if (vi->value.defined()) return congruence_impl(vi->value, depth + 1);
      return {};
    }
    case NodeKind::kMul: {
      const auto* op = atom.as<Mul>();
      Congruence a = congruence_impl(op->a, depth + 1);
      Congruence b = congruence_impl(op->b, depth + 1);
      constexpr i128 kLimit = i128(1) << 60;
      for (i128 v : {a.coeff, a.base, b.coeff, b.base}) {
        if (abs128(v) >= kLimit) return {};
      }
      Congruence r{gcd(gcd(a.coeff * b.coeff, a.coeff * b.base), b.coeff * a.base),
                   a.base * b.base};
      Interval product = interval_mul(bound(op->a), bound(op->b));
      if (!interval_within(product, dtype_range(atom.dtype()))) {
        r.coeff = gcd(r.coeff, i128(1) << atom.dtype().bits());
      }
      if (r.coeff != 0) r.base = floor_mod(r.base, r.coeff);
      return r;
    }
    case NodeKind::kFloorMod: {
      const auto* op = atom.as<FloorMod>();
      const auto* d = op->b.as<IntImm>();
      if (d == nullptr || int_value(d) <= 0) return {};
      Congruence a = congruence_impl(op->a, depth + 1);
      if (a.coeff == 0) return {0, floor_mod(a.base, int_value(d))};
      i128 g = gcd(a.coeff, int_value(d));
      return {g, floor_mod(a.base, g)};
    }
    case NodeKind::kFloorDiv: {
      const auto* op = atom.as<FloorDiv>();
      const auto* d = op->b.as<IntImm>();
      if (d == nullptr || int_value(d) <= 0) return {};
      i128 dv = int_value(d);
      Congruence a = congruence_impl(op->a, depth + 1);
      if (a.coeff == 0) return {0, floor_div(a.base, dv)};
      if (a.coeff % dv == 0) return {a.coeff / dv, floor_div(a.base, dv)};
      return {};
    }
    case NodeKind::kMin: {
      const auto* op = atom.as<Min>();
      return congruence_union(congruence_impl(op->a, depth + 1), congruence_impl(op->b, depth + 1));
    }
    case NodeKind::kMax: {
      const auto* op = atom.as<Max>();
      return congruence_union(congruence_impl(op->a, depth + 1), congruence_impl(op->b, depth + 1));
    }
    case NodeKind::kSelect: {
      const auto* op = atom.as<Select>();
      return congruence_union(congruence_impl(op->true_value, depth + 1),
                              congruence_impl(op->false_value, depth + 1));
    }
    case NodeKind::kLet: {
      const auto* op = atom.as<Let>();
      push_scope();
      bind_value(op->var, op->value);
      Congruence r = congruence_impl(op->body, depth + 1);
      pop_scope();
      return r;
    }
    default:
      return {};
  }
}

}  // namespace primjit::arith::detail
