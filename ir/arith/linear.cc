// Linear (ring) forms of integer sums: collecting an expression into coefficient * atom terms
// modulo 2^bits, and combining forms exactly or in the ring (see arith_internal.h).
#include <algorithm>

#include "ir/arith/arith_internal.h"
#include "primjit/error.h"

namespace primjit::arith::detail {

Linear AnalyzerImpl::linearize(const Expr& e) {
  std::vector<std::pair<Expr, i128>> terms;
  i128 constant = 0;
  int bits = e.dtype().bits();
  collect(e, 1, bits, &terms, &constant);
  return normalize(std::move(terms), constant, bits);
}

void AnalyzerImpl::collect(const Expr& e, i128 scale, int bits,
                           std::vector<std::pair<Expr, i128>>* terms, i128* constant) {
  switch (e.kind()) {
    case NodeKind::kIntImm:
      *constant =
          wrap_signed(*constant + scale * wrap_signed(int_value(e.as<IntImm>()), bits), bits);
      return;
    case NodeKind::kAdd: {
      const auto* op = e.as<Add>();
      collect(op->a, scale, bits, terms, constant);
      collect(op->b, scale, bits, terms, constant);
      return;
    }
    case NodeKind::kSub: {
      const auto* op = e.as<Sub>();
      collect(op->a, scale, bits, terms, constant);
      collect(op->b, wrap_signed(-scale, bits), bits, terms, constant);
      return;
    }
    case NodeKind::kMul: {
      const auto* op = e.as<Mul>();
      if (const auto* c = op->b.as<IntImm>()) {
        collect(op->a, wrap_signed(scale * wrap_signed(int_value(c), bits), bits), bits, terms,
                constant);
        return;
      }
      if (const auto* c = op->a.as<IntImm>()) {
        collect(op->b, wrap_signed(scale * wrap_signed(int_value(c), bits), bits), bits, terms,
                constant);
        return;
      }
      Linear la = linearize(op->a);
      Linear lb = linearize(op->b);
      if (la.is_const()) {
        collect(op->b, wrap_signed(scale * la.constant, bits), bits, terms, constant);
        return;
      }
      if (lb.is_const()) {
        collect(op->a, wrap_signed(scale * lb.constant, bits), bits, terms, constant);
        return;
      }
      // A product of two non-constants is one monomial; single scaled atoms give their
      // coefficients to it: (x*2) * (y*3) is the monomial x*y with coefficient 6.
      i128 coeff = scale;
      Expr fa = op->a;
      Expr fb = op->b;
      if (la.terms.size() == 1 && la.constant == 0) {
        coeff = wrap_signed(coeff * la.terms[0].second, bits);
        fa = la.terms[0].first;
      }
      if (lb.terms.size() == 1 && lb.constant == 0) {
        coeff = wrap_signed(coeff * lb.terms[0].second, bits);
        fb = lb.terms[0].first;
      }
      if (coeff != 0) terms->emplace_back(monomial(fa, fb), coeff);
      return;
    }
    default:
      if (scale != 0) terms->emplace_back(e, scale);
      return;
  }
}

Expr AnalyzerImpl::monomial(const Expr& a, const Expr& b) {
  std::vector<Expr> factors;
  std::vector<Expr> stack = {b, a};
  while (!stack.empty()) {
    Expr f = stack.back();
    stack.pop_back();
    const auto* m = f.as<Mul>();
    if (m != nullptr && !m->a.as<IntImm>() && !m->b.as<IntImm>()) {
      stack.push_back(m->b);
      stack.push_back(m->a);
    } else {
      factors.push_back(f);
    }
  }
  std::stable_sort(factors.begin(), factors.end(),
                   [&](const Expr& x, const Expr& y) { return compare(x, y) < 0; });
  Expr result = factors[0];
  for (size_t i = 1; i < factors.size(); ++i) result = Mul::make(result, factors[i]);
  return result;
}

Linear AnalyzerImpl::normalize(std::vector<std::pair<Expr, i128>> terms, i128 constant, int bits) {
  std::stable_sort(terms.begin(), terms.end(),
                   [&](const auto& x, const auto& y) { return compare(x.first, y.first) < 0; });
  Linear out;
  out.constant = wrap_signed(constant, bits);
  for (auto& [atom, c] : terms) {
    if (!out.terms.empty() && equal(out.terms.back().first, atom)) {
      out.terms.back().second = wrap_signed(out.terms.back().second + c, bits);
      if (out.terms.back().second == 0) out.terms.pop_back();
    } else if (wrap_signed(c, bits) != 0) {
      out.terms.emplace_back(atom, wrap_signed(c, bits));
    }
  }
  return out;
}

std::optional<Linear> AnalyzerImpl::combine(const Linear& a, i128 sa, const Linear& b, i128 sb) {
  constexpr i128 kLimit = i128(1) << 100;
  auto scaled = [&](i128 c, i128 s, i128* out) {
    return !__builtin_mul_overflow(c, s, out) && abs128(*out) < kLimit;
  };
  Linear out;
  i128 ca, cb;
  if (!scaled(a.constant, sa, &ca) || !scaled(b.constant, sb, &cb)) return std::nullopt;
  out.constant = ca + cb;
  size_t i = 0, j = 0;
  while (i < a.terms.size() || j < b.terms.size()) {
    int order = i == a.terms.size()   ? 1
                : j == b.terms.size() ? -1
                                      : compare(a.terms[i].first, b.terms[j].first);
    i128 c = 0;
    Expr atom;
    if (order <= 0) {
      if (!scaled(a.terms[i].second, sa, &ca)) return std::nullopt;
      c += ca;
      atom = a.terms[i++].first;
    }
    if (order >= 0) {
      if (!scaled(b.terms[j].second, sb, &cb)) return std::nullopt;
      c += cb;
      atom = b.terms[j++].first;
    }
    if (c != 0) out.terms.emplace_back(std::move(atom), c);
  }
  return out;
}

Linear AnalyzerImpl::combine_ring(const Linear& a, i128 sa, const Linear& b, i128 sb, int bits) {
  std::vector<std::pair<Expr, i128>> terms;
  terms.reserve(a.terms.size() + b.terms.size());
  sa = wrap_signed(sa, bits);
  sb = wrap_signed(sb, bits);
  for (const auto& [atom, c] : a.terms) terms.emplace_back(atom, wrap_signed(c * sa, bits));
  for (const auto& [atom, c] : b.terms) terms.emplace_back(atom, wrap_signed(c * sb, bits));
  i128 constant =
      wrap_signed(wrap_signed(a.constant * sa, bits) + wrap_signed(b.constant * sb, bits), bits);
  return normalize(std::move(terms), constant, bits);
}

}  // namespace primjit::arith::detail
