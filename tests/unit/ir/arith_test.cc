// primjit::arith: simplifier tables (check(input, expected) rows per operator family), bounds,
// congruences, proofs, scoping, and a soundness/idempotence property test over random integer
// expressions evaluated by a reference interpreter with wraparound semantics.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "primjit/arith.h"
#include "primjit/ir.h"
#include "primjit/ir/structural.h"

namespace primjit {
namespace {

using arith::Analyzer;
using arith::ConstIntBound;
using arith::ModularSet;

const DataType i8 = DataType::Int(8);
const DataType u8 = DataType::UInt(8);
const DataType i32 = DataType::Int(32);
const DataType i64 = DataType::Int(64);
const DataType f16 = DataType::Float(16);
const DataType f32 = DataType::Float(32);
const DataType f64 = DataType::Float(64);
const DataType b1 = DataType::Bool();

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
E operator+(const E& a, const E& b) { return bin<Add>(a, b); }
E operator-(const E& a, const E& b) { return bin<Sub>(a, b); }
E operator*(const E& a, const E& b) { return bin<Mul>(a, b); }
E operator/(const E& a, const E& b) { return bin<Div>(a, b); }
E operator<(const E& a, const E& b) { return bin<LT>(a, b); }
E operator<=(const E& a, const E& b) { return bin<LE>(a, b); }
E operator>(const E& a, const E& b) { return bin<GT>(a, b); }
E operator>=(const E& a, const E& b) { return bin<GE>(a, b); }
E operator==(const E& a, const E& b) { return bin<EQ>(a, b); }
E operator!=(const E& a, const E& b) { return bin<NE>(a, b); }
E operator&&(const E& a, const E& b) { return bin<And>(a, b); }
E operator||(const E& a, const E& b) { return bin<Or>(a, b); }
E operator!(const E& a) { return Not::make(a.e); }
E fdiv(const E& a, const E& b) { return bin<FloorDiv>(a, b); }
E fmod(const E& a, const E& b) { return bin<FloorMod>(a, b); }
E tdiv(const E& a, const E& b) { return bin<Div>(a, b); }
E tmod(const E& a, const E& b) { return bin<Mod>(a, b); }
E min(const E& a, const E& b) { return bin<Min>(a, b); }
E max(const E& a, const E& b) { return bin<Max>(a, b); }
E select(const E& c, const E& t, const E& f) {
  if (t.literal && !f.literal) return Select::make(c.e, t.as(f.e.dtype()), f.e);
  if (f.literal && !t.literal) return Select::make(c.e, t.e, f.as(t.e.dtype()));
  return Select::make(c.e, t.e, f.e);
}
E cast(DataType t, const E& v) { return Cast::make(t, v.e); }
E let(const Var& v, const E& value, const E& body) {
  return Let::make(v, value.as(v.dtype()), body);
}
E ramp(const E& base, const E& stride, int lanes) {
  return Ramp::make(base.e, stride.as(base.e.dtype()), lanes);
}
E bcast(const E& v, int lanes) { return Broadcast::make(v.e, lanes); }
E c(DataType t, double v) { return make_const(t, v); }
E c64(int64_t v) { return IntImm::make(i64, v); }
E tru() { return IntImm::make(b1, 1); }
E fls() { return IntImm::make(b1, 0); }

// ---------------------------------------------------------------------------------------------
// Printing (for failure messages; independent of the library's printer) and exact equality
// (structural, with variables compared by identity: structural_equal alone would accept
// `y + x` for `x + y`, since it matches free variables by first occurrence).
// ---------------------------------------------------------------------------------------------

std::string str(const Expr& e);

std::string binop(const char* op, const Expr& a, const Expr& b) {
  return "(" + str(a) + " " + op + " " + str(b) + ")";
}
std::string call(const char* f, std::initializer_list<Expr> args) {
  std::string s = std::string(f) + "(";
  bool first = true;
  for (const Expr& a : args) {
    s += (first ? "" : ", ") + str(a);
    first = false;
  }
  return s + ")";
}

std::string str(const Expr& e) {
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
bool same(const Expr& a, const Expr& b) {
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

// One table row: `input` simplifies to `expected` (structurally, same variables), and
// simplifying the result again changes nothing.
void check_in(Analyzer& an, const E& input, const E& expected, int line) {
  Expr in = input;
  Expr want = expected.literal ? expected.as(in.dtype()) : expected.e;
  Expr got = an.simplify(in);
  EXPECT_TRUE(structural_equal(got, want) && same(got, want))
      << "line " << line << ": simplify(" << str(in) << ")\n   got: " << str(got)
      << "\n  want: " << str(want);
  Expr again = an.simplify(got);
  EXPECT_TRUE(same(again, got)) << "line " << line << ": not idempotent: " << str(got) << " -> "
                                << str(again);
  EXPECT_TRUE(again.same_as(got)) << "line " << line << ": re-simplifying " << str(got)
                                  << " rebuilt an unchanged expression";
}

#define CHECK_ROW(input, expected) check_in(an, (input), (expected), __LINE__)

class ArithTable : public ::testing::Test {
 protected:
  ArithTable() {
    an.bind(i, c(i32, 0), c(i32, 64));
    an.bind(j, c(i32, 0), c(i32, 16));
    an.bind(k, c(i32, 0), n);
    an.bind(p, c(i64, -8), c(i64, 16));
  }

  Var x = Var::make("x", i32);
  Var y = Var::make("y", i32);
  Var z = Var::make("z", i32);
  Var i = Var::make("i", i32);  // [0, 64)
  Var j = Var::make("j", i32);  // [0, 16)
  Var k = Var::make("k", i32);  // [0, n)
  Var n = Var::make("n", i32, /*is_size_var=*/true);
  Var p = Var::make("p", i64);  // [-8, 8)
  Var q = Var::make("q", i64);
  Var xb = Var::make("xb", b1);
  Var yb = Var::make("yb", b1);
  Var xf = Var::make("xf", f32);
  Var yf = Var::make("yf", f32);
  Analyzer an;
};

// ---------------------------------------------------------------------------------------------
// Tables
// ---------------------------------------------------------------------------------------------

TEST_F(ArithTable, AddSubCancellationAndOrder) {
  CHECK_ROW(x + 0, x);
  CHECK_ROW(0 + x, x);
  CHECK_ROW(x - 0, x);
  CHECK_ROW(x - x, 0);
  CHECK_ROW(x + y - x, y);
  CHECK_ROW(y + x, x + y);
  CHECK_ROW(x * 4 + y - x * 4, y);
  CHECK_ROW((x + 3) + (y - 3), x + y);
  CHECK_ROW((x + y) - (y + x), 0);
  CHECK_ROW(x + x, x * 2);
  CHECK_ROW(x * 3 - x, x * 2);
  CHECK_ROW(3 + x, x + 3);
  CHECK_ROW(x - 5 + 2, x - 3);
  CHECK_ROW(5 - x, 5 - x);
  CHECK_ROW((5 - x) + x, 5);
  CHECK_ROW(0 - x, x * -1);
  CHECK_ROW(y - x, y - x);
  CHECK_ROW(z + (y - x), y - x + z);
  CHECK_ROW((x - y) - (x - y), 0);
  CHECK_ROW(x * 2 + x * 3, x * 5);
  CHECK_ROW(z + y + x, x + y + z);
  CHECK_ROW((z + 1) + (y + 2) + (x + 3), x + y + z + 6);
  CHECK_ROW(0 - x - y - 3, x * -1 - y - 3);
  CHECK_ROW(10 - x - y, 10 - x - y);
  CHECK_ROW(x - (y - (x - y)), x * 2 - y * 2);
  CHECK_ROW((x + 1) - (x - 1), 2);
  CHECK_ROW(x - 2147483647 - 1, x + std::numeric_limits<int32_t>::min());
  CHECK_ROW(q + c64(5) - q, c64(5));
}

TEST_F(ArithTable, Mul) {
  CHECK_ROW(x * 1, x);
  CHECK_ROW(1 * x, x);
  CHECK_ROW(x * 0, 0);
  CHECK_ROW(0 * x, 0);
  CHECK_ROW(4 * x, x * 4);
  CHECK_ROW((x + 1) * 4, x * 4 + 4);
  CHECK_ROW(4 * (x + 1) - 4, x * 4);
  CHECK_ROW((x * 2) * 3, x * 6);
  CHECK_ROW(y * x, x * y);
  CHECK_ROW(x * y - y * x, 0);
  CHECK_ROW(x * y + y * x, x * y * 2);
  CHECK_ROW((x * 2) * (y * 3), x * y * 6);
  CHECK_ROW(z * y * x, x * y * z);
  CHECK_ROW(x * (y * z) - (z * x) * y, 0);
  CHECK_ROW((x - x) * y, 0);
  CHECK_ROW(x * -1 * -1, x);
  CHECK_ROW(x * 65536 * 65536, 0);  // 2^32 wraps to 0 in int32
  CHECK_ROW(y * (x + 1), y * (x + 1));
}

TEST_F(ArithTable, ConstantFolding) {
  CHECK_ROW(E(3) + 4, 7);
  CHECK_ROW(E(3) - 10, -7);
  CHECK_ROW(E(6) * -7, -42);
  CHECK_ROW(E(2147483647) + 1, std::numeric_limits<int32_t>::min());
  CHECK_ROW(E(65536) * 65536, 0);
  CHECK_ROW(c64(std::numeric_limits<int64_t>::max()) + c64(1),
            c64(std::numeric_limits<int64_t>::min()));
  CHECK_ROW(c(i8, 127) + c(i8, 1), c(i8, -128));
  CHECK_ROW(c(i8, -128) - c(i8, 1), c(i8, 127));
  CHECK_ROW(c(i8, 16) * c(i8, 16), c(i8, 0));
  CHECK_ROW(c(i8, -128) * c(i8, -1), c(i8, -128));
  CHECK_ROW(fdiv(c(i8, -128), c(i8, -1)), c(i8, -128));
  CHECK_ROW(c(u8, 255) + c(u8, 1), c(u8, 0));
  CHECK_ROW(c(u8, 0) - c(u8, 1), c(u8, 255));
  CHECK_ROW(c(u8, 200) * c(u8, 2), c(u8, 144));
  CHECK_ROW(fdiv(c(u8, 255), c(u8, 16)), c(u8, 15));
  CHECK_ROW(fmod(c(u8, 255), c(u8, 16)), c(u8, 15));
  CHECK_ROW(c(u8, 200) < c(u8, 100), fls());
  CHECK_ROW(max(c(u8, 200), c(u8, 100)), c(u8, 200));
  CHECK_ROW(tdiv(c(u8, 200), c(u8, 7)), c(u8, 28));
  CHECK_ROW(tmod(c(u8, 200), c(u8, 7)), c(u8, 4));
  CHECK_ROW(c(DataType::Int(16), 32767) + c(DataType::Int(16), 1), c(DataType::Int(16), -32768));
  const DataType u64 = DataType::UInt(64);
  E u64_max = IntImm::make(u64, -1);  // 2^64 - 1, stored in two's complement
  CHECK_ROW(u64_max + IntImm::make(u64, 1), IntImm::make(u64, 0));
  CHECK_ROW(fdiv(u64_max, IntImm::make(u64, 2)),
            IntImm::make(u64, std::numeric_limits<int64_t>::max()));
  CHECK_ROW(u64_max > IntImm::make(u64, 1), tru());
  CHECK_ROW(cast(i32, u64_max), -1);
  CHECK_ROW(cast(i64, c(u8, 255)), c64(255));
  CHECK_ROW(cast(i8, c(u8, 255)), c(i8, -1));
  CHECK_ROW(min(E(3), 5), 3);
  CHECK_ROW(max(E(-3), 5), 5);
  CHECK_ROW(E(3) < 4, tru());
  CHECK_ROW(E(3) >= 4, fls());
  CHECK_ROW(E(3) == 3, tru());
  CHECK_ROW(E(3) != 3, fls());
  CHECK_ROW(tru() && fls(), fls());
  CHECK_ROW(tru() || fls(), tru());
  CHECK_ROW(!tru(), fls());
  CHECK_ROW(select(tru(), E(1), E(2)), 1);
  CHECK_ROW(c(f32, 1.5) + c(f32, 2.25), c(f32, 3.75));
  CHECK_ROW(c(f32, 1.0) / c(f32, 3.0), c(f32, static_cast<double>(1.0f / 3.0f)));
  CHECK_ROW(c(f64, 0.1) + c(f64, 0.2), c(f64, 0.1 + 0.2));
  CHECK_ROW(c(f32, 1.1f) * c(f32, 3.0), c(f32, static_cast<double>(1.1f * 3.0f)));
  CHECK_ROW(c(f32, 1.0) < c(f32, 2.0), tru());
  CHECK_ROW(c(f32, NAN) == c(f32, NAN), fls());
  CHECK_ROW(c(f32, NAN) != c(f32, NAN), tru());
  // float16 arithmetic is not folded (its rounding is not modelled), comparisons are.
  CHECK_ROW(c(f16, 1.0) + c(f16, 2.0), c(f16, 1.0) + c(f16, 2.0));
  CHECK_ROW(c(f16, 1.0) < c(f16, 2.0), tru());
  CHECK_ROW(c(f32, 1.0) / c(f32, 0.0), c(f32, 1.0) / c(f32, 0.0));
}

TEST_F(ArithTable, FloatsAreNotReassociated) {
  CHECK_ROW(xf + c(f32, 0.0), xf + c(f32, 0.0));  // -0.0 + 0.0 is +0.0
  CHECK_ROW(xf - c(f32, 0.0), xf);
  CHECK_ROW(xf * c(f32, 1.0), xf);
  CHECK_ROW(c(f32, 1.0) * xf, xf);
  CHECK_ROW(xf * c(f32, 0.0), xf * c(f32, 0.0));  // NaN * 0 is NaN
  CHECK_ROW(xf - xf, xf - xf);
  CHECK_ROW((xf + yf) - yf, (xf + yf) - yf);
  CHECK_ROW(yf + xf, xf + yf);  // commutative operands are ordered
  CHECK_ROW(yf * xf, xf * yf);
  CHECK_ROW(yf == xf, xf == yf);
  CHECK_ROW(yf - xf, yf - xf);
  CHECK_ROW(min(yf, xf), min(yf, xf));  // min with a NaN operand depends on the order
  CHECK_ROW((yf + xf) + c(f32, 1.0), (xf + yf) + c(f32, 1.0));
  CHECK_ROW(c(f32, 1.0) + (yf + c(f32, 2.0)), (yf + c(f32, 2.0)) + c(f32, 1.0));  // not 3.0
  CHECK_ROW(xf == xf, xf == xf);                                                  // NaN != NaN
  CHECK_ROW(min(xf, xf), xf);
  CHECK_ROW(tdiv(xf, c(f32, 1.0)), xf);
  CHECK_ROW(!(xf < yf), !(xf < yf));  // not (NaN < y) is not NaN >= y
  CHECK_ROW(!(xf == yf), xf != yf);
}

TEST_F(ArithTable, FloorDivFloorMod) {
  // Floor semantics on negative numbers, positive and negative divisors.
  CHECK_ROW(fdiv(E(7), 2), 3);
  CHECK_ROW(fdiv(E(-7), 2), -4);
  CHECK_ROW(fdiv(E(7), -2), -4);
  CHECK_ROW(fdiv(E(-7), -2), 3);
  CHECK_ROW(fmod(E(7), 2), 1);
  CHECK_ROW(fmod(E(-7), 2), 1);
  CHECK_ROW(fmod(E(7), -2), -1);
  CHECK_ROW(fmod(E(-7), -2), -1);
  CHECK_ROW(fdiv(E(9), -4), -3);
  CHECK_ROW(fmod(E(9), -4), -3);
  CHECK_ROW(fdiv(E(std::numeric_limits<int32_t>::min()), -1), std::numeric_limits<int32_t>::min());
  CHECK_ROW(fmod(E(std::numeric_limits<int32_t>::min()), -1), 0);
  CHECK_ROW(fdiv(E(7), 0), fdiv(E(7), 0));  // division by zero is left alone
  // Identities.
  CHECK_ROW(fdiv(x, 1), x);
  CHECK_ROW(fmod(x, 1), 0);
  CHECK_ROW(fdiv(x, -1), x * -1);
  CHECK_ROW(fmod(x, -1), 0);
  // Division by zero has a result (x // 0 is -1, x % 0 is x): a division by a variable is
  // dropped only where the divisor is provably nonzero. x % x is 0 even for x == 0.
  CHECK_ROW(fdiv(x, x), fdiv(x, x));
  CHECK_ROW(fdiv(E(i) + 1, E(i) + 1), 1);
  CHECK_ROW(fmod(x, x), 0);
  CHECK_ROW(fdiv(E(0), x), fdiv(E(0), x));
  CHECK_ROW(fdiv(E(0), E(i) + 1), 0);
  CHECK_ROW(fmod(E(0), x), 0);
  CHECK_ROW(fdiv(x, -4), fdiv(x, -4));
  // Divisibility: residues modulo powers of two survive wraparound.
  CHECK_ROW(fmod(x * 8, 4), 0);
  CHECK_ROW(fmod(x * 8 + 3, 4), 3);
  CHECK_ROW(fmod(x * 4 + y, 2), fmod(y, 2));
  CHECK_ROW(fmod(x + 5, 4), fmod(x + 1, 4));
  CHECK_ROW(fmod(x * 3, 3), fmod(x * 3, 3));  // x*3 may wrap; 3 does not divide 2^32
  CHECK_ROW(fmod(fmod(x, 16), 4), fmod(x, 4));
  CHECK_ROW(fmod(fmod(x, 4), 16), fmod(x, 4));
  CHECK_ROW(fdiv(fdiv(x, 4), 8), fdiv(x, 32));
  // Recombination of quotient and remainder.
  CHECK_ROW(fdiv(x, 16) * 16 + fmod(x, 16), x);
  CHECK_ROW(fmod(x, 16) + fdiv(x, 16) * 16 + y, x + y);
  CHECK_ROW(x - fdiv(x, 16) * 16, fmod(x, 16));
  CHECK_ROW(tdiv(x, 8) * 8 + tmod(x, 8), x);
  // With bounds: i in [0, 64), j in [0, 16).
  CHECK_ROW(fdiv(i * 16 + j, 16), i);
  CHECK_ROW(fmod(i * 16 + j, 16), j);
  CHECK_ROW(fdiv(j + i * 16, 16), i);
  CHECK_ROW(fdiv(i * 16 + j + 32, 16), i + 2);
  CHECK_ROW(fmod(i * 16 + j + 32, 16), j);
  CHECK_ROW(fdiv(i * 8, 4), i * 2);
  CHECK_ROW(fdiv(i, 64), 0);
  CHECK_ROW(fmod(i, 64), i);
  CHECK_ROW(fdiv(i + 64, 64), 1);
  CHECK_ROW(fmod(i + 64, 64), i);
  CHECK_ROW(fdiv(i * 4 + 2, 4), i);
  CHECK_ROW(fdiv(i * 4 + j, 4), i + fdiv(j, 4));
  CHECK_ROW(fdiv(i * 6 + 4, 3), i * 2 + 1);
  CHECK_ROW(fmod(i * 3, 3), 0);
  CHECK_ROW(fdiv(i - 1, 64), fdiv(i - 1, 64));  // -1 // 64 == -1, 62 // 64 == 0
  CHECK_ROW(fdiv(p, 16), fdiv(p, 16));          // p in [-8, 8): -1 or 0
  CHECK_ROW(fdiv(p + c64(8), c64(16)), c64(0));
  CHECK_ROW(fdiv(x * 8, 4), fdiv(x * 8, 4));  // x*8 may wrap
}

TEST_F(ArithTable, TruncDivTruncMod) {
  CHECK_ROW(tdiv(E(-7), 2), -3);
  CHECK_ROW(tdiv(E(7), -2), -3);
  CHECK_ROW(tmod(E(-7), 2), -1);
  CHECK_ROW(tmod(E(7), -2), 1);
  CHECK_ROW(tdiv(E(std::numeric_limits<int32_t>::min()), -1), std::numeric_limits<int32_t>::min());
  CHECK_ROW(tmod(E(std::numeric_limits<int32_t>::min()), -1), 0);
  CHECK_ROW(tdiv(x, 1), x);
  CHECK_ROW(tmod(x, 1), 0);
  CHECK_ROW(tdiv(x, -1), x * -1);
  CHECK_ROW(tdiv(x, x), tdiv(x, x));  // x may be 0: truncdiv(0, 0) is -1
  CHECK_ROW(tdiv(E(j) + 1, E(j) + 1), 1);
  CHECK_ROW(tmod(x, x), 0);  // truncmod(0, 0) is 0 too
  CHECK_ROW(tdiv(E(0), x), tdiv(E(0), x));
  CHECK_ROW(tmod(E(0), x), 0);
  CHECK_ROW(tdiv(x, 4), tdiv(x, 4));  // x may be negative
  CHECK_ROW(tdiv(i, 4), fdiv(i, 4));  // non-negative: floor and trunc agree
  CHECK_ROW(tmod(i, 4), fmod(i, 4));
  CHECK_ROW(tdiv(i * 16 + j, 16), i);
  CHECK_ROW(tmod(i * 16 + j, 16), j);
  CHECK_ROW(tdiv(p, c64(16)), c64(0));
  CHECK_ROW(tmod(p, c64(16)), p);
  CHECK_ROW(tdiv(p, c64(-16)), c64(0));
}

TEST_F(ArithTable, MinMax) {
  CHECK_ROW(min(x, x), x);
  CHECK_ROW(max(x, x), x);
  CHECK_ROW(min(y, x), min(x, y));
  CHECK_ROW(max(y, x), max(x, y));
  CHECK_ROW(min(min(x, y), x), min(x, y));
  CHECK_ROW(max(y, max(x, y)), max(x, y));
  CHECK_ROW(min(x, min(y, 3)), min(min(x, y), 3));
  CHECK_ROW(min(min(x, 2), 5), min(x, 2));
  CHECK_ROW(max(3, max(x, 7)), max(x, 7));
  CHECK_ROW(min(x, y) - min(y, x), 0);
  CHECK_ROW(min(i, 64), i);
  CHECK_ROW(max(i, 0), i);
  CHECK_ROW(min(i, -1), -1);
  CHECK_ROW(max(i, 100), 100);
  CHECK_ROW(min(i + 2, i), i);
  CHECK_ROW(max(i + 2, i), i + 2);
  CHECK_ROW(min(i, j), min(i, j));
  CHECK_ROW(max(j, i * 16 + j), i * 16 + j);
  CHECK_ROW(min(k, n), k);
  CHECK_ROW(max(k + 1, n), n);
  CHECK_ROW(min(x + 2, x), min(x, x + 2));  // x + 2 may wrap below x
  CHECK_ROW(min(x, 2147483647), x);
  CHECK_ROW(max(x, -2147483647 - 1), x);
}

TEST_F(ArithTable, Comparisons) {
  CHECK_ROW(x < x, fls());
  CHECK_ROW(x <= x, tru());
  CHECK_ROW(x == x, tru());
  CHECK_ROW(x != x, fls());
  CHECK_ROW(i < 64, tru());
  CHECK_ROW(i >= 0, tru());
  CHECK_ROW(i < 0, fls());
  CHECK_ROW(i > 63, fls());
  CHECK_ROW(i == 64, fls());
  CHECK_ROW(i != 64, tru());
  CHECK_ROW(i * 16 + j < 1024, tru());
  CHECK_ROW(k < n, tru());
  CHECK_ROW(k + 1 <= n, tru());
  CHECK_ROW(n - k > 0, tru());
  CHECK_ROW(k >= n, fls());
  CHECK_ROW(x * 2 < x * 2 + 1, tru());  // x*2 is even: +1 never wraps
  CHECK_ROW(x * 2 + 1 > x * 2, tru());
  CHECK_ROW(x < x + 1, x < x + 1);  // false for x == INT32_MAX
  CHECK_ROW(x * 2 == 1, fls());
  CHECK_ROW(x * 2 == x * 2 + 1, fls());
  CHECK_ROW(x * 4 + 2 == 8, fls());
  CHECK_ROW(x + y == y + x, tru());
  CHECK_ROW(x + 3 == 7, x == 4);
  CHECK_ROW(E(7) == x + 3, x == 4);
  CHECK_ROW(y == x, x == y);
  CHECK_ROW(y != x, x != y);
  CHECK_ROW(x - y == 0, x == y);
  CHECK_ROW(x * 2 + 1 == y, x * 2 == y - 1);
  CHECK_ROW(x + 1 < y, x + 1 < y);  // x + 1 may wrap: left as it is
  CHECK_ROW(i + 1 < j, i < j - 1);
  CHECK_ROW(i * 2 < 5, i < 3);
  CHECK_ROW(i * 3 >= 7, i >= 3);
  CHECK_ROW(i > 3, i > 3);
  CHECK_ROW(E(3) < i, E(3) < i);
  CHECK_ROW(i * 2 + 2 <= j * 2, i <= j - 1);
  CHECK_ROW(c(u8, 0) <= Var::make("u", u8), tru());
  CHECK_ROW(xb == tru(), xb);
  CHECK_ROW(xb == fls(), !xb);
  CHECK_ROW(xb != fls(), xb);
  CHECK_ROW(yb == xb, xb == yb);
}

TEST_F(ArithTable, Logical) {
  CHECK_ROW(tru() && xb, xb);
  CHECK_ROW(fls() && xb, fls());
  CHECK_ROW(xb || tru(), tru());
  CHECK_ROW(xb || fls(), xb);
  CHECK_ROW(xb && xb, xb);
  CHECK_ROW(xb && !xb, fls());
  CHECK_ROW(xb || !xb, tru());
  CHECK_ROW(yb && xb, xb && yb);
  CHECK_ROW(yb || xb, xb || yb);
  CHECK_ROW((x < 4) && (x >= 4), fls());
  CHECK_ROW((x < 4) || (x >= 4), tru());
  CHECK_ROW((x < 4) && (x < 6), x < 4);
  CHECK_ROW((x < 6) && (x < 4), x < 4);
  CHECK_ROW((x < 6) || (x < 4), x < 6);
  CHECK_ROW((x < y) && (y <= x), fls());
  CHECK_ROW((x == 3) && (x + 1 == 4), x == 3);
  CHECK_ROW((x == 3) && (x == 4), fls());
  CHECK_ROW(!(x < 4), x >= 4);
  CHECK_ROW(!(x == y), x != y);
  CHECK_ROW(!!xb, xb);
  CHECK_ROW(!(i < 64), fls());
  CHECK_ROW((i < 64) && xb, xb);
  CHECK_ROW((x < 4) && xb && (x < 2), xb && (x < 2));
}

TEST_F(ArithTable, Select) {
  CHECK_ROW(select(tru(), x, y), x);
  CHECK_ROW(select(fls(), x, y), y);
  CHECK_ROW(select(xb, x, x), x);
  CHECK_ROW(select(x < 4, 1, 2), select(x < 4, 1, 2));
  CHECK_ROW(select(i < 64, i, 0), i);
  CHECK_ROW(select(x < 4, min(x, 4), 4), select(x < 4, x, 4));
  CHECK_ROW(select(x == 3, x + 1, 0), select(x == 3, 4, 0));
  CHECK_ROW(select(xb, tru(), fls()), xb);
  CHECK_ROW(select(xb, fls(), tru()), !xb);
  CHECK_ROW(select(x < 4, x + 0, y * 1), select(x < 4, x, y));
}

TEST_F(ArithTable, Cast) {
  CHECK_ROW(cast(i32, x), x);
  CHECK_ROW(cast(i64, cast(i32, p)), p);
  CHECK_ROW(cast(i32, cast(i64, x)), x);
  CHECK_ROW(cast(i64, cast(i32, q)), cast(i64, cast(i32, q)));  // q may not fit int32
  CHECK_ROW(cast(i8, 300), c(i8, 44));
  CHECK_ROW(cast(u8, -1), c(u8, 255));
  CHECK_ROW(cast(i32, c(f32, 3.7)), 3);
  CHECK_ROW(cast(i32, c(f64, -3.7)), -3);
  CHECK_ROW(cast(i32, c(f64, 1e10)), cast(i32, c(f64, 1e10)));  // out of range: undefined
  CHECK_ROW(cast(f32, 3), c(f32, 3.0));
  CHECK_ROW(cast(f32, c(f64, 0.1)), c(f32, static_cast<double>(0.1f)));
  CHECK_ROW(cast(b1, 5), tru());
  CHECK_ROW(cast(i32, tru()), 1);
  CHECK_ROW(cast(i64, x + 0), cast(i64, x));
}

TEST_F(ArithTable, Let) {
  Var v = Var::make("v", i32);
  CHECK_ROW(let(v, 3, v + x), x + 3);
  CHECK_ROW(let(v, x, v * 2), x * 2);
  CHECK_ROW(let(v, x + 1, v - v), 0);
  CHECK_ROW(let(v, x + 1, v * 2), let(v, x + 1, v * 2));
  CHECK_ROW(let(v, i + 1, v <= 64), tru());
  CHECK_ROW(let(v, i + 0, v * 1), i);
  Expr impure = Call::make(i32, Op::get("call_extern"), {StringImm::make("f")});
  CHECK_ROW(let(v, impure, 0), let(v, impure, 0));
}

TEST_F(ArithTable, Vectors) {
  CHECK_ROW(bcast(x, 4) + bcast(y, 4), bcast(x + y, 4));
  CHECK_ROW(ramp(x, 1, 4) + bcast(y, 4), ramp(x + y, 1, 4));
  CHECK_ROW(bcast(y, 4) + ramp(x, 1, 4), ramp(x + y, 1, 4));
  CHECK_ROW(ramp(x, 1, 4) - bcast(x, 4), ramp(0, 1, 4));
  CHECK_ROW(bcast(x, 4) - ramp(y, 2, 4), ramp(x - y, -2, 4));
  CHECK_ROW(ramp(x, 2, 4) * bcast(3, 4), ramp(x * 3, 6, 4));
  CHECK_ROW(ramp(x, 1, 4) + ramp(y, 2, 4), ramp(x + y, 3, 4));
  CHECK_ROW(ramp(x, 0, 4), bcast(x, 4));
  CHECK_ROW(bcast(2, 4) * bcast(3, 4), bcast(6, 4));
  CHECK_ROW(bcast(x, 4) < bcast(y, 4), bcast(x < y, 4));
  CHECK_ROW(ramp(x, 1, 4) + bcast(0, 4), ramp(x, 1, 4));
  CHECK_ROW(bcast(xf, 4) * bcast(c(f32, 1.0), 4), bcast(xf, 4));
  Buffer A = Buffer::make("A", f32, {c(i32, 1024)});
  CHECK_ROW(BufferLoad::make(A, {ramp(x * 4 - x * 4, 1, 4)}), BufferLoad::make(A, {ramp(0, 1, 4)}));
}

TEST_F(ArithTable, CallsAndLoads) {
  Buffer A = Buffer::make("A", i32, {c(i32, 1024)});
  Expr load = BufferLoad::make(A, {x + 0});
  CHECK_ROW(load, BufferLoad::make(A, {x}));
  CHECK_ROW(load - load, 0);  // loads are pure
  Expr f = Call::make(i32, Op::get("call_extern"), {StringImm::make("f"), x + 0});
  Expr f_simplified = Call::make(i32, Op::get("call_extern"), {StringImm::make("f"), x});
  CHECK_ROW(f, f_simplified);
  CHECK_ROW(E(f) - f, E(f_simplified) - f_simplified);  // never dropped
  CHECK_ROW(E(f) * 0, E(f_simplified) * 0);             // never dropped
  CHECK_ROW(E(f) + f, E(f_simplified) + f_simplified);  // never merged into f * 2
  CHECK_ROW(E(f) + 0, f_simplified);                    // dropping a literal is fine
  CHECK_ROW(min(E(f), f), min(E(f_simplified), f_simplified));
  CHECK_ROW(select(fls(), E(f), 1), select(fls(), E(f_simplified), 1));
  // Select evaluates both branches and And both operands: a branch is not simplified under the
  // condition when that could make it fault (a load out of bounds, a division by zero).
  Expr guarded = select(x < n, BufferLoad::make(A, {min(x, E(n) - 1)}), 0);
  CHECK_ROW(guarded, guarded);
  Expr divide = select(x > 0, fdiv(y, max(x, 1)), 0);
  CHECK_ROW(divide, divide);
  Expr both = (x < n) && (BufferLoad::make(A, {min(x, E(n) - 1)}) > 0);
  CHECK_ROW(both, both);
  CHECK_ROW(select(x < 4, min(x, 4) * 2, 0), select(x < 4, x * 2, 0));  // safe: simplified
  Expr g = Call::make(i32, Op::get("call_pure_extern"), {StringImm::make("g"), x});
  CHECK_ROW(E(g) - g, 0);
  CHECK_ROW(Call::make(f32, Op::get("exp"), {xf * c(f32, 1.0)}),
            Call::make(f32, Op::get("exp"), {xf}));
}

// ---------------------------------------------------------------------------------------------
// Bounds, congruences, proofs, scopes
// ---------------------------------------------------------------------------------------------

ConstIntBound bound(int64_t lo, int64_t hi) { return {lo, hi}; }

TEST(ArithBound, LoopVariables) {
  Analyzer an;
  Var n = Var::make("n", i32, /*is_size_var=*/true);
  Var i = Var::make("i", i32);
  Var k = Var::make("k", i32);
  an.bind(i, c(i32, 0), c(i32, 64));
  an.bind(k, c(i32, 0), n);
  EXPECT_EQ(an.const_int_bound(n), bound(0, std::numeric_limits<int32_t>::max()));
  EXPECT_EQ(an.const_int_bound(k), bound(0, std::numeric_limits<int32_t>::max() - 1));
  EXPECT_EQ(an.const_int_bound(i), bound(0, 63));
  EXPECT_EQ(an.const_int_bound(E(i) * 4 + 3), bound(3, 255));
  EXPECT_EQ(an.const_int_bound(fdiv(i, 8)), bound(0, 7));
  EXPECT_EQ(an.const_int_bound(fmod(i, 8)), bound(0, 7));
  EXPECT_EQ(an.const_int_bound(fmod(i, 100)), bound(0, 63));
  EXPECT_EQ(an.const_int_bound(E(i) - 64), bound(-64, -1));
  EXPECT_EQ(an.const_int_bound(min(i, 10)), bound(0, 10));
  EXPECT_EQ(an.const_int_bound(max(i, 10)), bound(10, 63));
  EXPECT_EQ(an.const_int_bound(E(i) * -2), bound(-126, 0));
  EXPECT_EQ(an.const_int_bound(E(i) * i), bound(0, 3969));
  EXPECT_EQ(an.const_int_bound(fdiv(E(i) - 64, 8)), bound(-8, -1));
  EXPECT_EQ(an.const_int_bound(tdiv(E(i) - 63, 8)), bound(-7, 0));
  EXPECT_EQ(an.const_int_bound(tmod(E(i) - 63, 8)), bound(-7, 0));
  EXPECT_EQ(an.const_int_bound(fdiv(100, E(i) + 1)), bound(1, 100));
  // A divisor that may be 0 adds the results of a division by zero: -1 and the dividend.
  EXPECT_EQ(an.const_int_bound(fdiv(100, i)), bound(-1, 100));
  EXPECT_EQ(an.const_int_bound(tdiv(100, i)), bound(-1, 100));
  EXPECT_EQ(an.const_int_bound(fmod(E(i) + 100, i)), bound(0, 163));
  EXPECT_EQ(an.const_int_bound(tmod(E(i) + 100, i)), bound(0, 163));
  EXPECT_EQ(an.const_int_bound(fmod(E(i) - 100, E(i) - 10)), bound(-100, 52));
  EXPECT_EQ(an.const_int_bound(select(E(i) < 3, E(i), 100)), bound(0, 100));
  EXPECT_EQ(an.const_int_bound(cast(i64, i)), bound(0, 63));
  EXPECT_EQ(an.const_int_bound(i < 3), bound(0, 1));
  EXPECT_EQ(an.const_int_bound(ramp(i, 2, 4)), bound(0, 69));
}

TEST(ArithBound, ThreadExtentsAndScopes) {
  Analyzer an;
  Var bx = Var::make("blockIdx.x", i32);
  Var tx = Var::make("threadIdx.x", i32);
  Expr global = E(bx) * 128 + tx;
  an.with_scope([&] {
    an.bind(bx, c(i32, 0), c(i32, 4));
    an.bind(tx, c(i32, 0), c(i32, 128));
    EXPECT_EQ(an.const_int_bound(global), bound(0, 511));
    EXPECT_TRUE(an.can_prove(E(global) < 512));
    EXPECT_TRUE(an.can_prove_equal(fdiv(global, 128), bx));
    EXPECT_TRUE(an.can_prove_equal(fmod(global, 128), tx));
    {
      Analyzer::Scope inner(an);
      an.assume(E(tx) < 32);
      EXPECT_EQ(an.const_int_bound(tx), bound(0, 31));
    }
    EXPECT_EQ(an.const_int_bound(tx), bound(0, 127));
  });
  // Out of the scope the ranges are gone.
  EXPECT_EQ(an.const_int_bound(tx),
            bound(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()));
  EXPECT_FALSE(an.can_prove(E(global) < 512));
}

TEST(ArithBound, WraparoundAndDtypes) {
  Analyzer an;
  Var x = Var::make("x", i32);
  Var q = Var::make("q", i64);
  Var u = Var::make("u", u8);
  Var b = Var::make("b", b1);
  Var f = Var::make("f", f32);
  const int64_t lo32 = std::numeric_limits<int32_t>::min();
  const int64_t hi32 = std::numeric_limits<int32_t>::max();
  EXPECT_EQ(an.const_int_bound(x), bound(lo32, hi32));
  EXPECT_EQ(an.const_int_bound(E(x) + 1), bound(lo32, hi32));  // may wrap: whole range
  EXPECT_EQ(an.const_int_bound(cast(i64, x)), bound(lo32, hi32));
  EXPECT_EQ(an.const_int_bound(cast(i64, x) + c64(1)), bound(lo32 + 1, hi32 + 1));
  EXPECT_EQ(an.const_int_bound(fmod(x, 16)), bound(0, 15));
  EXPECT_EQ(an.const_int_bound(tmod(x, 16)), bound(-15, 15));
  EXPECT_EQ(an.const_int_bound(fdiv(x, 65536)), bound(-32768, 32767));
  EXPECT_TRUE(an.const_int_bound(q).is_everything());
  EXPECT_EQ(an.const_int_bound(u), bound(0, 255));
  EXPECT_EQ(an.const_int_bound(E(u) + c(u8, 1)), bound(0, 255));
  EXPECT_EQ(an.const_int_bound(b), bound(0, 1));
  EXPECT_TRUE(an.const_int_bound(f).is_everything());
  EXPECT_EQ(an.const_int_bound(c(i32, 7)), bound(7, 7));
  EXPECT_TRUE(an.const_int_bound(c(i32, 7)).is_const());
}

TEST(ArithBound, BindExpression) {
  Analyzer an;
  Var i = Var::make("i", i32);
  Var v = Var::make("v", i32);
  Var w = Var::make("w", i32);
  an.bind(i, c(i32, 0), c(i32, 64));
  an.bind(v, E(i) * 2);
  an.bind(w, c(i32, 5));
  EXPECT_EQ(an.const_int_bound(v), bound(0, 126));
  EXPECT_EQ(an.modular_set(v), (ModularSet{2, 0}));
  EXPECT_TRUE(an.can_prove(E(v) < 128));
  EXPECT_TRUE(an.can_prove(fmod(v, 2) == 0));
  EXPECT_TRUE(an.can_prove(E(v) >= i));  // through the value: 2i >= i for i >= 0
  EXPECT_TRUE(an.can_prove(E(v) == E(i) * 2));
  EXPECT_TRUE(structural_equal(an.simplify(E(v) + 1), E(v) + 1));   // not inlined
  EXPECT_TRUE(structural_equal(an.simplify(E(w) + 1), c(i32, 6)));  // constants substitute
  EXPECT_EQ(an.const_int_bound(E(w) * 3), bound(15, 15));
}

TEST(ArithModular, Sets) {
  Analyzer an;
  Var i = Var::make("i", i32);
  Var x = Var::make("x", i32);
  EXPECT_EQ(an.modular_set(E(i) * 16 + 4), (ModularSet{16, 4}));  // holds even with wraparound
  EXPECT_EQ(an.modular_set(E(x) * 6 + 4), (ModularSet{2, 0}));    // 6 does not divide 2^32
  EXPECT_EQ(an.modular_set(c(i32, 7)), (ModularSet{0, 7}));
  EXPECT_EQ(an.modular_set(x), (ModularSet{1, 0}));
  EXPECT_EQ(an.modular_set(E(x) * 8 - 3), (ModularSet{8, 5}));
  EXPECT_EQ(an.modular_set(fmod(E(x) * 6 + 4, 8)), (ModularSet{2, 0}));
  EXPECT_EQ(an.modular_set(E(x) * 4 * i), (ModularSet{4, 0}));
  an.bind(i, c(i32, 0), c(i32, 64));
  EXPECT_EQ(an.modular_set(E(i) * 6 + 4), (ModularSet{6, 4}));
  EXPECT_EQ(an.modular_set(fdiv(E(i) * 16 + 4, 4)), (ModularSet{4, 1}));
  EXPECT_EQ(an.modular_set(select(E(i) < 3, E(i) * 4 + 1, E(i) * 8 + 5)), (ModularSet{4, 1}));
  EXPECT_EQ(an.modular_set(c(f32, 1.0)), (ModularSet{1, 0}));
}

TEST(ArithProve, TrueAndUnprovable) {
  Analyzer an;
  Var x = Var::make("x", i32);
  Var y = Var::make("y", i32);
  Var i = Var::make("i", i32);
  Var j = Var::make("j", i32);
  Var n = Var::make("n", i32, true);
  Var k = Var::make("k", i32);
  an.bind(i, c(i32, 0), c(i32, 64));
  an.bind(j, c(i32, 0), c(i32, 16));
  an.bind(k, c(i32, 0), n);
  // Provable.
  EXPECT_TRUE(an.can_prove(E(i) < 64));
  EXPECT_TRUE(an.can_prove(E(i) >= 0));
  EXPECT_TRUE(an.can_prove(E(i) * 16 + j < 1024));
  EXPECT_TRUE(an.can_prove(fdiv(E(i) * 16 + j, 16) == i));
  EXPECT_TRUE(an.can_prove(E(k) < n));
  EXPECT_TRUE(an.can_prove(E(n) - k > 0));
  EXPECT_TRUE(an.can_prove(min(i, 10) <= 10));
  EXPECT_TRUE(an.can_prove(E(x) * 2 != 1));
  EXPECT_TRUE(an.can_prove(E(x) * 2 < E(x) * 2 + 1));
  EXPECT_TRUE(an.can_prove(fmod(E(x) * 4, 2) == 0));
  EXPECT_TRUE(an.can_prove(!(E(i) < 0)));
  EXPECT_TRUE(an.can_prove((E(x) < 4) || (E(x) >= 4)));
  EXPECT_TRUE(an.can_prove(E(x) + y == E(y) + x));
  EXPECT_TRUE(an.can_prove_equal(E(x) + y, E(y) + x));
  EXPECT_TRUE(an.can_prove_equal(fdiv(E(i) * 16 + j, 16), i));
  // Unprovable or false: must stay false.
  EXPECT_FALSE(an.can_prove(E(x) < 100));
  EXPECT_FALSE(an.can_prove(E(x) + 1 > x));  // wraps at INT32_MAX
  EXPECT_FALSE(an.can_prove(E(i) < 63));
  EXPECT_FALSE(an.can_prove(E(k) < E(n) - 1));
  EXPECT_FALSE(an.can_prove(E(x) == y));
  EXPECT_FALSE(an.can_prove(E(i) < 0));
  EXPECT_FALSE(an.can_prove(fmod(E(x) * 3, 3) == 0));  // x*3 may wrap
  EXPECT_FALSE(an.can_prove(E(k) + 1 < n));
  EXPECT_FALSE(an.can_prove_equal(x, y));
  EXPECT_FALSE(an.can_prove_equal(E(x) * 2, E(x) + 1));
  EXPECT_FALSE(an.can_prove(Var::make("b", b1)));
}

TEST(ArithProve, Assumptions) {
  Analyzer an;
  Var x = Var::make("x", i32);
  Var y = Var::make("y", i32);
  Var b = Var::make("b", b1);
  an.with_scope([&] {
    an.assume(E(x) < 10);
    EXPECT_TRUE(an.can_prove(E(x) < 20));
    EXPECT_FALSE(an.can_prove(E(x) < 5));
    EXPECT_EQ(an.const_int_bound(x).max, 9);
  });
  an.with_scope([&] {
    an.assume((E(x) < y) && b);
    EXPECT_TRUE(an.can_prove(E(x) < y));
    EXPECT_TRUE(an.can_prove(E(x) != y));
    EXPECT_TRUE(an.can_prove(b));
    EXPECT_FALSE(an.can_prove(E(y) < x));
  });
  an.with_scope([&] {
    an.assume(!(E(x) >= 3));
    EXPECT_TRUE(an.can_prove(E(x) <= 2));
  });
  EXPECT_FALSE(an.can_prove(E(x) < 20));
  EXPECT_FALSE(an.can_prove(b));
}

TEST(ArithApi, IdentityDeterminismAndErrors) {
  Var x = Var::make("x", i32);
  Var y = Var::make("y", i32);
  // A simplified expression comes back as the very same node.
  Expr s = arith::simplify(E(y) + x + 1);
  EXPECT_TRUE(arith::simplify(s).same_as(s));
  Expr already = E(x) + y;
  EXPECT_TRUE(arith::simplify(already).same_as(already));
  // Two independently built copies simplify to structurally equal results.
  auto build = [] {
    Var a = Var::make("a", i32);
    Var b = Var::make("b", i32);
    Var cc = Var::make("c", i32);
    return E(cc) * 3 + fdiv(b, 4) - a + min(b, a) + select(E(cc) < a, 1, 2);
  };
  auto build2 = [] {
    Var a = Var::make("a", i32);
    Var b = Var::make("b", i32);
    Var cc = Var::make("c", i32);
    return select(E(b) < a, E(cc) * 3 + fdiv(b, 4) - a + min(b, a), a * 2 + 1);
  };
  EXPECT_TRUE(structural_equal(arith::simplify(build().e), arith::simplify(build().e)));
  EXPECT_TRUE(structural_equal(arith::simplify(build2().e), arith::simplify(build2().e)));
  // Same-named variables keep a deterministic order (first use).
  Var x2 = Var::make("x", i32);
  Expr two = arith::simplify(E(x2) + x + x2);
  EXPECT_TRUE(same(two, E(x2) * 2 + x)) << str(two);
  // API misuse is a user error.
  Analyzer an;
  EXPECT_THROW(an.bind(x, c64(0), c64(4)), Error);
  EXPECT_THROW(an.bind(x, c64(4)), Error);
  EXPECT_THROW(an.can_prove(x), Error);
}

// ---------------------------------------------------------------------------------------------
// Property test: random integer expressions keep their value and simplify idempotently.
// ---------------------------------------------------------------------------------------------

// Reference evaluator with the IR's semantics (wraparound via unsigned arithmetic).
std::pair<Expr, Expr> operands(const Expr& e) {
  switch (e.kind()) {
    case NodeKind::kDiv:
      return {e.as<Div>()->a, e.as<Div>()->b};
    case NodeKind::kMod:
      return {e.as<Mod>()->a, e.as<Mod>()->b};
    case NodeKind::kFloorDiv:
      return {e.as<FloorDiv>()->a, e.as<FloorDiv>()->b};
    default:
      return {e.as<FloorMod>()->a, e.as<FloorMod>()->b};
  }
}

class Evaluator {
 public:
  std::map<const VarNode*, int64_t> env;

  static int64_t wrap(DataType t, uint64_t v) {
    if (t.is_bool()) return static_cast<int64_t>(v & 1);
    if (t.bits() == 64) return static_cast<int64_t>(v);
    uint64_t mask = (uint64_t{1} << t.bits()) - 1;
    v &= mask;
    if (t.is_int() && (v >> (t.bits() - 1)) & 1) return static_cast<int64_t>(v | ~mask);
    return static_cast<int64_t>(v);
  }
  static int64_t min_of(DataType t) {
    if (t.is_uint()) return 0;
    return t.bits() == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (t.bits() - 1));
  }

  int64_t eval(const Expr& e) {
    DataType t = e.dtype();
    auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
    switch (e.kind()) {
      case NodeKind::kIntImm:
        return e.as<IntImm>()->value;
      case NodeKind::kVar: {
        auto it = env.find(e.as<VarNode>());
        if (it == env.end()) throw std::runtime_error("unbound variable " + str(e));
        return it->second;
      }
      case NodeKind::kAdd:
        return wrap(t, u(eval(e.as<Add>()->a)) + u(eval(e.as<Add>()->b)));
      case NodeKind::kSub:
        return wrap(t, u(eval(e.as<Sub>()->a)) - u(eval(e.as<Sub>()->b)));
      case NodeKind::kMul:
        return wrap(t, u(eval(e.as<Mul>()->a)) * u(eval(e.as<Mul>()->b)));
      case NodeKind::kDiv:
      case NodeKind::kMod:
      case NodeKind::kFloorDiv:
      case NodeKind::kFloorMod: {
        auto [ea, eb] = operands(e);
        int64_t a = eval(ea);
        int64_t b = eval(eb);
        bool is_div = e.kind() == NodeKind::kDiv || e.kind() == NodeKind::kFloorDiv;
        if (b == 0) return is_div ? wrap(t, ~uint64_t{0}) : a;  // x / 0 is -1, x % 0 is x
        if (a == min_of(t) && b == -1) return is_div ? a : 0;   // wraps
        int64_t q = a / b;
        int64_t r = a % b;
        if ((e.kind() == NodeKind::kFloorDiv || e.kind() == NodeKind::kFloorMod) && r != 0 &&
            ((r < 0) != (b < 0))) {
          q -= 1;
          r += b;
        }
        return wrap(t, u(is_div ? q : r));
      }
      case NodeKind::kMin:
        return std::min(eval(e.as<Min>()->a), eval(e.as<Min>()->b));
      case NodeKind::kMax:
        return std::max(eval(e.as<Max>()->a), eval(e.as<Max>()->b));
      case NodeKind::kEQ:
        return eval(e.as<EQ>()->a) == eval(e.as<EQ>()->b);
      case NodeKind::kNE:
        return eval(e.as<NE>()->a) != eval(e.as<NE>()->b);
      case NodeKind::kLT:
        return eval(e.as<LT>()->a) < eval(e.as<LT>()->b);
      case NodeKind::kLE:
        return eval(e.as<LE>()->a) <= eval(e.as<LE>()->b);
      case NodeKind::kGT:
        return eval(e.as<GT>()->a) > eval(e.as<GT>()->b);
      case NodeKind::kGE:
        return eval(e.as<GE>()->a) >= eval(e.as<GE>()->b);
      case NodeKind::kAnd: {
        int64_t a = eval(e.as<And>()->a);
        int64_t b = eval(e.as<And>()->b);  // both operands are evaluated
        return a && b;
      }
      case NodeKind::kOr: {
        int64_t a = eval(e.as<Or>()->a);
        int64_t b = eval(e.as<Or>()->b);
        return a || b;
      }
      case NodeKind::kNot:
        return !eval(e.as<Not>()->a);
      case NodeKind::kSelect: {
        const auto* s = e.as<Select>();
        int64_t cond = eval(s->condition);
        int64_t tv = eval(s->true_value);
        int64_t fv = eval(s->false_value);
        return cond ? tv : fv;
      }
      case NodeKind::kCast: {
        int64_t v = eval(e.as<Cast>()->value);
        return t.is_bool() ? (v != 0) : wrap(t, u(v));
      }
      case NodeKind::kLet: {
        const auto* l = e.as<Let>();
        int64_t v = eval(l->value);
        auto saved = env.find(l->var.get()) != env.end() ? std::optional<int64_t>(env[l->var.get()])
                                                         : std::nullopt;
        env[l->var.get()] = v;
        int64_t r = eval(l->body);
        if (saved) {
          env[l->var.get()] = *saved;
        } else {
          env.erase(l->var.get());
        }
        return r;
      }
      default:
        throw std::runtime_error("evaluator: unsupported " + str(e));
    }
  }
};

int64_t lowest(DataType t) {
  if (t.is_uint()) return 0;
  return t.bits() == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (t.bits() - 1));
}
int64_t highest(DataType t) {
  if (t.bits() == 64) return std::numeric_limits<int64_t>::max();
  return t.is_uint() ? (int64_t{1} << t.bits()) - 1 : (int64_t{1} << (t.bits() - 1)) - 1;
}

// Random expressions over two integer dtypes `ta` (variables a, b, c and the size variable n)
// and `tb` (variables p, q, r).
class Generator {
 public:
  Generator(uint64_t seed, DataType ta, DataType tb) : rng_(seed), ta(ta), tb(tb) {
    for (const char* name : {"a", "b", "c"}) va.push_back(Var::make(name, ta));
    for (const char* name : {"p", "q", "r"}) vb.push_back(Var::make(name, tb));
    n = Var::make("n", ta, /*is_size_var=*/true);
  }

