// Expressions: constants, variables, arithmetic with the IR's exact semantics (wraparound,
// truncating and flooring division, float rounding per dtype), casts, loads and vectors.
#include <cmath>
#include <limits>

#include "jit/emu/compiler.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"
#include "primjit/ir/text.h"

namespace primjit::jit::emu {
namespace {

enum class BinOp {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,
  kFloorDiv,
  kFloorMod,
  kMin,
  kMax,
  kEQ,
  kNE,
  kLT,
  kLE,
  kGT,
  kGE,
  kAnd,
  kOr
};

bool is_compare(BinOp op) { return op >= BinOp::kEQ && op <= BinOp::kGE; }

bool is_division(BinOp op) { return op >= BinOp::kDiv && op <= BinOp::kFloorMod; }
bool is_quotient(BinOp op) { return op == BinOp::kDiv || op == BinOp::kFloorDiv; }

// Integer division and remainder for every input (docs/semantics.md, RISC-V's rules): x / 0 is
// -1, x % 0 is x, MIN / -1 is MIN and MIN % -1 is 0; FloorDiv and FloorMod round the quotient
// toward negative infinity.
Scalar signed_divide(BinOp op, int bits, int64_t a, int64_t b) {
  const bool quotient = is_quotient(op);
  if (b == 0) return Scalar::of_int(quotient ? -1 : a);
  if (b == -1)
    return Scalar::of_int(quotient ? wrap_signed(0 - static_cast<uint64_t>(a), bits) : 0);
  int64_t q = a / b;
  int64_t r = a % b;
  if ((op == BinOp::kFloorDiv || op == BinOp::kFloorMod) && r != 0 && ((r < 0) != (b < 0))) {
    --q;
    r += b;
  }
  return Scalar::of_int(quotient ? q : r);
}

Scalar unsigned_divide(BinOp op, int bits, uint64_t a, uint64_t b) {
  if (b == 0)
    return Scalar::of_int(is_quotient(op) ? wrap_unsigned(~uint64_t{0}, bits)
                                          : static_cast<int64_t>(a));
  return Scalar::of_int(static_cast<int64_t>(is_quotient(op) ? a / b : a % b));
}

// Checked mode (Options::checked_arithmetic): a division by zero, or MIN / -1, is an error.
[[noreturn]] __attribute__((noinline, cold)) void division_error(Exec& ex, const Expr& source,
                                                                 bool overflow) {
  PRIMJIT_USER_ERROR() << "integer division " << (overflow ? "overflow" : "by zero") << " in `"
                       << print(source) << "`" << ex.where();
}

void check_division(const TypeInfo& t, BinOp op, const Scalar& a, const Scalar& b,
                    const Expr& source, Exec& ex) {
  if (t.repr != Repr::kInt && t.repr != Repr::kUInt) return;
  if (b.i == 0) division_error(ex, source, false);
  if (t.repr == Repr::kInt && is_quotient(op) && b.i == -1 &&
      a.i == wrap_signed(uint64_t{1} << (t.bits - 1), t.bits)) {
    division_error(ex, source, true);
  }
}

// Floating Min and Max: IEEE 754-2019 minimumNumber / maximumNumber. A NaN operand is ignored
// (NaN only when both are), and -0 orders below +0.
double float_min(double a, double b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b) || a < b) return a;
  if (b < a) return b;
  return std::signbit(a) ? a : b;
}
double float_max(double a, double b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b) || a > b) return a;
  if (b > a) return b;
  return std::signbit(a) ? b : a;
}

[[noreturn]] __attribute__((noinline, cold)) void unsupported_operation(Exec& ex, DataType t) {
  PRIMJIT_USER_ERROR() << "operation on values of type " << t << " is not supported" << ex.where();
}

template <typename T>
bool compare(BinOp op, T a, T b) {
  switch (op) {
    case BinOp::kEQ:
      return a == b;
    case BinOp::kNE:
      return a != b;
    case BinOp::kLT:
      return a < b;
    case BinOp::kLE:
      return a <= b;
    case BinOp::kGT:
      return a > b;
    case BinOp::kGE:
      return a >= b;
    default:
      return false;
  }
}

