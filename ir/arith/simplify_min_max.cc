// Rule family: Min, Max. Nested operations of the same kind are flattened, constants folded,
// operands another operand provably dominates dropped, and the rest sorted canonically.
// Floating min/max fold constants (neither NaN nor two zeros, whose sign would matter) and
// min(x, x).
#include <algorithm>
#include <cmath>

#include "ir/arith/simplify_internal.h"

namespace primjit::arith::detail {

Expr Rewriter::min_max(NodeKind k, const Expr& a, const Expr& b) {
  DataType t = a.dtype();
  bool is_min = k == NodeKind::kMin;
  if (t.is_vector()) return vector_rule(k, a, b);
  if (t.is_floating()) {
    auto x = const_float(a);
    auto y = const_float(b);
    if (x && y && !std::isnan(*x) && !std::isnan(*y) && !(*x == 0.0 && *y == 0.0)) {
      return FloatImm::make(t, is_min ? std::min(*x, *y) : std::max(*x, *y));
    }
    if (AnalyzerImpl::pure(a) && AnalyzerImpl::equal(a, b)) return a;
    return Expr();
  }
  if (!t.is_integer()) return Expr();
  auto x = const_int(a);
  auto y = const_int(b);
  if (x && y) return make_int(t, *fold_int(k, t, *x, *y));
  if (!AnalyzerImpl::pure(a) || !AnalyzerImpl::pure(b)) return Expr();
  std::vector<Expr> ops;
  flatten(k, a, &ops);
  flatten(k, b, &ops);
  std::optional<i128> folded;
  std::vector<Expr> rest;
  for (const Expr& e : ops) {
    if (auto v = const_int(e)) {
      folded = folded ? (is_min ? std::min(*folded, *v) : std::max(*folded, *v)) : *v;
    } else {
      rest.push_back(e);
    }
  }
  if (folded) rest.push_back(make_int(t, *folded));
  // Drop every operand that another kept operand provably dominates.
  std::vector<bool> dropped(rest.size(), false);
  for (size_t j = 0; j < rest.size(); ++j) {
    for (size_t i = 0; i < rest.size() && !dropped[j]; ++i) {
      if (i == j || dropped[i]) continue;
      if (AnalyzerImpl::equal(rest[i], rest[j])) {
        dropped[j] = i < j;
        continue;
      }
      const Expr& lo = is_min ? rest[i] : rest[j];
      const Expr& hi = is_min ? rest[j] : rest[i];
      if (decide(NodeKind::kLE, lo, hi) == true) dropped[j] = true;
    }
  }
  std::vector<Expr> kept;
  for (size_t j = 0; j < rest.size(); ++j) {
    if (!dropped[j]) kept.push_back(rest[j]);
  }
  std::stable_sort(kept.begin(), kept.end(),
                   [&](const Expr& p, const Expr& q) { return an_.compare(p, q) < 0; });
  Expr result = kept[0];
  for (size_t i = 1; i < kept.size(); ++i) result = make_binary(k, result, kept[i]);
  return result;
}

}  // namespace primjit::arith::detail
