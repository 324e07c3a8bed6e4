// The public arithmetic analyzer (primjit/arith.h): a thin layer over AnalyzerImpl, whose
// concerns live in their own files: interval.cc (numbers and intervals), facts.cc (facts,
// scopes, forgetting, proofs), bound.cc (constant-integer bounds), congruence.cc (modular
// sets), linear.cc (ring forms), expr_order.cc (ordering and structure) and simplify*.cc
// (the rewriter).
#include <algorithm>

#include "ir/arith/arith_internal.h"
#include "primjit/error.h"

namespace primjit::arith {

// =============================================================================================
// Public API
// =============================================================================================

using detail::i128;
using detail::Interval;
using detail::kInf;

Analyzer::Analyzer() : impl_(std::make_unique<detail::AnalyzerImpl>()) {}
Analyzer::~Analyzer() = default;

Analyzer::Scope::Scope(Analyzer& analyzer) : analyzer_(analyzer) { analyzer_.impl_->push_scope(); }
Analyzer::Scope::~Scope() { analyzer_.impl_->pop_scope(); }

void Analyzer::bind(const Var& var, const Expr& min, const Expr& extent) {
  PRIMJIT_USER_CHECK(var.defined() && min.defined() && extent.defined())
      << "Analyzer::bind: variable, min and extent must be defined";
  PRIMJIT_USER_CHECK(var.dtype().is_integer() && var.dtype().is_scalar())
      << "Analyzer::bind: loop variable '" << var->name << "' must be a scalar integer, got "
      << var.dtype();
  PRIMJIT_USER_CHECK(min.dtype() == var.dtype() && extent.dtype() == var.dtype())
      << "Analyzer::bind: range of '" << var->name << "' must have its dtype " << var.dtype()
      << ", got min " << min.dtype() << " and extent " << extent.dtype();
  impl_->bind_range(var, impl_->simplify(min), impl_->simplify(extent));
}

void Analyzer::bind(const Var& var, const Expr& value) {
  PRIMJIT_USER_CHECK(var.defined() && value.defined())
      << "Analyzer::bind: variable and value must be defined";
  PRIMJIT_USER_CHECK(value.dtype() == var.dtype())
      << "Analyzer::bind: '" << var->name << "' has dtype " << var.dtype() << " but the value has "
      << value.dtype();
  impl_->bind_value(var, impl_->simplify(value));
}

void Analyzer::forget(const std::function<bool(const Expr&)>& stale) { impl_->forget(stale); }

void Analyzer::assume(const Expr& condition) {
  PRIMJIT_USER_CHECK(condition.defined() && condition.dtype().is_bool())
      << "Analyzer::assume: needs a bool condition";
  impl_->assume(impl_->simplify(condition));
}

ConstIntBound Analyzer::const_int_bound(const Expr& expr) {
  PRIMJIT_USER_CHECK(expr.defined()) << "Analyzer::const_int_bound: undefined expression";
  Interval r = impl_->bound(expr);
  constexpr i128 kMin = ConstIntBound::kNegInf;
  constexpr i128 kMax = ConstIntBound::kPosInf;
  ConstIntBound out;
  // Ends beyond int64 are unbounded; a lower end above INT64_MAX - 1 is lowered to it.
  if (r.lo > kMin) out.min = static_cast<int64_t>(std::min(r.lo, kMax - 1));
  if (r.hi < kMax) out.max = static_cast<int64_t>(std::max(r.hi, kMin + 1));
  return out;
}

ModularSet Analyzer::modular_set(const Expr& expr) {
  PRIMJIT_USER_CHECK(expr.defined()) << "Analyzer::modular_set: undefined expression";
  detail::Congruence m = impl_->congruence(expr);
  constexpr i128 kMax = std::numeric_limits<int64_t>::max();
  if (m.coeff == 0) {
    if (m.base < std::numeric_limits<int64_t>::min() || m.base > kMax) return {};
    return {0, static_cast<int64_t>(m.base)};
  }
  if (m.coeff > kMax) {
    // Any divisor of the modulus is still a true congruence.
    m.coeff = detail::gcd(m.coeff, i128(1) << 62);
    m.base = detail::floor_mod(m.base, m.coeff);
  }
  return {static_cast<int64_t>(m.coeff), static_cast<int64_t>(m.base)};
}

Expr Analyzer::simplify(const Expr& expr) {
  PRIMJIT_USER_CHECK(expr.defined()) << "Analyzer::simplify: undefined expression";
  return impl_->simplify(expr);
}

bool Analyzer::can_prove(const Expr& condition) {
  PRIMJIT_USER_CHECK(condition.defined() && condition.dtype().is_bool())
      << "Analyzer::can_prove: needs a bool condition";
  Expr r = impl_->simplify(condition);
  if (const auto* b = r.as<Broadcast>()) r = b->value;
  const auto* imm = r.as<IntImm>();
  return imm != nullptr && imm->value != 0;
}

bool Analyzer::can_prove_equal(const Expr& a, const Expr& b) {
  PRIMJIT_USER_CHECK(a.defined() && b.defined()) << "Analyzer::can_prove_equal: undefined";
  if (a.dtype() != b.dtype()) return false;
  if (a.dtype().is_int_or_bool()) return can_prove(EQ::make(a, b));
  Expr sa = impl_->simplify(a);
  Expr sb = impl_->simplify(b);
  return detail::AnalyzerImpl::equal(sa, sb) && detail::AnalyzerImpl::pure(sa);
}

Expr simplify(const Expr& expr) {
  Analyzer analyzer;
  return analyzer.simplify(expr);
}

}  // namespace primjit::arith