Scalar signed_op(BinOp op, int bits, int64_t a, int64_t b) {
  const uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (op) {
    case BinOp::kAdd:
      return Scalar::of_int(wrap_signed(ua + ub, bits));
    case BinOp::kSub:
      return Scalar::of_int(wrap_signed(ua - ub, bits));
    case BinOp::kMul:
      return Scalar::of_int(wrap_signed(ua * ub, bits));
    case BinOp::kDiv:
    case BinOp::kFloorDiv:
    case BinOp::kMod:
    case BinOp::kFloorMod:
      return signed_divide(op, bits, a, b);
    case BinOp::kMin:
      return Scalar::of_int(std::min(a, b));
    case BinOp::kMax:
      return Scalar::of_int(std::max(a, b));
    case BinOp::kAnd:
      return Scalar::of_int((a != 0 && b != 0) ? 1 : 0);
    case BinOp::kOr:
      return Scalar::of_int((a != 0 || b != 0) ? 1 : 0);
    default:
      return Scalar::of_int(compare(op, a, b) ? 1 : 0);
  }
}

Scalar unsigned_op(BinOp op, int bits, uint64_t a, uint64_t b) {
  switch (op) {
    case BinOp::kAdd:
      return Scalar::of_int(wrap_unsigned(a + b, bits));
    case BinOp::kSub:
      return Scalar::of_int(wrap_unsigned(a - b, bits));
    case BinOp::kMul:
      return Scalar::of_int(wrap_unsigned(a * b, bits));
    case BinOp::kDiv:
    case BinOp::kFloorDiv:
    case BinOp::kMod:
    case BinOp::kFloorMod:
      return unsigned_divide(op, bits, a, b);
    case BinOp::kMin:
      return Scalar::of_int(static_cast<int64_t>(std::min(a, b)));
    case BinOp::kMax:
      return Scalar::of_int(static_cast<int64_t>(std::max(a, b)));
    default:
      return Scalar::of_int(compare(op, a, b) ? 1 : 0);
  }
}

Scalar float_op(BinOp op, const TypeInfo& t, double a, double b) {
  double r;
  switch (op) {
    case BinOp::kAdd:
      r = a + b;
      break;
    case BinOp::kSub:
      r = a - b;
      break;
    case BinOp::kMul:
      r = a * b;
      break;
    case BinOp::kDiv:
      r = a / b;
      break;
    case BinOp::kMod:
      r = std::fmod(a, b);
      break;
    case BinOp::kFloorDiv:
      r = std::floor(round_float(t, a / b));
      break;
    case BinOp::kFloorMod: {
      double q = std::floor(round_float(t, a / b));
      r = a - round_float(t, q * b);
      break;
    }
    case BinOp::kMin:
      r = float_min(a, b);
      break;
    case BinOp::kMax:
      r = float_max(a, b);
      break;
    default:
      return Scalar::of_int(compare(op, a, b) ? 1 : 0);
  }
  // The double result of one operation on float32 (or narrower) operands rounds to the same
  // value as the float32 operation would: double has more than 2 * 24 + 2 bits.
  return Scalar::of_float(round_float(t, r));
}

Scalar binary(BinOp op, const TypeInfo& t, const Scalar& a, const Scalar& b, Exec& ex) {
  switch (t.repr) {
    case Repr::kInt:
    case Repr::kBool:
      return signed_op(op, t.repr == Repr::kBool ? 64 : t.bits, a.i, b.i);
    case Repr::kUInt:
      return unsigned_op(op, t.bits, a.u, b.u);
    case Repr::kFloat32:
    case Repr::kFloat64:
    case Repr::kNarrow:
      return float_op(op, t, a.f, b.f);
    case Repr::kHandle:
      if (is_compare(op)) return Scalar::of_int(compare(op, a.u, b.u) ? 1 : 0);
      break;
    case Repr::kVoid:
      break;
  }
  unsupported_operation(ex, t.dtype);
}

// --- nodes ----------------------------------------------------------------------------------

class ConstNode : public CExpr {
 public:
  ConstNode(DataType dtype, Scalar value) : CExpr(dtype), value_(value) {}
  Scalar eval(Exec&) const override { return value_; }

 private:
  Scalar value_;
};

class UnsupportedNode : public CExpr {
 public:
  UnsupportedNode(DataType dtype, std::string message)
      : CExpr(dtype), message_(std::move(message)) {}
  Scalar eval(Exec& ex) const override { throw UnsupportedError(message_ + ex.where()); }
  void eval_lanes(Exec& ex, Lanes*) const override { eval(ex); }

 private:
  std::string message_;
};

class StringNode : public CExpr {
 public:
  explicit StringNode(Expr e) : CExpr(DataType::Handle()), e_(std::move(e)) {}
  Scalar eval(Exec&) const override {
    return Scalar::of_pointer(reinterpret_cast<uint64_t>(e_.as<StringImm>()->value.c_str()),
                              nullptr);
  }

