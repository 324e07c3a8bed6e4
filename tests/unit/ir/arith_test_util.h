// Helpers shared by the tests of primjit::arith (arith_*_test.cc): dtypes, a compact way to
// write expressions, printing for failure messages, and exact equality.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "primjit/ir.h"
#include "primjit/ir/structural.h"

namespace primjit::test {

inline const DataType i8 = DataType::Int(8);
inline const DataType u8 = DataType::UInt(8);
inline const DataType i32 = DataType::Int(32);
inline const DataType i64 = DataType::Int(64);
inline const DataType f16 = DataType::Float(16);
inline const DataType f32 = DataType::Float(32);
inline const DataType f64 = DataType::Float(64);
inline const DataType b1 = DataType::Bool();

// ---------------------------------------------------------------------------------------------
// A compact way to write expressions: E wraps an Expr; an int literal adopts the dtype of the
// other operand.
// ---------------------------------------------------------------------------------------------

struct E {
  Expr e;
  std::optional<int64_t> literal;  // an int literal not yet given a dtype

  E(Expr x) : e(std::move(x)) {}              // NOLINT: implicit on purpose
  E(Var v) : e(std::move(v)) {}               // NOLINT
  E(int v) : e(make_const(v)), literal(v) {}  // NOLINT
  operator Expr() const { return e; }         // NOLINT
  Expr as(DataType t) const { return literal ? make_const(t, static_cast<double>(*literal)) : e; }
};

template <typename Node>
E bin(const E& a, const E& b) {
  if (a.literal && !b.literal) return Node::make(a.as(b.e.dtype()), b.e);
  if (b.literal && !a.literal) return Node::make(a.e, b.as(a.e.dtype()));
  return Node::make(a.e, b.e);
}
inline E operator+(const E& a, const E& b) { return bin<Add>(a, b); }
inline E operator-(const E& a, const E& b) { return bin<Sub>(a, b); }
inline E operator*(const E& a, const E& b) { return bin<Mul>(a, b); }
inline E operator/(const E& a, const E& b) { return bin<Div>(a, b); }
inline E operator<(const E& a, const E& b) { return bin<LT>(a, b); }
inline E operator<=(const E& a, const E& b) { return bin<LE>(a, b); }
inline E operator>(const E& a, const E& b) { return bin<GT>(a, b); }
inline E operator>=(const E& a, const E& b) { return bin<GE>(a, b); }
inline E operator==(const E& a, const E& b) { return bin<EQ>(a, b); }
inline E operator!=(const E& a, const E& b) { return bin<NE>(a, b); }
inline E operator&&(const E& a, const E& b) { return bin<And>(a, b); }
inline E operator||(const E& a, const E& b) { return bin<Or>(a, b); }
inline E operator!(const E& a) { return Not::make(a.e); }
inline E fdiv(const E& a, const E& b) { return bin<FloorDiv>(a, b); }
inline E fmod(const E& a, const E& b) { return bin<FloorMod>(a, b); }
inline E tdiv(const E& a, const E& b) { return bin<Div>(a, b); }
inline E tmod(const E& a, const E& b) { return bin<Mod>(a, b); }
inline E min(const E& a, const E& b) { return bin<Min>(a, b); }
inline E max(const E& a, const E& b) { return bin<Max>(a, b); }
inline E select(const E& c, const E& t, const E& f) {
  if (t.literal && !f.literal) return Select::make(c.e, t.as(f.e.dtype()), f.e);
  if (f.literal && !t.literal) return Select::make(c.e, t.e, f.as(t.e.dtype()));
  return Select::make(c.e, t.e, f.e);
}
inline E cast(DataType t, const E& v) { return Cast::make(t, v.e); }
inline E let(const Var& v, const E& value, const E& body) {
  return Let::make(v, value.as(v.dtype()), body);
}
inline E ramp(const E& base, const E& stride, int lanes) {
  return Ramp::make(base.e, stride.as(base.e.dtype()), lanes);
}
inline E bcast(const E& v, int lanes) { return Broadcast::make(v.e, lanes); }
inline E c(DataType t, double v) { return make_const(t, v); }
inline E c64(int64_t v) { return IntImm::make(i64, v); }
inline E tru() { return IntImm::make(b1, 1); }
inline E fls() { return IntImm::make(b1, 0); }

// ---------------------------------------------------------------------------------------------
// Printing (for failure messages; independent of the library's printer) and exact equality
// (structural, with variables compared by identity: structural_equal alone would accept
// `y + x` for `x + y`, since it matches free variables by first occurrence).
// ---------------------------------------------------------------------------------------------

inline std::string str(const Expr& e);

inline std::string binop(const char* op, const Expr& a, const Expr& b) {
  return "(" + str(a) + " " + op + " " + str(b) + ")";
}
inline std::string call(const char* f, std::initializer_list<Expr> args) {
  std::string s = std::string(f) + "(";
  bool first = true;
  for (const Expr& a : args) {
    s += (first ? "" : ", ") + str(a);
    first = false;
  }
  return s + ")";
}

inline std::string str(const Expr& e) {
  if (!e.defined()) return "<undefined>";
  switch (e.kind()) {
    case NodeKind::kIntImm: {
      const auto* imm = e.as<IntImm>();
      if (imm->dtype.is_bool()) return imm->value ? "True" : "False";
      std::string v = std::to_string(imm->value);
      return imm->dtype == i32 ? v : imm->dtype.str() + "(" + v + ")";
    }
    case NodeKind::kFloatImm: {
      std::ostringstream os;
      os << e.dtype().str() << "(" << e.as<FloatImm>()->value << ")";
      return os.str();
    }
    case NodeKind::kStringImm:
      return "\"" + e.as<StringImm>()->value + "\"";
    case NodeKind::kVar:
      return e.as<VarNode>()->name;
    case NodeKind::kAdd:
      return binop("+", e.as<Add>()->a, e.as<Add>()->b);
    case NodeKind::kSub:
      return binop("-", e.as<Sub>()->a, e.as<Sub>()->b);
    case NodeKind::kMul:
      return binop("*", e.as<Mul>()->a, e.as<Mul>()->b);
    case NodeKind::kDiv:
      return call("truncdiv", {e.as<Div>()->a, e.as<Div>()->b});
    case NodeKind::kMod:
      return call("truncmod", {e.as<Mod>()->a, e.as<Mod>()->b});
    case NodeKind::kFloorDiv:
      return binop("//", e.as<FloorDiv>()->a, e.as<FloorDiv>()->b);
    case NodeKind::kFloorMod:
      return binop("%", e.as<FloorMod>()->a, e.as<FloorMod>()->b);
    case NodeKind::kMin:
      return call("min", {e.as<Min>()->a, e.as<Min>()->b});
    case NodeKind::kMax:
      return call("max", {e.as<Max>()->a, e.as<Max>()->b});
    case NodeKind::kEQ:
      return binop("==", e.as<EQ>()->a, e.as<EQ>()->b);
    case NodeKind::kNE:
      return binop("!=", e.as<NE>()->a, e.as<NE>()->b);
    case NodeKind::kLT:
      return binop("<", e.as<LT>()->a, e.as<LT>()->b);
    case NodeKind::kLE:
      return binop("<=", e.as<LE>()->a, e.as<LE>()->b);
    case NodeKind::kGT:
      return binop(">", e.as<GT>()->a, e.as<GT>()->b);
    case NodeKind::kGE:
      return binop(">=", e.as<GE>()->a, e.as<GE>()->b);
    case NodeKind::kAnd:
      return binop("and", e.as<And>()->a, e.as<And>()->b);
    case NodeKind::kOr:
      return binop("or", e.as<Or>()->a, e.as<Or>()->b);
    case NodeKind::kNot:
      return "not " + str(e.as<Not>()->a);
    case NodeKind::kSelect: {
      const auto* s = e.as<Select>();
      return call("select", {s->condition, s->true_value, s->false_value});
    }
    case NodeKind::kCast:
      return e.dtype().str() + "(" + str(e.as<Cast>()->value) + ")";
    case NodeKind::kLet: {
      const auto* l = e.as<Let>();
      return "(let " + l->var->name + " = " + str(l->value) + " in " + str(l->body) + ")";
    }
    case NodeKind::kBufferLoad: {
      const auto* l = e.as<BufferLoad>();
      std::string s = l->buffer->name + "[";
      for (size_t i = 0; i < l->indices.size(); ++i) s += (i ? ", " : "") + str(l->indices[i]);
      return s + "]";
    }
    case NodeKind::kRamp: {
      const auto* r = e.as<Ramp>();
      return "ramp(" + str(r->base) + ", " + str(r->stride) + ", " + std::to_string(r->lanes) + ")";
    }
    case NodeKind::kBroadcast: {
      const auto* b = e.as<Broadcast>();
      return "broadcast(" + str(b->value) + ", " + std::to_string(b->lanes) + ")";
    }
    case NodeKind::kCall: {
      const auto* c = e.as<Call>();
      std::string s = (c->op.defined() ? c->op->name : c->callee->name) + "(";
      for (size_t i = 0; i < c->args.size(); ++i) s += (i ? ", " : "") + str(c->args[i]);
      return s + ")";
    }
    default:
      return node_kind_name(e.kind());
  }
}

template <typename Node>
bool push_binary(const Expr& e, std::vector<Expr>* out) {
  const auto* node = e.as<Node>();
  if (node == nullptr) return false;
  out->push_back(node->a);
  out->push_back(node->b);
  return true;
}

// Structural equality with variables and buffers compared by identity.
inline bool same(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined() || a.kind() != b.kind() || a.dtype() != b.dtype()) {
    return false;
  }
  std::vector<Expr> ca, cb;
  auto children = [](const Expr& e, std::vector<Expr>* out) {
    if (push_binary<Add>(e, out) || push_binary<Sub>(e, out) || push_binary<Mul>(e, out) ||
        push_binary<Div>(e, out) || push_binary<Mod>(e, out) || push_binary<FloorDiv>(e, out) ||
        push_binary<FloorMod>(e, out) || push_binary<Min>(e, out) || push_binary<Max>(e, out) ||
        push_binary<EQ>(e, out) || push_binary<NE>(e, out) || push_binary<LT>(e, out) ||
        push_binary<LE>(e, out) || push_binary<GT>(e, out) || push_binary<GE>(e, out) ||
        push_binary<And>(e, out) || push_binary<Or>(e, out)) {
      return true;
    }
    switch (e.kind()) {
      case NodeKind::kNot:
        out->push_back(e.as<Not>()->a);
        return true;
      case NodeKind::kSelect:
        out->push_back(e.as<Select>()->condition);
        out->push_back(e.as<Select>()->true_value);
        out->push_back(e.as<Select>()->false_value);
        return true;
      case NodeKind::kCast:
        out->push_back(e.as<Cast>()->value);
        return true;
      case NodeKind::kLet:
        out->push_back(e.as<Let>()->var);
        out->push_back(e.as<Let>()->value);
        out->push_back(e.as<Let>()->body);
        return true;
      case NodeKind::kBufferLoad:
        for (const Expr& i : e.as<BufferLoad>()->indices) out->push_back(i);
        return true;
      case NodeKind::kRamp:
        out->push_back(e.as<Ramp>()->base);
        out->push_back(e.as<Ramp>()->stride);
        return true;
      case NodeKind::kBroadcast:
        out->push_back(e.as<Broadcast>()->value);
        return true;
      case NodeKind::kCall:
        for (const Expr& i : e.as<Call>()->args) out->push_back(i);
        return true;
      default:
        return false;
    }
  };
  switch (a.kind()) {
    case NodeKind::kIntImm:
      return a.as<IntImm>()->value == b.as<IntImm>()->value;
    case NodeKind::kFloatImm: {
      double x = a.as<FloatImm>()->value, y = b.as<FloatImm>()->value;
      return x == y ? std::signbit(x) == std::signbit(y) : (std::isnan(x) && std::isnan(y));
    }
    case NodeKind::kStringImm:
      return a.as<StringImm>()->value == b.as<StringImm>()->value;
    case NodeKind::kVar:
      return false;  // different objects
    case NodeKind::kBufferLoad:
      if (!a.as<BufferLoad>()->buffer.same_as(b.as<BufferLoad>()->buffer)) return false;
      break;
    case NodeKind::kRamp:
      if (a.as<Ramp>()->lanes != b.as<Ramp>()->lanes) return false;
      break;
    case NodeKind::kBroadcast:
      if (a.as<Broadcast>()->lanes != b.as<Broadcast>()->lanes) return false;
      break;
    case NodeKind::kCall:
      if (!a.as<Call>()->op.same_as(b.as<Call>()->op) ||
          !a.as<Call>()->callee.same_as(b.as<Call>()->callee)) {
        return false;
      }
      break;
    default:
      break;
  }
  children(a, &ca);
  children(b, &cb);
  if (ca.size() != cb.size()) return false;
  for (size_t i = 0; i < ca.size(); ++i) {
    if (!same(ca[i], cb[i])) return false;
  }
  return true;
}

}  // namespace primjit::test
