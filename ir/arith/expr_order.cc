// Ordering and structure of expressions for the analyzer and the rewriter: a deterministic
// total order (which fixes the canonical order of terms and operands), identity of
// expressions over the same variables, purity, and the operands of binary nodes.
#include <cstring>

#include "ir/arith/arith_internal.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"

namespace primjit::arith::detail {

std::pair<const Expr*, const Expr*> operands(const Expr& e) {
  switch (e.kind()) {
#define PRIMJIT_BINARY_CASE(Name) \
  case NodeKind::k##Name:         \
    return {&e.as<Name>()->a, &e.as<Name>()->b};
    PRIMJIT_BINARY_CASE(Add)
    PRIMJIT_BINARY_CASE(Sub)
    PRIMJIT_BINARY_CASE(Mul)
    PRIMJIT_BINARY_CASE(Div)
    PRIMJIT_BINARY_CASE(Mod)
    PRIMJIT_BINARY_CASE(FloorDiv)
    PRIMJIT_BINARY_CASE(FloorMod)
    PRIMJIT_BINARY_CASE(Min)
    PRIMJIT_BINARY_CASE(Max)
    PRIMJIT_BINARY_CASE(EQ)
    PRIMJIT_BINARY_CASE(NE)
    PRIMJIT_BINARY_CASE(LT)
    PRIMJIT_BINARY_CASE(LE)
    PRIMJIT_BINARY_CASE(GT)
    PRIMJIT_BINARY_CASE(GE)
    PRIMJIT_BINARY_CASE(And)
    PRIMJIT_BINARY_CASE(Or)
#undef PRIMJIT_BINARY_CASE
    default:
      return {nullptr, nullptr};
  }
}

namespace {

int rank(const Expr& e) {
  switch (e.kind()) {
    case NodeKind::kVar:
      return 0;
    case NodeKind::kIntImm:
    case NodeKind::kFloatImm:
    case NodeKind::kStringImm:
      return 2;
    default:
      return 1;
  }
}

template <typename T>
int three_way(const T& a, const T& b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

int compare_dtype(DataType a, DataType b) {
  if (int c = three_way(static_cast<int>(a.code()), static_cast<int>(b.code()))) return c;
  if (int c = three_way(a.bits(), b.bits())) return c;
  return three_way(a.lanes(), b.lanes());
}

uint64_t float_bits(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  return bits;
}

}  // namespace

int64_t AnalyzerImpl::ordinal(const Ref<Object>& object) {
  auto it = ordinals_.find(object.get());
  if (it != ordinals_.end()) return it->second.second;
  int64_t n = next_ordinal_++;
  ordinals_.emplace(object.get(), std::make_pair(object, n));
  return n;
}

void AnalyzerImpl::number_objects(const Expr& e) {
  post_order_visit(e, [&](const Ref<Object>& node) {
    if (node.kind() == NodeKind::kVar) {
      ordinal(node);
    } else if (const auto* load = node.as<BufferLoad>()) {
      ordinal(Ref<Object>(load->buffer));
    }
  });
}

int AnalyzerImpl::compare_buffer(const Buffer& a, const Buffer& b) {
  if (a.same_as(b)) return 0;
  if (int c = three_way(a->name, b->name)) return c;
  if (int c = compare_dtype(a->dtype, b->dtype)) return c;
  if (int c = compare(a->data, b->data)) return c;
  if (int c = three_way(a->shape.size(), b->shape.size())) return c;
  for (size_t i = 0; i < a->shape.size(); ++i) {
    if (int c = compare(a->shape[i], b->shape[i])) return c;
  }
  return three_way(ordinal(Ref<Object>(a)), ordinal(Ref<Object>(b)));
}

int AnalyzerImpl::compare(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return 0;
  if (int c = three_way(rank(a), rank(b))) return c;
  if (int c = three_way(static_cast<int>(a.kind()), static_cast<int>(b.kind()))) return c;
  if (int c = compare_dtype(a.dtype(), b.dtype())) return c;
  switch (a.kind()) {
    case NodeKind::kIntImm:
      return three_way(int_value(a.as<IntImm>()), int_value(b.as<IntImm>()));
    case NodeKind::kFloatImm:
      return three_way(float_bits(a.as<FloatImm>()->value), float_bits(b.as<FloatImm>()->value));
    case NodeKind::kStringImm:
      return three_way(a.as<StringImm>()->value, b.as<StringImm>()->value);
    case NodeKind::kVar: {
      const auto* x = a.as<VarNode>();
      const auto* y = b.as<VarNode>();
      if (int c = three_way(x->name, y->name)) return c;
      if (int c = three_way(x->is_size_var, y->is_size_var)) return c;
      if (int c = three_way(x->storage_scope, y->storage_scope)) return c;
      if (int c = compare_dtype(x->pointee, y->pointee)) return c;
      return three_way(ordinal(a), ordinal(b));
    }
    case NodeKind::kNot:
      return compare(a.as<Not>()->a, b.as<Not>()->a);
    case NodeKind::kSelect: {
      const auto* x = a.as<Select>();
      const auto* y = b.as<Select>();
      if (int c = compare(x->condition, y->condition)) return c;
      if (int c = compare(x->true_value, y->true_value)) return c;
      return compare(x->false_value, y->false_value);
    }
    case NodeKind::kCast:
      return compare(a.as<Cast>()->value, b.as<Cast>()->value);
    case NodeKind::kLet: {
      const auto* x = a.as<Let>();
      const auto* y = b.as<Let>();
      if (int c = compare(x->var, y->var)) return c;
      if (int c = compare(x->value, y->value)) return c;
      return compare(x->body, y->body);
    }
    case NodeKind::kBufferLoad: {
      const auto* x = a.as<BufferLoad>();
      const auto* y = b.as<BufferLoad>();
      if (int c = compare_buffer(x->buffer, y->buffer)) return c;
      if (int c = three_way(x->indices.size(), y->indices.size())) return c;
      for (size_t i = 0; i < x->indices.size(); ++i) {
        if (int c = compare(x->indices[i], y->indices[i])) return c;
      }
      return 0;
    }
    case NodeKind::kRamp: {
      const auto* x = a.as<Ramp>();
      const auto* y = b.as<Ramp>();
      if (int c = compare(x->base, y->base)) return c;
      return compare(x->stride, y->stride);
    }
    case NodeKind::kBroadcast:
      return compare(a.as<Broadcast>()->value, b.as<Broadcast>()->value);
    case NodeKind::kCall: {
      const auto* x = a.as<Call>();
      const auto* y = b.as<Call>();
      if (int c = three_way(x->op.defined(), y->op.defined())) return c;
      const std::string& nx = x->op.defined() ? x->op->name : x->callee->name;
      const std::string& ny = y->op.defined() ? y->op->name : y->callee->name;
      if (int c = three_way(nx, ny)) return c;
      if (int c = three_way(x->args.size(), y->args.size())) return c;
      for (size_t i = 0; i < x->args.size(); ++i) {
        if (int c = compare(x->args[i], y->args[i])) return c;
      }
      if (!x->op.defined() && !x->callee.same_as(y->callee)) {
        return three_way(ordinal(Ref<Object>(x->callee)), ordinal(Ref<Object>(y->callee)));
      }
      return 0;
    }
    default: {
      auto [xa, xb] = operands(a);
      auto [ya, yb] = operands(b);
      PRIMJIT_ICHECK(xa != nullptr) << "compare: unhandled kind " << node_kind_name(a.kind());
      if (int c = compare(*xa, *ya)) return c;
      return compare(*xb, *yb);
    }
  }
}

bool AnalyzerImpl::equal(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  if (a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
  switch (a.kind()) {
    case NodeKind::kIntImm:
      return a.as<IntImm>()->value == b.as<IntImm>()->value;
    case NodeKind::kFloatImm:
      return float_bits(a.as<FloatImm>()->value) == float_bits(b.as<FloatImm>()->value);
    case NodeKind::kStringImm:
      return a.as<StringImm>()->value == b.as<StringImm>()->value;
    case NodeKind::kVar:
      return false;  // distinct variables
    case NodeKind::kNot:
      return equal(a.as<Not>()->a, b.as<Not>()->a);
    case NodeKind::kSelect: {
      const auto* x = a.as<Select>();
      const auto* y = b.as<Select>();
      return equal(x->condition, y->condition) && equal(x->true_value, y->true_value) &&
             equal(x->false_value, y->false_value);
    }
    case NodeKind::kCast:
      return equal(a.as<Cast>()->value, b.as<Cast>()->value);
    case NodeKind::kLet: {
      const auto* x = a.as<Let>();
      const auto* y = b.as<Let>();
      return x->var.same_as(y->var) && equal(x->value, y->value) && equal(x->body, y->body);
    }
    case NodeKind::kBufferLoad: {
      const auto* x = a.as<BufferLoad>();
      const auto* y = b.as<BufferLoad>();
      if (!x->buffer.same_as(y->buffer) || x->indices.size() != y->indices.size()) return false;
      for (size_t i = 0; i < x->indices.size(); ++i) {
        if (!equal(x->indices[i], y->indices[i])) return false;
      }
      return true;
    }
    case NodeKind::kRamp: {
      const auto* x = a.as<Ramp>();
      const auto* y = b.as<Ramp>();
      return equal(x->base, y->base) && equal(x->stride, y->stride);
    }
    case NodeKind::kBroadcast:
      return equal(a.as<Broadcast>()->value, b.as<Broadcast>()->value);
    case NodeKind::kCall: {
      const auto* x = a.as<Call>();
      const auto* y = b.as<Call>();
      if (!x->op.same_as(y->op) || !x->callee.same_as(y->callee)) return false;
      if (x->args.size() != y->args.size()) return false;
      for (size_t i = 0; i < x->args.size(); ++i) {
        if (!equal(x->args[i], y->args[i])) return false;
      }
      return true;
    }
    default: {
      auto [xa, xb] = operands(a);
      auto [ya, yb] = operands(b);
      return xa != nullptr && equal(*xa, *ya) && equal(*xb, *yb);
    }
  }
}

bool AnalyzerImpl::pure(const Expr& e) { return call_effect_of(e) == CallEffect::kPure; }

}  // namespace primjit::arith::detail
