// Expressions of the C++ builder (included by primjit/builder.h): operators on primjit::Expr,
// the dtype constants, ExprLike and the expression helpers (cast, select, min, max, math).
//
// Every error names the user's file:line. Functions take a defaulted std::source_location;
// operators cannot (their arity is fixed), so one operand of every overload is an Operand, whose
// converting constructor takes the location as a defaulted argument: the default is evaluated
// where the conversion happens, which is the operator in the user's code. An Operand refers to
// the caller's expression without copying it, and the location is read only on failure.
#pragma once

#include <cstdint>
#include <source_location>
#include <string>
#include <type_traits>
#include <utility>

#include "primjit/error.h"
#include "primjit/ir.h"

namespace primjit {

namespace builder_detail {

using Loc = std::source_location;

/// Where user code called the builder, for error messages: "file.cc:12: " ("" when unknown).
inline std::string at(const Loc& loc) {
  if (loc.line() == 0) return "";
  std::string file = loc.file_name();
  size_t slash = file.find_last_of('/');
  if (slash != std::string::npos) file = file.substr(slash + 1);
  return file + ":" + std::to_string(loc.line()) + ": ";
}

/// Runs `make` (IR constructors); a primjit::Error it throws comes back with `loc` in front.
template <typename F>
Expr located(const Loc& loc, const char* what, F&& make) {
  try {
    return make();
  } catch (const Error& e) {
    throw Error(at(loc) + what + ": " + e.what());
  }
}

/// `value` as a constant of `dtype` (a vector dtype gives a Broadcast).
inline Expr literal(DataType dtype, double value, bool is_integral_literal) {
  DataType scalar = dtype.element_of();
  Expr e;
  if (scalar.is_floating()) {
    e = FloatImm::make(scalar, value);
  } else if (scalar.is_int_or_bool()) {
    PRIMJIT_USER_CHECK(is_integral_literal ||
                       value == static_cast<double>(static_cast<int64_t>(value)))
        << "the literal " << value << " cannot be used with an operand of dtype " << dtype
        << " (insert a cast)";
    e = IntImm::make(scalar, static_cast<int64_t>(value));
  } else {
    PRIMJIT_USER_ERROR() << "a literal cannot be combined with an operand of dtype " << dtype;
  }
  return dtype.lanes() > 1 ? Broadcast::make(e, dtype.lanes()) : e;
}

inline Expr int_literal(DataType dtype, int64_t value) {
  DataType scalar = dtype.element_of();
  if (scalar.is_int_or_bool()) {
    Expr e = IntImm::make(scalar, value);
    return dtype.lanes() > 1 ? Broadcast::make(e, dtype.lanes()) : e;
  }
  return literal(dtype, static_cast<double>(value), true);
}

/// A C++ literal (an int32 IntImm or float32 FloatImm, as ExprLike makes them) as a constant of
/// `dtype`, the dtype of what it is stored to or combined with; anything else unchanged.
inline Expr adopt_literal(DataType dtype, const Expr& v) {
  if (!v.defined() || v.dtype() == dtype) return v;
  if (const auto* imm = v.as<IntImm>(); imm != nullptr && v.dtype() == DataType::Int(32)) {
    return int_literal(dtype, imm->value);
  }
  if (const auto* fimm = v.as<FloatImm>(); fimm != nullptr && v.dtype() == DataType::Float(32)) {
    return literal(dtype, fimm->value, false);
  }
  return v;
}

inline void check_operand(const Expr& e) {
  PRIMJIT_USER_CHECK(e.defined()) << "an operand is undefined";
}

/// One operand of a builder operator, and where the operator was written: an expression
/// (referred to; it outlives the operator call), a buffer element (loaded) or an ExprLike.
class Operand {
 public:
  Operand(const Expr& e, Loc loc = Loc::current()) : expr_(&e), loc_(loc) {}  // NOLINT
  template <typename T, typename = decltype(std::declval<const T&>().load())>
  Operand(const T& element, Loc loc = Loc::current())  // NOLINT
      : loaded_(element.load()), loc_(loc) {}
  template <typename T, typename = decltype(std::declval<const T&>().expr()), typename = void>
  Operand(const T& like, Loc loc = Loc::current()) : expr_(&like.expr()), loc_(loc) {}  // NOLINT

  const Expr& expr() const { return expr_ != nullptr ? *expr_ : loaded_; }
  const Loc& loc() const { return loc_; }