 private:
  Expr e_;  // keeps the string alive
};

class SlotNode : public CExpr {
 public:
  SlotNode(DataType dtype, int slot) : CExpr(dtype), slot_(slot) {}
  Scalar eval(Exec& ex) const override { return ex.slot(slot_); }

 private:
  int slot_;
};

class VectorSlotNode : public CExpr {
 public:
  VectorSlotNode(DataType dtype, int slot) : CExpr(dtype), slot_(slot) {}
  Scalar eval(Exec&) const override { PRIMJIT_INTERNAL_ERROR() << "scalar eval of a vector"; }
  void eval_lanes(Exec& ex, Lanes* out) const override {
    *out = ex.frame->vslots[static_cast<size_t>(slot_)];
  }

 private:
  int slot_;
};

/// Lane `l` of an operand that is either scalar (broadcast) or a vector.
inline const Scalar& lane(const Lanes& v, size_t l) { return v.size() == 1 ? v[0] : v[l]; }

class BinaryNode : public CExpr {
 public:
  // `checked`: the IR division, when the checked mode reports divisions by zero and overflows.
  BinaryNode(DataType dtype, BinOp op, DataType operand, CExprPtr a, CExprPtr b, Expr checked)
      : CExpr(dtype),
        op_(op),
        operand_(operand),
        a_(std::move(a)),
        b_(std::move(b)),
        checked_(std::move(checked)) {}
  Scalar eval(Exec& ex) const override {
    Scalar a = a_->eval(ex);
    Scalar b = b_->eval(ex);
    if (checked_.defined()) check_division(operand_, op_, a, b, checked_, ex);
    return binary(op_, operand_, a, b, ex);
  }
  void eval_lanes(Exec& ex, Lanes* out) const override {
    if (dtype.lanes() == 1) return CExpr::eval_lanes(ex, out);
    Lanes a, b;
    a_->eval_lanes(ex, &a);
    b_->eval_lanes(ex, &b);
    out->resize(static_cast<size_t>(dtype.lanes()));
    for (size_t l = 0; l < out->size(); ++l) {
      if (checked_.defined()) check_division(operand_, op_, lane(a, l), lane(b, l), checked_, ex);
      (*out)[l] = binary(op_, operand_, lane(a, l), lane(b, l), ex);
    }
  }

 private:
  BinOp op_;
  TypeInfo operand_;
  CExprPtr a_, b_;
  Expr checked_;
};

// Fast paths for the most frequent scalar cases: signed integer index arithmetic and float32.
template <BinOp Op>
class IntNode : public CExpr {
 public:
  IntNode(DataType dtype, int bits, CExprPtr a, CExprPtr b)
      : CExpr(dtype), bits_(bits), a_(std::move(a)), b_(std::move(b)) {}
  Scalar eval(Exec& ex) const override {
    const int64_t a = a_->eval(ex).i;
    const int64_t b = b_->eval(ex).i;
    const uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
    if constexpr (Op == BinOp::kAdd) return Scalar::of_int(wrap_signed(ua + ub, bits_));
    if constexpr (Op == BinOp::kSub) return Scalar::of_int(wrap_signed(ua - ub, bits_));
    if constexpr (Op == BinOp::kMul) return Scalar::of_int(wrap_signed(ua * ub, bits_));
    if constexpr (Op == BinOp::kMin) return Scalar::of_int(a < b ? a : b);
    if constexpr (Op == BinOp::kMax) return Scalar::of_int(a < b ? b : a);
    return Scalar::of_int(compare(Op, a, b) ? 1 : 0);
  }

 private:
  int bits_;
  CExprPtr a_, b_;
};

template <BinOp Op>
class Float32Node : public CExpr {
 public:
  Float32Node(DataType dtype, CExprPtr a, CExprPtr b)
      : CExpr(dtype), a_(std::move(a)), b_(std::move(b)) {}
  Scalar eval(Exec& ex) const override {
    const float a = static_cast<float>(a_->eval(ex).f);
    const float b = static_cast<float>(b_->eval(ex).f);
    if constexpr (Op == BinOp::kAdd) return Scalar::of_float(a + b);
    if constexpr (Op == BinOp::kSub) return Scalar::of_float(a - b);
    if constexpr (Op == BinOp::kMul) return Scalar::of_float(a * b);
    if constexpr (Op == BinOp::kDiv) return Scalar::of_float(a / b);
    return Scalar::of_int(compare(Op, a, b) ? 1 : 0);
  }