  int pick(int count) { return std::uniform_int_distribution<int>(0, count - 1)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  DataType either() { return chance(0.5) ? ta : tb; }
  Expr lit(DataType t, int64_t v) {
    return IntImm::make(t, Evaluator::wrap(t, static_cast<uint64_t>(v)));
  }

  int64_t constant(DataType t) {
    static const int64_t kSmall[] = {0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 64, -1, -2, -3, -4, -8, -16};
    int kind = pick(10);
    if (kind < 7) return Evaluator::wrap(t, kSmall[pick(sizeof(kSmall) / sizeof(kSmall[0]))]);
    if (kind == 7) return highest(t) - pick(3);
    if (kind == 8) return lowest(t) + pick(3);
    return std::uniform_int_distribution<int64_t>(lowest(t), highest(t))(rng_);
  }

  Expr leaf(DataType t) {
    const auto& vars = t == ta ? va : vb;
    if (chance(0.65)) return vars[pick(vars.size())];
    if (t == ta && chance(0.1)) return n;
    return IntImm::make(t, constant(t));
  }

  Expr divisor(DataType t) {
    static const int64_t kDiv[] = {1, 2, 3, 4, 5, 8, 16, 64, -1, -2, -3, -4, -8};
    if (chance(0.85)) return lit(t, kDiv[pick(sizeof(kDiv) / sizeof(kDiv[0]))]);
    if (chance(0.15)) return IntImm::make(t, constant(t) | 1);
    // A divisor that may be 0 (small variable values often are).
    if (chance(0.2)) return leaf(t);
    // Non-constant but never zero.
    if (t.is_uint() || chance(0.5)) return Max::make(leaf(t), lit(t, 1 + pick(8)));
    return Min::make(leaf(t), lit(t, -1 - pick(8)));
  }

  Expr integer(DataType t, int depth) {
    if (depth <= 0 || chance(0.2)) return leaf(t);
    DataType other = t == ta ? tb : ta;
    switch (pick(16)) {
      case 0:
      case 1:
        return Add::make(integer(t, depth - 1), integer(t, depth - 1));
      case 2:
        return Sub::make(integer(t, depth - 1), integer(t, depth - 1));
      case 3:
        return Mul::make(integer(t, depth - 1), IntImm::make(t, constant(t)));
      case 4:
        return Mul::make(integer(t, depth - 1), integer(t, depth - 1));
      case 5:
        return FloorDiv::make(integer(t, depth - 1), divisor(t));
      case 6:
        return FloorMod::make(integer(t, depth - 1), divisor(t));
      case 7:
        return Div::make(integer(t, depth - 1), divisor(t));
      case 8:
        return Mod::make(integer(t, depth - 1), divisor(t));
      case 9:
        return Min::make(integer(t, depth - 1), integer(t, depth - 1));
      case 10:
        return Max::make(integer(t, depth - 1), integer(t, depth - 1));
      case 11:
        return Select::make(boolean(depth - 1), integer(t, depth - 1), integer(t, depth - 1));
      case 12:
        return Cast::make(t, integer(other, depth - 1));
      case 13: {
        Var v = Var::make("v" + std::to_string(let_count_++), t);
        Expr value = integer(t, depth - 1);
        Expr body = integer(t, depth - 1);
        body = chance(0.5) ? Add::make(body, v) : Mul::make(Sub::make(v, body), v);
        return Let::make(v, value, body);
      }
      case 14:  // index-like arithmetic: x * 2^k + y
        return Add::make(Mul::make(integer(t, depth - 1), lit(t, 1 << pick(6))),
                         integer(t, depth - 1));
      default:  // x - (y // 4) * 4
        return Sub::make(integer(t, depth - 1),
                         Mul::make(FloorDiv::make(integer(t, depth - 1), lit(t, 4)), lit(t, 4)));
    }
  }

  Expr boolean(int depth) {
    DataType t = either();
    if (depth <= 0) return LT::make(leaf(t), leaf(t));
    switch (pick(9)) {
      case 0:
        return And::make(boolean(depth - 1), boolean(depth - 1));
      case 1:
        return Or::make(boolean(depth - 1), boolean(depth - 1));
      case 2:
        return Not::make(boolean(depth - 1));
      case 3:
        return EQ::make(integer(t, depth - 1), integer(t, depth - 1));
      case 4:
        return NE::make(integer(t, depth - 1), integer(t, depth - 1));
      case 5:
        return LT::make(integer(t, depth - 1), integer(t, depth - 1));
      case 6:
        return LE::make(integer(t, depth - 1), integer(t, depth - 1));
      case 7:
        return GT::make(integer(t, depth - 1), integer(t, depth - 1));
      default:
        return GE::make(integer(t, depth - 1), integer(t, depth - 1));
    }
  }

  // A random value for a free variable: small, near either end of the dtype, or anywhere.
  int64_t value(DataType t) {
    switch (pick(5)) {
      case 0:
      case 1:
        return t.is_uint() ? pick(21) : pick(41) - 20;
      case 2:
        return lowest(t) + pick(20);
      case 3:
        return highest(t) - pick(20);
      default:
        return std::uniform_int_distribution<int64_t>(lowest(t), highest(t))(rng_);
    }
  }

  std::mt19937_64 rng_;
  DataType ta, tb;
  std::vector<Var> va, vb;
  Var n;
  int let_count_ = 0;
};

// The facts one case binds; assignment() draws values that satisfy them.
struct Context {
  bool ranges = false;   // a in [0, 16), b in [0, n), p in [-8, 8) (unsigned: [0, 16))
  bool value = false;    // r = q * 2 + 1
  bool assumed = false;  // c < 100 assumed
};

void apply(Analyzer& an, Generator& g, const Context& ctx) {
  if (ctx.ranges) {
    an.bind(g.va[0], c(g.ta, 0), c(g.ta, 16));
    an.bind(g.va[1], c(g.ta, 0), g.n);
    an.bind(g.vb[0], c(g.tb, g.tb.is_uint() ? 0 : -8), c(g.tb, 16));
  }
  if (ctx.value) an.bind(g.vb[2], E(g.vb[1]) * c(g.tb, 2) + c(g.tb, 1));
  if (ctx.assumed) an.assume(E(g.va[2]) < c(g.ta, 100));
}

Evaluator assignment(Generator& g, const Context& ctx) {
  Evaluator ev;
  for (const Var& v : g.va) ev.env[v.get()] = g.value(g.ta);
  for (const Var& v : g.vb) ev.env[v.get()] = g.value(g.tb);
  int64_t n = g.value(g.ta);
  if (n < 0) n = -(n + 1);
  ev.env[g.n.get()] = n;
  if (ctx.ranges) {
    ev.env[g.va[0].get()] = g.pick(16);
    if (n < 1) ev.env[g.n.get()] = n = 1 + g.pick(100);
    ev.env[g.va[1].get()] = g.chance(0.5)
                                ? n - 1 - g.pick(static_cast<int>(std::min<int64_t>(n, 5)))
                                : std::uniform_int_distribution<int64_t>(0, n - 1)(g.rng_);
    ev.env[g.vb[0].get()] = g.pick(16) - (g.tb.is_uint() ? 0 : 8);
  }
  if (ctx.value) {
    uint64_t q = static_cast<uint64_t>(ev.env[g.vb[1].get()]);
    ev.env[g.vb[2].get()] = Evaluator::wrap(g.tb, q * 2 + 1);
  }
  if (ctx.assumed && ev.env[g.va[2].get()] >= 100) {
    ev.env[g.va[2].get()] = g.ta.is_uint() ? g.pick(100) : 99 - g.pick(200);
  }
  return ev;
}

// Simplifies `cases` random expressions (about one in four boolean) over (ta, tb) under random
// facts, checks idempotence, and evaluates input and result at `samples` random assignments
// that satisfy the facts: values, const_int_bound and modular_set must all hold.
int check_random(uint64_t seed, int cases, DataType ta, DataType tb, int* changed) {
  constexpr int kSamples = 6;
  int failures = 0;
  for (int index = 0; index < cases && failures < 5; ++index) {
    Generator g(seed + index, ta, tb);
    Context ctx{g.chance(0.5), g.chance(0.3), g.chance(0.3)};
    bool integer = index % 4 != 0;
    DataType t = g.either();
    Expr e = integer ? g.integer(t, 2 + g.pick(4)) : g.boolean(2 + g.pick(3));
    Analyzer an;
    apply(an, g, ctx);
    Expr s = an.simplify(e);
    ConstIntBound b = an.const_int_bound(e);
    ModularSet m = an.modular_set(e);
    *changed += !s.same_as(e);
    Expr again = an.simplify(s);
    if (!again.same_as(s)) {  // idempotent, and an unchanged expression is the same node
      ADD_FAILURE() << "case " << index << ": not idempotent\n  input: " << str(e)
                    << "\n  once:  " << str(s) << "\n  twice: " << str(again);
      ++failures;
    }
    for (int sample = 0; sample < kSamples; ++sample) {
      Evaluator ev = assignment(g, ctx);
      int64_t want = ev.eval(e);
      int64_t got = ev.eval(s);
      std::string where;
      if (want != got) where = "value changed";
      if (want < b.min || want > b.max) where = "bound violated";
      if (m.coeff == 0 ? want != m.base : ((static_cast<__int128>(want) - m.base) % m.coeff) != 0) {
        where = "congruence violated";
      }
      if (!where.empty()) {
        std::ostringstream vars;
        for (const auto& [v, value] : ev.env) vars << " " << v->name << "=" << value;
        ADD_FAILURE() << "case " << index << ": " << where << "\n  input:      " << str(e)
                      << "\n  simplified: " << str(s) << "\n  values:" << vars.str() << "\n  want "
                      << want << ", got " << got << ", bound [" << b.min << ", " << b.max
                      << "], set " << m.coeff << "k+" << m.base;
        ++failures;
        break;
      }
    }
  }
  return failures;
}

TEST(ArithProperty, RandomInt32Int64ExpressionsKeepTheirValue) {
  constexpr int kCases = 14000;  // 10500 integer-valued, 3500 boolean
  auto start = std::chrono::steady_clock::now();
  int changed = 0;
  EXPECT_EQ(check_random(0x5eed0000u, kCases, i32, i64, &changed), 0);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ property ] %d int32/int64 expressions (%d changed) in %.2f s\n", kCases, changed,
              seconds);
  EXPECT_GT(changed, kCases / 2);  // the rules are actually exercised
}

TEST(ArithProperty, RandomNarrowAndUnsignedExpressionsKeepTheirValue) {
  int changed = 0;
  EXPECT_EQ(check_random(0xb17e0000u, 3000, i8, u8, &changed), 0);
  EXPECT_EQ(check_random(0xface0000u, 3000, DataType::UInt(32), DataType::Int(16), &changed), 0);
  EXPECT_GT(changed, 3000);
}

}  // namespace
}  // namespace primjit