 private:
  const Expr* expr_ = nullptr;
  Expr loaded_;
  Loc loc_;
};

using MakeBinary = Expr (*)(const Expr&, const Expr&);

inline Expr binary(const char* op, const Operand& a, const Operand& b, MakeBinary make) {
  return located(a.loc(), op, [&] {
    check_operand(a.expr());
    check_operand(b.expr());
    return make(a.expr(), b.expr());
  });
}
/// `a op value` (or `value op a` when `literal_first`) for an integral literal.
inline Expr binary_int(const char* op, const Operand& a, int64_t value, bool literal_first,
                       MakeBinary make) {
  return located(a.loc(), op, [&] {
    check_operand(a.expr());
    Expr v = int_literal(a.expr().dtype(), value);
    return literal_first ? make(v, a.expr()) : make(a.expr(), v);
  });
}
/// The same for a floating literal.
inline Expr binary_float(const char* op, const Operand& a, double value, bool literal_first,
                         MakeBinary make) {
  return located(a.loc(), op, [&] {
    check_operand(a.expr());
    Expr v = literal(a.expr().dtype(), value, false);
    return literal_first ? make(v, a.expr()) : make(a.expr(), v);
  });
}

}  // namespace builder_detail

// =============================================================================================
// Expression operators on primjit::Expr (found by argument-dependent lookup)
// =============================================================================================

// Both operands of the expression form are Operands, so that C++20's reversed == candidates
// tie with (and lose to) the written order instead of being preferred for one argument.
#define PRIMJIT_BUILDER_BINARY_OPERATOR(op, make_expr)                                           \
  inline Expr operator op(builder_detail::Operand a, builder_detail::Operand b) {                \
    return builder_detail::binary("operator " #op, a, b,                                         \
                                  [](const Expr& x, const Expr& y) { return make_expr; });       \
  }                                                                                              \
  inline Expr operator op(builder_detail::Operand a, int b) {                                    \
    return builder_detail::binary_int("operator " #op, a, b, false,                              \
                                      [](const Expr& x, const Expr& y) { return make_expr; });   \
  }                                                                                              \
  inline Expr operator op(builder_detail::Operand a, int64_t b) {                                \
    return builder_detail::binary_int("operator " #op, a, b, false,                              \
                                      [](const Expr& x, const Expr& y) { return make_expr; });   \
  }                                                                                              \
  inline Expr operator op(builder_detail::Operand a, double b) {                                 \
    return builder_detail::binary_float("operator " #op, a, b, false,                            \
                                        [](const Expr& x, const Expr& y) { return make_expr; }); \
  }                                                                                              \
  inline Expr operator op(int a, builder_detail::Operand b) {                                    \
    return builder_detail::binary_int("operator " #op, b, a, true,                               \
                                      [](const Expr& x, const Expr& y) { return make_expr; });   \
  }                                                                                              \
  inline Expr operator op(int64_t a, builder_detail::Operand b) {                                \
    return builder_detail::binary_int("operator " #op, b, a, true,                               \
                                      [](const Expr& x, const Expr& y) { return make_expr; });   \
  }                                                                                              \
  inline Expr operator op(double a, builder_detail::Operand b) {                                 \
    return builder_detail::binary_float("operator " #op, b, a, true,                             \
                                        [](const Expr& x, const Expr& y) { return make_expr; }); \
  }

PRIMJIT_BUILDER_BINARY_OPERATOR(+, Add::make(x, y))
PRIMJIT_BUILDER_BINARY_OPERATOR(-, Sub::make(x, y))
PRIMJIT_BUILDER_BINARY_OPERATOR(*, Mul::make(x, y))
PRIMJIT_BUILDER_BINARY_OPERATOR(/, x.dtype().is_floating() ? Div::make(x, y) : FloorDiv::make(x, y))
PRIMJIT_BUILDER_BINARY_OPERATOR(%, FloorMod::make(x, y))
PRIMJIT_BUILDER_BINARY_OPERATOR(<, LT::make(x, y))
PRIMJIT_BUILDER_BINARY_OPERATOR(<=, LE::make(x, y))
PRIMJIT_BUILDER_BINARY_OPERATOR(>, GT::make(x, y))
PRIMJIT_BUILDER_BINARY_OPERATOR(>=, GE::make(x, y))
PRIMJIT_BUILDER_BINARY_OPERATOR(==, EQ::make(x, y))
PRIMJIT_BUILDER_BINARY_OPERATOR(!=, NE::make(x, y))
#undef PRIMJIT_BUILDER_BINARY_OPERATOR

inline Expr operator&&(builder_detail::Operand a, builder_detail::Operand b) {
  return builder_detail::binary("operator &&", a, b,
                                [](const Expr& x, const Expr& y) { return And::make(x, y); });
}
inline Expr operator||(builder_detail::Operand a, builder_detail::Operand b) {
  return builder_detail::binary("operator ||", a, b,
                                [](const Expr& x, const Expr& y) { return Or::make(x, y); });
}
inline Expr operator!(builder_detail::Operand a) {
  return builder_detail::located(a.loc(), "operator !", [&] {
    builder_detail::check_operand(a.expr());
    return Not::make(a.expr());
  });
}
inline Expr operator-(builder_detail::Operand a) {
  return builder_detail::binary_int("unary operator -", a, 0, true,
                                    [](const Expr& x, const Expr& y) { return Sub::make(x, y); });
}

namespace builder {

using primjit::Expr;
using primjit::Var;
// ElementRef lives here, so argument-dependent lookup on `A[i] * 2.0` searches this namespace:
// make the operators visible from it too.
using primjit::operator+;
using primjit::operator-;
using primjit::operator*;
using primjit::operator/;
using primjit::operator%;
using primjit::operator<;
using primjit::operator<=;
using primjit::operator>;
using primjit::operator>=;
using primjit::operator==;
using primjit::operator!=;
using primjit::operator&&;
using primjit::operator||;
using primjit::operator!;

using Loc = std::source_location;

// --- dtypes -----------------------------------------------------------------------------------
inline constexpr DataType i8 = DataType::Int(8);
inline constexpr DataType i16 = DataType::Int(16);
inline constexpr DataType i32 = DataType::Int(32);
inline constexpr DataType i64 = DataType::Int(64);
inline constexpr DataType u8 = DataType::UInt(8);
inline constexpr DataType u16 = DataType::UInt(16);
inline constexpr DataType u32 = DataType::UInt(32);
inline constexpr DataType u64 = DataType::UInt(64);
inline constexpr DataType f16 = DataType::Float(16);
inline constexpr DataType f32 = DataType::Float(32);
inline constexpr DataType f64 = DataType::Float(64);
inline constexpr DataType bf16 = DataType::BFloat16();
inline constexpr DataType fp8e4m3 = DataType::Float8E4M3FN();
inline constexpr DataType fp8e5m2 = DataType::Float8E5M2();
inline constexpr DataType boolean = DataType::Bool();

/// An expression or a C++ number (int32 for integers, float32 for floating literals), and where
/// the user wrote it (for indexing, whose operator[] cannot take a location).
class ExprLike {
 public:
  ExprLike(Expr e, Loc loc = Loc::current()) : expr_(std::move(e)), loc_(loc) {}  // NOLINT
  ExprLike(int v, Loc loc = Loc::current()) : expr_(make_const(v)), loc_(loc) {}  // NOLINT
  ExprLike(int64_t v, Loc loc = Loc::current())                                   // NOLINT
      : expr_(IntImm::make(DataType::Int(64), v)), loc_(loc) {}
  ExprLike(double v, Loc loc = Loc::current())  // NOLINT
      : expr_(FloatImm::make(DataType::Float(32), v)), loc_(loc) {}
  template <typename T, typename = decltype(std::declval<const T&>().load())>
  ExprLike(const T& element, Loc loc = Loc::current())  // NOLINT
      : expr_(element.load()), loc_(loc) {}
  const Expr& expr() const { return expr_; }
  const Loc& loc() const { return loc_; }
  operator const Expr&() const { return expr_; }  // NOLINT