 private:
  CExprPtr a_, b_;
};

CExprPtr make_binary(DataType dtype, BinOp op, DataType operand, CExprPtr a, CExprPtr b,
                     Expr checked) {
  const TypeInfo t(operand);
  if (dtype.lanes() == 1 && t.repr == Repr::kInt) {
    switch (op) {
#define PRIMJIT_EMU_INT(Op) \
  case BinOp::Op:           \
    return std::make_unique<IntNode<BinOp::Op>>(dtype, t.bits, std::move(a), std::move(b));
      PRIMJIT_EMU_INT(kAdd)
      PRIMJIT_EMU_INT(kSub)
      PRIMJIT_EMU_INT(kMul)
      PRIMJIT_EMU_INT(kMin)
      PRIMJIT_EMU_INT(kMax)
      PRIMJIT_EMU_INT(kEQ)
      PRIMJIT_EMU_INT(kNE)
      PRIMJIT_EMU_INT(kLT)
      PRIMJIT_EMU_INT(kLE)
      PRIMJIT_EMU_INT(kGT)
      PRIMJIT_EMU_INT(kGE)
#undef PRIMJIT_EMU_INT
      default:
        break;
    }
  }
  if (dtype.lanes() == 1 && t.repr == Repr::kFloat32) {
    switch (op) {
#define PRIMJIT_EMU_F32(Op) \
  case BinOp::Op:           \
    return std::make_unique<Float32Node<BinOp::Op>>(dtype, std::move(a), std::move(b));
      PRIMJIT_EMU_F32(kAdd)
      PRIMJIT_EMU_F32(kSub)
      PRIMJIT_EMU_F32(kMul)
      PRIMJIT_EMU_F32(kDiv)
      PRIMJIT_EMU_F32(kEQ)
      PRIMJIT_EMU_F32(kNE)
      PRIMJIT_EMU_F32(kLT)
      PRIMJIT_EMU_F32(kLE)
      PRIMJIT_EMU_F32(kGT)
      PRIMJIT_EMU_F32(kGE)
#undef PRIMJIT_EMU_F32
      default:
        break;
    }
  }
  if (!is_division(op) || !t.is_integral()) checked = Expr();
  return std::make_unique<BinaryNode>(dtype, op, operand, std::move(a), std::move(b),
                                      std::move(checked));
}

class NotNode : public CExpr {
 public:
  NotNode(DataType dtype, CExprPtr a) : CExpr(dtype), a_(std::move(a)) {}
  Scalar eval(Exec& ex) const override { return Scalar::of_int(a_->eval(ex).i == 0 ? 1 : 0); }
  void eval_lanes(Exec& ex, Lanes* out) const override {
    a_->eval_lanes(ex, out);
    for (Scalar& s : *out) s = Scalar::of_int(s.i == 0 ? 1 : 0);
  }

 private:
  CExprPtr a_;
};

class SelectNode : public CExpr {
 public:
  SelectNode(DataType dtype, CExprPtr c, CExprPtr t, CExprPtr f)
      : CExpr(dtype), c_(std::move(c)), t_(std::move(t)), f_(std::move(f)) {}
  Scalar eval(Exec& ex) const override {
    Scalar c = c_->eval(ex);  // all three operands are evaluated
    Scalar t = t_->eval(ex);
    Scalar f = f_->eval(ex);
    return c.i != 0 ? t : f;
  }
  void eval_lanes(Exec& ex, Lanes* out) const override {
    if (dtype.lanes() == 1) return CExpr::eval_lanes(ex, out);
    Lanes c, t, f;
    c_->eval_lanes(ex, &c);
    t_->eval_lanes(ex, &t);
    f_->eval_lanes(ex, &f);
    out->resize(static_cast<size_t>(dtype.lanes()));
    for (size_t l = 0; l < out->size(); ++l) (*out)[l] = lane(c, l).i != 0 ? t[l] : f[l];
  }

 private:
  CExprPtr c_, t_, f_;
};

class CastNode : public CExpr {
 public:
  CastNode(DataType dtype, CExprPtr a) : CExpr(dtype), from_(a->dtype), a_(std::move(a)) {}
  Scalar eval(Exec& ex) const override { return cast_scalar(from_, type, a_->eval(ex)); }
  void eval_lanes(Exec& ex, Lanes* out) const override {
    a_->eval_lanes(ex, out);
    for (Scalar& s : *out) s = cast_scalar(from_, type, s);
  }

