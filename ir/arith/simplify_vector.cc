// Rule family: vectors. Broadcast op Broadcast is the scalar operation broadcast; Ramp +, -, *
// with a Broadcast or another Ramp folds into one Ramp; a Ramp of stride 0 is a Broadcast.
#include "ir/arith/simplify_internal.h"

namespace primjit::arith::detail {

Expr Rewriter::visit(const Ramp* op) {
  Expr base = rewrite(op->base);
  Expr stride = rewrite(op->stride);
  if (auto s = const_int(stride); s && *s == 0) return Broadcast::make(base, op->lanes);
  if (base.same_as(op->base) && stride.same_as(op->stride)) return Expr(op);
  return Ramp::make(base, stride, op->lanes);
}

Expr Rewriter::visit(const Broadcast* op) {
  Expr v = rewrite(op->value);
  return v.same_as(op->value) ? Expr(op) : Broadcast::make(v, op->lanes);
}

Expr Rewriter::vector_rule(NodeKind k, const Expr& a, const Expr& b) {
  int lanes = a.dtype().lanes();
  const auto* ba = a.as<Broadcast>();
  const auto* bb = b.as<Broadcast>();
  if (ba && bb) return rewrite(Broadcast::make(make_binary(k, ba->value, bb->value), lanes));
  if (!a.dtype().is_integer()) return Expr();
  const auto* ra = a.as<Ramp>();
  const auto* rb = b.as<Ramp>();
  auto zero = [](const Expr& e) { return const_int_lanes(e) == i128(0); };
  auto one = [](const Expr& e) { return const_int_lanes(e) == i128(1); };
  switch (k) {
    case NodeKind::kAdd:
      if (ra && bb) return rewrite(Ramp::make(Add::make(ra->base, bb->value), ra->stride, lanes));
      if (ba && rb) return rewrite(Ramp::make(Add::make(ba->value, rb->base), rb->stride, lanes));
      if (ra && rb) {
        return rewrite(
            Ramp::make(Add::make(ra->base, rb->base), Add::make(ra->stride, rb->stride), lanes));
      }
      if (zero(b)) return a;
      if (zero(a)) return b;
      return Expr();
    case NodeKind::kSub:
      if (ra && bb) return rewrite(Ramp::make(Sub::make(ra->base, bb->value), ra->stride, lanes));
      if (ba && rb) {
        Expr zero_s = make_int(rb->stride.dtype(), 0);
        return rewrite(
            Ramp::make(Sub::make(ba->value, rb->base), Sub::make(zero_s, rb->stride), lanes));
      }
      if (ra && rb) {
        return rewrite(
            Ramp::make(Sub::make(ra->base, rb->base), Sub::make(ra->stride, rb->stride), lanes));
      }
      if (zero(b)) return a;
      return Expr();
    case NodeKind::kMul:
      if (ra && bb) {
        return rewrite(
            Ramp::make(Mul::make(ra->base, bb->value), Mul::make(ra->stride, bb->value), lanes));
      }
      if (ba && rb) {
        return rewrite(
            Ramp::make(Mul::make(ba->value, rb->base), Mul::make(ba->value, rb->stride), lanes));
      }
      if (one(b)) return a;
      if (one(a)) return b;
      return Expr();
    default:
      return Expr();
  }
}

}  // namespace primjit::arith::detail