 private:
  Expr expr_;
  Loc loc_;
};

// --- expression helpers -----------------------------------------------------------------------
inline Expr cast(DataType dtype, const ExprLike& value, Loc loc = Loc::current()) {
  return builder_detail::located(loc, "cast", [&] {
    builder_detail::check_operand(value.expr());
    return value.expr().dtype() == dtype ? value.expr() : Cast::make(dtype, value.expr());
  });
}
inline Expr select(const ExprLike& cond, const ExprLike& a, const ExprLike& b,
                   Loc loc = Loc::current()) {
  return builder_detail::located(loc, "select", [&] { return Select::make(cond, a, b); });
}
inline Expr min(const Expr& a, const Expr& b, Loc loc = Loc::current()) {
  return builder_detail::located(loc, "min", [&] { return Min::make(a, b); });
}
inline Expr min(const Expr& a, double b, Loc loc = Loc::current()) {
  return builder_detail::located(
      loc, "min", [&] { return Min::make(a, builder_detail::literal(a.dtype(), b, false)); });
}
inline Expr min(const Expr& a, int b, Loc loc = Loc::current()) {
  return builder_detail::located(
      loc, "min", [&] { return Min::make(a, builder_detail::int_literal(a.dtype(), b)); });
}
inline Expr max(const Expr& a, const Expr& b, Loc loc = Loc::current()) {
  return builder_detail::located(loc, "max", [&] { return Max::make(a, b); });
}
inline Expr max(const Expr& a, double b, Loc loc = Loc::current()) {
  return builder_detail::located(
      loc, "max", [&] { return Max::make(a, builder_detail::literal(a.dtype(), b, false)); });
}
inline Expr max(const Expr& a, int b, Loc loc = Loc::current()) {
  return builder_detail::located(
      loc, "max", [&] { return Max::make(a, builder_detail::int_literal(a.dtype(), b)); });
}
/// ceil(a / b) for non-negative integers: (a + b - 1) // b.
inline Expr ceildiv(const Expr& a, const Expr& b, Loc loc = Loc::current()) {
  return builder_detail::located(loc, "ceildiv", [&] {
    return FloorDiv::make(Sub::make(Add::make(a, b), builder_detail::int_literal(a.dtype(), 1)), b);
  });
}
inline Expr ceildiv(const Expr& a, int b, Loc loc = Loc::current()) {
  return builder_detail::located(loc, "ceildiv", [&] {
    Expr d = builder_detail::int_literal(a.dtype(), b);
    return FloorDiv::make(Sub::make(Add::make(a, d), builder_detail::int_literal(a.dtype(), 1)), d);
  });
}
inline Expr truncdiv(const Expr& a, const Expr& b, Loc loc = Loc::current()) {
  return builder_detail::located(loc, "truncdiv", [&] { return Div::make(a, b); });
}
inline Expr truncmod(const Expr& a, const Expr& b, Loc loc = Loc::current()) {
  return builder_detail::located(loc, "truncmod", [&] { return Mod::make(a, b); });
}

/// A builtin math function of the op table (ops.def) applied to `x`: exp, sqrt, log, tanh,
/// fabs, ...; the result dtype follows the op's rule (bool for isnan, else x's dtype).
inline Expr math(const char* name, const Expr& x, Loc loc = Loc::current()) {
  return builder_detail::located(loc, name, [&] {
    Op op = Op::get(name);
    PRIMJIT_USER_CHECK(op->is_math() && op->num_args == 1)
        << name << "() is not a one-argument math function";
    PRIMJIT_USER_CHECK(x.defined() && x.dtype().is_floating())
        << name << "() needs a floating-point argument, got "
        << (x.defined() ? x.dtype().str() : std::string("nothing"));
    DataType result =
        op->type_rule == OpTypeRule::kBoolOfArg ? DataType::Bool(x.dtype().lanes()) : x.dtype();
    return Call::make(result, op, {x});
  });
}
inline Expr exp(const Expr& x, Loc loc = Loc::current()) { return math("exp", x, loc); }
inline Expr exp2(const Expr& x, Loc loc = Loc::current()) { return math("exp2", x, loc); }
inline Expr log(const Expr& x, Loc loc = Loc::current()) { return math("log", x, loc); }
inline Expr log2(const Expr& x, Loc loc = Loc::current()) { return math("log2", x, loc); }
inline Expr sqrt(const Expr& x, Loc loc = Loc::current()) { return math("sqrt", x, loc); }
inline Expr rsqrt(const Expr& x, Loc loc = Loc::current()) { return math("rsqrt", x, loc); }
inline Expr tanh(const Expr& x, Loc loc = Loc::current()) { return math("tanh", x, loc); }
inline Expr sigmoid(const Expr& x, Loc loc = Loc::current()) { return math("sigmoid", x, loc); }
inline Expr sin(const Expr& x, Loc loc = Loc::current()) { return math("sin", x, loc); }
inline Expr cos(const Expr& x, Loc loc = Loc::current()) { return math("cos", x, loc); }
inline Expr fabs(const Expr& x, Loc loc = Loc::current()) { return math("fabs", x, loc); }
inline Expr floor(const Expr& x, Loc loc = Loc::current()) { return math("floor", x, loc); }
inline Expr ceil(const Expr& x, Loc loc = Loc::current()) { return math("ceil", x, loc); }
inline Expr erf(const Expr& x, Loc loc = Loc::current()) { return math("erf", x, loc); }
inline Expr pow(const Expr& x, const Expr& y, Loc loc = Loc::current()) {
  return builder_detail::located(loc, "pow", [&] {
    return Call::make(x.dtype(), Op::get("pow"), {x, y});
  });
}
/// A call to an external C/CUDA function `name` returning `dtype` (T.call_extern).
template <typename... Args>
Expr call_extern(DataType dtype, const std::string& name, const Args&... args) {
  return Call::make(dtype, Op::get("call_extern"),
                    {StringImm::make(name), ExprLike(args).expr()...});
}

}  // namespace builder
}  // namespace primjit