 private:
  TypeInfo from_;
  CExprPtr a_;
};

class LetNode : public CExpr {
 public:
  LetNode(DataType dtype, int slot, bool vector, CExprPtr value, CExprPtr body)
      : CExpr(dtype),
        slot_(slot),
        vector_(vector),
        value_(std::move(value)),
        body_(std::move(body)) {}
  Scalar eval(Exec& ex) const override {
    bind(ex);
    return body_->eval(ex);
  }
  void eval_lanes(Exec& ex, Lanes* out) const override {
    bind(ex);
    body_->eval_lanes(ex, out);
  }

 private:
  void bind(Exec& ex) const {
    if (vector_) {
      value_->eval_lanes(ex, &ex.frame->vslots[static_cast<size_t>(slot_)]);
    } else {
      ex.slot(slot_) = value_->eval(ex);
    }
  }
  int slot_;
  bool vector_;
  CExprPtr value_, body_;
};

class LoadNode : public CExpr {
 public:
  LoadNode(DataType dtype, const CBuffer* buffer, std::vector<CExprPtr> indices)
      : CExpr(dtype), buffer_(buffer), indices_(std::move(indices)) {}
  Scalar eval(Exec& ex) const override {
    int64_t idx[kMaxBufferDims];
    for (size_t d = 0; d < indices_.size(); ++d) idx[d] = indices_[d]->eval(ex).i;
    const int64_t flat = buffer_->flat_index(ex, idx, "load");
    return decode(buffer_->elem, buffer_->address(ex, flat, false, "load"));
  }
  void eval_lanes(Exec& ex, Lanes* out) const override {
    if (dtype.lanes() == 1) return CExpr::eval_lanes(ex, out);
    std::vector<Lanes> index_lanes(indices_.size());
    size_t n = 1;
    for (size_t d = 0; d < indices_.size(); ++d) {
      indices_[d]->eval_lanes(ex, &index_lanes[d]);
      n = std::max(n, index_lanes[d].size());
    }
    const int bytes = buffer_->elem.bits / 8;
    out->clear();
    out->reserve(static_cast<size_t>(dtype.lanes()));
    int64_t idx[kMaxBufferDims];
    for (size_t l = 0; l < n; ++l) {
      for (size_t d = 0; d < indices_.size(); ++d) idx[d] = lane(index_lanes[d], l).i;
      const int64_t flat = buffer_->flat_index(ex, idx, "load");
      const uint8_t* p = buffer_->address(ex, flat, false, "load");
      for (int k = 0; k < buffer_->elem_lanes; ++k)
        out->push_back(decode(buffer_->elem, p + k * bytes));
    }
  }

 private:
  const CBuffer* buffer_;
  std::vector<CExprPtr> indices_;
};

class RampNode : public CExpr {
 public:
  RampNode(DataType dtype, CExprPtr base, CExprPtr stride)
      : CExpr(dtype), base_(std::move(base)), stride_(std::move(stride)) {}
  Scalar eval(Exec&) const override { PRIMJIT_INTERNAL_ERROR() << "scalar eval of a Ramp"; }
  void eval_lanes(Exec& ex, Lanes* out) const override {
    Scalar b = base_->eval(ex), s = stride_->eval(ex);
    out->resize(static_cast<size_t>(dtype.lanes()));
    for (size_t l = 0; l < out->size(); ++l) {
      (*out)[l] = from_integer(type, static_cast<int64_t>(b.u + s.u * l), false);
    }
  }

 private:
  CExprPtr base_, stride_;
};

class BroadcastNode : public CExpr {
 public:
  BroadcastNode(DataType dtype, CExprPtr value) : CExpr(dtype), value_(std::move(value)) {}
  Scalar eval(Exec&) const override { PRIMJIT_INTERNAL_ERROR() << "scalar eval of a Broadcast"; }
  void eval_lanes(Exec& ex, Lanes* out) const override {
    out->assign(static_cast<size_t>(dtype.lanes()), value_->eval(ex));
  }

 private:
  CExprPtr value_;
};

// --- the compiler's expression cases ----------------------------------------------------------

class ExprCompiler : public ExprFunctor<ExprCompiler, CExprPtr> {
 public:
  explicit ExprCompiler(Compiler& c) : c_(c) {}

  CExprPtr visit(const IntImm* op) {
    return make_const_node(op->dtype, from_integer(TypeInfo(op->dtype), op->value, false));
  }
  CExprPtr visit(const FloatImm* op) {
    return make_const_node(op->dtype, from_double(TypeInfo(op->dtype), op->value));
  }
  CExprPtr visit(const StringImm* op) { return std::make_unique<StringNode>(Expr(op)); }
  CExprPtr visit(const VarNode* op) {
    int slot = c_.use(op);
    if (op->dtype.lanes() > 1) return std::make_unique<VectorSlotNode>(op->dtype, slot);
    return std::make_unique<SlotNode>(op->dtype, slot);
  }
#define PRIMJIT_EMU_BINARY(Node, Op)                                                        \
  CExprPtr visit(const Node* op) {                                                          \
    Expr checked = c_.program.options.checked_arithmetic ? Expr(op) : Expr();               \
    return make_binary(op->dtype, BinOp::Op, op->a.dtype(), c_.expr(op->a), c_.expr(op->b), \
                       std::move(checked));                                                 \
  }
  PRIMJIT_EMU_BINARY(Add, kAdd)
  PRIMJIT_EMU_BINARY(Sub, kSub)
  PRIMJIT_EMU_BINARY(Mul, kMul)
  PRIMJIT_EMU_BINARY(Div, kDiv)
  PRIMJIT_EMU_BINARY(Mod, kMod)
  PRIMJIT_EMU_BINARY(FloorDiv, kFloorDiv)
  PRIMJIT_EMU_BINARY(FloorMod, kFloorMod)
  PRIMJIT_EMU_BINARY(Min, kMin)
  PRIMJIT_EMU_BINARY(Max, kMax)
  PRIMJIT_EMU_BINARY(EQ, kEQ)
  PRIMJIT_EMU_BINARY(NE, kNE)
  PRIMJIT_EMU_BINARY(LT, kLT)
  PRIMJIT_EMU_BINARY(LE, kLE)
  PRIMJIT_EMU_BINARY(GT, kGT)
  PRIMJIT_EMU_BINARY(GE, kGE)
  PRIMJIT_EMU_BINARY(And, kAnd)
  PRIMJIT_EMU_BINARY(Or, kOr)
#undef PRIMJIT_EMU_BINARY
  CExprPtr visit(const Not* op) { return std::make_unique<NotNode>(op->dtype, c_.expr(op->a)); }
  CExprPtr visit(const Select* op) {
    return std::make_unique<SelectNode>(op->dtype, c_.expr(op->condition), c_.expr(op->true_value),
                                        c_.expr(op->false_value));
  }
  CExprPtr visit(const Cast* op) {
    return std::make_unique<CastNode>(op->dtype, c_.expr(op->value));
  }
  CExprPtr visit(const Let* op) {
    c_.define(op->var.get());
    CExprPtr value = c_.expr(op->value);
    int slot = c_.slot(op->var.get());
    return std::make_unique<LetNode>(op->dtype, slot, op->var.dtype().lanes() > 1, std::move(value),
                                     c_.expr(op->body));
  }
  CExprPtr visit(const BufferLoad* op) {
    std::vector<CExprPtr> indices;
    for (const Expr& e : op->indices) indices.push_back(c_.expr(e));
    return std::make_unique<LoadNode>(op->dtype, c_.buffer(op->buffer), std::move(indices));
  }
  CExprPtr visit(const Ramp* op) {
    return std::make_unique<RampNode>(op->dtype, c_.expr(op->base), c_.expr(op->stride));
  }
  CExprPtr visit(const Broadcast* op) {
    return std::make_unique<BroadcastNode>(op->dtype, c_.expr(op->value));
  }
  CExprPtr visit(const Call* op) { return c_.call(op); }

 private:
  Compiler& c_;
};

}  // namespace

CExprPtr make_const_node(DataType dtype, Scalar value) {
  return std::make_unique<ConstNode>(dtype, value);
}

CExprPtr make_unsupported_node(DataType dtype, std::string message) {
  return std::make_unique<UnsupportedNode>(dtype, std::move(message));
}

CExprPtr convert(CExprPtr e, DataType to) {
  if (e->dtype == to) return e;
  return std::make_unique<CastNode>(to, std::move(e));
}

CExprPtr Compiler::expr(const Expr& e) {
  PRIMJIT_USER_CHECK(e.defined()) << "function '" << name << "' holds an undefined expression";
  return ExprCompiler(*this).visit_expr(e);
}

}  // namespace primjit::jit::emu
