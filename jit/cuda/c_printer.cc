// CPrinter's expressions: literals, operators, conversions and the generic builtin lowerings.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

#include "jit/cuda/c_printer.h"
#include "primjit/error.h"

namespace primjit::jit {
namespace {

bool is_narrow_int(DataType t) { return t.is_integer() && t.bits() < 32; }

// The shortest decimal text that reads back as `v` (as float when `single`).
std::string shortest_decimal(double v, bool single) {
  char buf[64];
  std::to_chars_result r = single ? std::to_chars(buf, buf + sizeof(buf), static_cast<float>(v))
                                  : std::to_chars(buf, buf + sizeof(buf), v);
  std::string text(buf, r.ptr);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

}  // namespace

std::string wrap(const Code& c, int max_prec) {
  return c.prec <= max_prec ? c.text : "(" + c.text + ")";
}

std::string c_string_literal(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\%03o", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

const char* lane_member(int lane) {
  static const char* const kMembers[] = {"x", "y", "z", "w"};
  return kMembers[lane];
}

// --- expressions ------------------------------------------------------------------------------

Code CPrinter::visit(const IntImm* op, int) { return int_literal(op->dtype, op->value); }

Code CPrinter::visit(const FloatImm* op, int) {
  DataType t = op->dtype;
  double v = op->value;
  bool single = !(t.is_float() && t.bits() == 64);
  Code lit;
  if (std::isnan(v) || std::isinf(v)) {
    lit = special_float(v, single);
  } else {
    std::string text = shortest_decimal(v, single) + (single ? "f" : "");
    lit = {text, text[0] == '-' ? kUnary : kPrimary};
  }
  if (t.is_float() && t.bits() >= 32) return lit;
  return from_float(t, lit);
}

Code CPrinter::visit(const StringImm* op, int) { return {c_string_literal(op->value), kPrimary}; }

Code CPrinter::visit(const VarNode* op, int lane) {
  const std::string& name = name_of(op);
  if (lane < 0) return {name, kPrimary};
  if (vector_type(op->dtype).has_value()) return {name + "." + lane_member(lane), kPrimary};
  return {name + "[" + std::to_string(lane) + "]", kPrimary};
}

Code CPrinter::visit(const Add* op, int lane) { return binary(op, "+", kAdd, lane); }
Code CPrinter::visit(const Sub* op, int lane) { return binary(op, "-", kAdd, lane); }
Code CPrinter::visit(const Mul* op, int lane) { return binary(op, "*", kMul, lane); }

Code CPrinter::visit(const Div* op, int lane) {
  if (op->dtype.is_floating()) return binary(op, "/", kMul, lane);
  return int_division(op, "/", "primjit_truncdiv", false, lane);
}

Code CPrinter::visit(const Mod* op, int lane) {
  if (op->dtype.is_floating()) {
    static const Op kFmod = Op::get("fmod");
    return float_math(op->dtype, kFmod, {sub(op->a, lane), sub(op->b, lane)});
  }
  return int_division(op, "%", "primjit_truncmod", false, lane);
}

Code CPrinter::visit(const FloorDiv* op, int lane) {
  DataType t = op->dtype;
  if (t.is_floating()) {
    // The quotient rounded to t (narrow types too), then floor.
    static const Op kFloor = Op::get("floor");
    Code q = float_binary(t, op->a, op->b, "/", kMul, lane, /*keep_type=*/true);
    return float_math(t, kFloor, {q});
  }
  return int_division(op, "/", "primjit_floordiv", true, lane);
}

Code CPrinter::visit(const FloorMod* op, int lane) {
  DataType t = op->dtype.element_of();
  if (t.is_floating()) {
    std::vector<Code> args = {sub(op->a, lane), sub(op->b, lane)};
    if (t.is_float() && t.bits() >= 32) {
      require(SemanticsHelper::kFloorModFloat);
      return call("primjit_floormod", args);
    }
    require(SemanticsHelper::kFloorModNarrow);
    return call("primjit_floormod_narrow<" + scalar_type(t) + ">", args);
  }
  return int_division(op, "%", "primjit_floormod", true, lane);
}

Code CPrinter::visit(const Min* op, int lane) {
  return min_max(op->dtype, op->a, op->b, true, lane);
}
Code CPrinter::visit(const Max* op, int lane) {
  return min_max(op->dtype, op->a, op->b, false, lane);
}
Code CPrinter::visit(const EQ* op, int lane) { return compare(op->a, op->b, "==", kEq, lane); }
Code CPrinter::visit(const NE* op, int lane) { return compare(op->a, op->b, "!=", kEq, lane); }
Code CPrinter::visit(const LT* op, int lane) { return compare(op->a, op->b, "<", kRel, lane); }
Code CPrinter::visit(const LE* op, int lane) { return compare(op->a, op->b, "<=", kRel, lane); }
Code CPrinter::visit(const GT* op, int lane) { return compare(op->a, op->b, ">", kRel, lane); }
Code CPrinter::visit(const GE* op, int lane) { return compare(op->a, op->b, ">=", kRel, lane); }
Code CPrinter::visit(const And* op, int lane) { return logical(op->a, op->b, "&&", kLogAnd, lane); }
Code CPrinter::visit(const Or* op, int lane) { return logical(op->a, op->b, "||", kLogOr, lane); }
Code CPrinter::visit(const Not* op, int lane) {
  return {"!" + wrap(sub(op->a, lane), kUnary), kUnary};
}

Code CPrinter::visit(const Select* op, int lane) {
  if (has_side_effects(op->true_value) || has_side_effects(op->false_value)) {
    check_scalar(op->dtype, "a Select with side effects", lane);
    // All three operands run, left to right, as the IR says.
    std::string c = names_.unique("cond");
    std::string t = names_.unique("true_value");
    std::string f = names_.unique("false_value");
    std::string type = scalar_type(op->dtype);
    return immediately_invoked(
        type, "bool " + c + " = " + sub(op->condition, -1).text + "; " + type + " " + t + " = " +
                  sub(op->true_value, -1).text + "; " + type + " " + f + " = " +
                  sub(op->false_value, -1).text + "; return " + c + " ? " + t + " : " + f + ";");
  }
  return conditional(sub(op->condition, lane), sub(op->true_value, lane),
                     sub(op->false_value, lane));
}

Code CPrinter::visit(const Cast* op, int lane) {
  return cast(op->dtype.element_of(), op->value.dtype().element_of(), sub(op->value, lane));
}

Code CPrinter::visit(const Let* op, int lane) {
  check_scalar(op->dtype, "a Let expression", lane);
  // A chain of Lets becomes one lambda with a local per binding.
  std::string body;
  Expr rest(op);
  while (const auto* let = rest.as<Let>()) {
    PRIMJIT_USER_CHECK(let->var.dtype().is_scalar())
        << component_ << ": Let of the vector variable '" << let->var->name << "' in " << where()
        << " is not supported; bind it with a statement instead";
    std::string name = names_.unique(let->var->name);
    body += value_type(let->var.get()) + " " + name + " = " +
            coerce_to_var(let->var.get(), let->value) + "; ";
    var_names_[let->var.get()] = name;
    rest = let->body;
  }
  return immediately_invoked(scalar_type(op->dtype), body + "return " + sub(rest, -1).text + ";");
}

Code CPrinter::visit(const BufferLoad* op, int lane) {
  const Buffer& buf = op->buffer;
  Expr index = flat_index(buf, op->indices);
  if (index.dtype().is_vector()) {
    PRIMJIT_USER_CHECK(lane >= 0) << component_ << ": a vector load of '" << buf->name
                                  << "' used as a scalar in " << where();
    if (std::optional<Code> whole = vector_access(buf, index, op->dtype, /*is_store=*/false)) {
      return {wrap(*whole, kPrimary) + "->" + lane_member(lane), kPrimary};
    }
    return {wrap(pointer_of(buf), kPrimary) + "[" + sub(index, lane).text + "]", kPrimary};
  }
  std::string element = wrap(pointer_of(buf), kPrimary) + "[" + sub(index, -1).text + "]";
  if (op->dtype.is_vector()) {  // an element of a buffer of vectors (float4, ...)
    PRIMJIT_USER_CHECK(lane >= 0) << component_ << ": a vector load of '" << buf->name
                                  << "' used as a scalar in " << where();
    return {element + "." + lane_member(lane), kPrimary};
  }
  return {element, kPrimary};
}

Code CPrinter::visit(const Ramp* op, int lane) {
  PRIMJIT_USER_CHECK(lane >= 0) << component_ << ": a Ramp used as a scalar in " << where();
  if (lane == 0) return sub(op->base, -1);
  DataType t = op->base.dtype();
  Expr offset = as_const_int(op->stride) ? IntImm::make(t, *as_const_int(op->stride) * lane)
                                         : Mul::make(op->stride, IntImm::make(t, lane));
  return sub(arith::simplify(Add::make(op->base, offset)), -1);
}

Code CPrinter::visit(const Broadcast* op, int lane) {
  PRIMJIT_USER_CHECK(lane >= 0) << component_ << ": a Broadcast used as a scalar in " << where();
  return sub(op->value, -1);
}

Code CPrinter::visit(const Call* op, int lane) {
  if (!op->op.defined()) return call_function(op, lane);
  return lower_call(op, lane);
}

// --- generic builtin lowerings ----------------------------------------------------------------

Code CPrinter::lower_if_then_else(const Call* op, int lane) {
  return conditional(sub(op->args[0], lane), sub(op->args[1], lane), sub(op->args[2], lane));
}

Code CPrinter::lower_likely(const Call* op, int lane) { return sub(op->args[0], lane); }

Code CPrinter::lower_shift_left(const Call* op, int lane) { return shift(op, lane, true); }

Code CPrinter::lower_shift_right(const Call* op, int lane) { return shift(op, lane, false); }

Code CPrinter::lower_bitwise_and(const Call* op, int lane) {
  return infix(sub(op->args[0], lane), "&", kBitAnd, sub(op->args[1], lane));
}

Code CPrinter::lower_bitwise_or(const Call* op, int lane) {
  return infix(sub(op->args[0], lane), "|", kBitOr, sub(op->args[1], lane));
}

Code CPrinter::lower_bitwise_xor(const Call* op, int lane) {
  return infix(sub(op->args[0], lane), "^", kBitXor, sub(op->args[1], lane));
}

Code CPrinter::lower_bitwise_not(const Call* op, int lane) {
  if (op->dtype.is_bool()) return {"!" + wrap(sub(op->args[0], lane), kUnary), kUnary};
  return narrow_result(op->dtype, {"~" + wrap(sub(op->args[0], lane), kUnary), kUnary});
}

Code CPrinter::lower_isnullptr(const Call* op, int) {
  return {wrap(sub(op->args[0], -1), kRel) + " == nullptr", kEq};
}

Code CPrinter::lower_address_of(const Call* op, int) {
  const auto* load = op->args[0].as<BufferLoad>();
  PRIMJIT_USER_CHECK(load != nullptr && load->dtype.is_scalar())
      << component_ << ": T.address_of needs a scalar buffer load (in " << where() << ")";
  return {"&" + visit(load, -1).text, kUnary};
}

Code CPrinter::lower_call_extern(const Call* op, int) {
  const auto* fn = op->args.empty() ? nullptr : op->args[0].as<StringImm>();
  PRIMJIT_USER_CHECK(fn != nullptr && NameTable::is_valid_identifier(fn->value))
      << component_ << ": T." << op->op->name << " needs a function name that is a C "
      << "identifier first (in " << where() << ")";
  std::vector<Code> args;
  for (size_t i = 1; i < op->args.size(); ++i) args.push_back(sub(op->args[i], -1));
  return call(fn->value, args);
}

// --- building blocks --------------------------------------------------------------------------

std::string CPrinter::where() const {
  return (is_kernel_ ? "kernel '" : "device function '") + symbol_ + "'";
}

Code CPrinter::sub(const Expr& e, int lane) {
  if (e.dtype().is_vector()) {
    PRIMJIT_USER_CHECK(lane >= 0) << component_ << ": a " << e.dtype()
                                  << " value is used where a scalar is needed (in " << where()
                                  << ")";
    return visit_expr(e, lane);
  }
  return visit_expr(e, -1);
}

void CPrinter::check_scalar(DataType t, const std::string& what, int lane) {
  PRIMJIT_USER_CHECK(lane < 0 && t.lanes() <= 1)
      << component_ << ": " << what << " on vectors (" << t << ") is not supported (in " << where()
      << ")";
}

void CPrinter::check_no_effects(const Expr& e, const char* what) {
  PRIMJIT_USER_CHECK(!has_side_effects(e))
      << component_ << ": " << what << " whose value has side effects (in " << where()
      << ") would run them once per lane; compute the value into a variable first";
}

const std::string& CPrinter::name_of(const VarNode* v) {
  auto it = var_names_.find(v);
  PRIMJIT_USER_CHECK(it != var_names_.end())
      << component_ << ": variable '" << v->name << "' is used in " << where()
      << " but not defined there (run VerifyWellFormed)";
  return it->second;
}

Code CPrinter::int_literal(DataType t, int64_t value) {
  if (t.is_bool()) return {value != 0 ? "true" : "false", kPrimary};
  if (t.is_uint() && t.bits() == 64) {
    return {std::to_string(static_cast<uint64_t>(value)) + "ULL", kPrimary};
  }
  if (t.is_uint() && t.bits() == 32) {
    return {std::to_string(static_cast<uint32_t>(value)) + "U", kPrimary};
  }
  if (t.is_int() && t.bits() == 64) {
    if (value == std::numeric_limits<int64_t>::min()) {
      return {"(-9223372036854775807LL - 1LL)", kPrimary};
    }
    std::string text = std::to_string(value) + "LL";
    return {text, value < 0 ? kUnary : kPrimary};
  }
  if (value == std::numeric_limits<int32_t>::min()) return {"(-2147483647 - 1)", kPrimary};
  std::string text = std::to_string(value);  // narrow types promote to int anyway
  return {text, value < 0 ? kUnary : kPrimary};
}

Code CPrinter::infix(const Code& a, const char* op, int prec, const Code& b) {
  // For the reader, shift and bitwise operators parenthesize any other binary operand.
  const bool bitwise = prec == kShift || (prec >= kBitAnd && prec <= kBitOr);
  const int left = bitwise && a.prec != prec ? kUnary : prec;
  const int right = bitwise ? kUnary : prec - 1;
  return {wrap(a, left) + " " + op + " " + wrap(b, right), prec};
}

Code CPrinter::call(const std::string& fn, const std::vector<Code>& args) {
  std::string text = fn + "(";
  for (size_t i = 0; i < args.size(); ++i) text += (i == 0 ? "" : ", ") + args[i].text;
  return {text + ")", kPrimary};
}

Code CPrinter::conditional(const Code& c, const Code& t, const Code& f) {
  return {wrap(c, kLogOr) + " ? " + wrap(t, kCond - 1) + " : " + wrap(f, kCond), kCond};
}

Code CPrinter::immediately_invoked(const std::string& type, const std::string& body) {
  return {"[&]() -> " + type + " { " + body + " }()", kPrimary};
}

// int8/int16/uint8/uint16 arithmetic runs in int after C's promotions: wrap it back.
Code CPrinter::narrow_result(DataType t, const Code& c) {
  if (!is_narrow_int(t.element_of())) return c;
  return {"(" + scalar_type(t.element_of()) + ")" + wrap(c, kUnary), kUnary};
}

template <typename Node>
Code CPrinter::binary(const Node* op, const char* sym, int prec, int lane) {
  DataType t = op->dtype;
  if (t.is_float8()) return float_binary(t, op->a, op->b, sym, prec, lane, /*keep_type=*/true);
  Code a = sub(op->a, lane);
  Code b = sub(op->b, lane);
  if (t.element_of().is_uint() && t.bits() < 32 && std::string(sym) == "*") {
    // uint16 * uint16 would overflow the promoted (signed) int.
    a = {"(unsigned int)" + wrap(a, kUnary), kUnary};
  }
  return narrow_result(t, infix(a, sym, prec, b));
}

// a `sym` b computed in float32 for float8 (or for the quotient of a floating FloorDiv).
Code CPrinter::float_binary(DataType t, const Expr& ea, const Expr& eb, const char* sym, int prec,
                            int lane, bool keep_type) {
  Code a = sub(ea, lane);
  Code b = sub(eb, lane);
  if (!t.is_float8()) {
    Code r = infix(a, sym, prec, b);
    return keep_type ? r : to_compute_float(t, r);
  }
  Code r = infix(to_compute_float(t, a), sym, prec, to_compute_float(t, b));
  return keep_type ? from_float(t, r) : r;
}

Code CPrinter::compare(const Expr& ea, const Expr& eb, const char* sym, int prec, int lane) {
  DataType t = ea.dtype().element_of();
  Code a = sub(ea, lane);
  Code b = sub(eb, lane);
  if (t.is_float8()) {
    a = to_compute_float(t, a);
    b = to_compute_float(t, b);
  }
  return infix(a, sym, prec, b);
}

Code CPrinter::logical(const Expr& ea, const Expr& eb, const char* sym, int prec, int lane) {
  if (has_side_effects(eb)) {
    check_scalar(ea.dtype(), "And/Or with side effects", lane);
    // Both operands run, in order (no short circuit in the IR).
    std::string a = names_.unique("lhs");
    std::string b = names_.unique("rhs");
    return immediately_invoked("bool", "bool " + a + " = " + sub(ea, -1).text + "; bool " + b +
                                           " = " + sub(eb, -1).text + "; return " + a + " " + sym +
                                           " " + b + ";");
  }
  return infix(sub(ea, lane), sym, prec, sub(eb, lane));
}

Code CPrinter::min_max(DataType t, const Expr& ea, const Expr& eb, bool is_min, int lane) {
  DataType e = t.element_of();
  Code a = sub(ea, lane);
  Code b = sub(eb, lane);
  if (e.is_float8()) {
    require(SemanticsHelper::kFloatMinMax);
    return from_float(e, call(is_min ? "primjit_fmin" : "primjit_fmax",
                              {to_compute_float(e, a), to_compute_float(e, b)}));
  }
  if (e.is_floating()) {
    require(SemanticsHelper::kFloatMinMax);
    return call(is_min ? "primjit_fmin" : "primjit_fmax", {a, b});
  }
  return call(is_min ? "min" : "max", {a, b});
}

// Integer division: C's operator where it is defined and equal to the IR's result (a divisor
// that is provably neither 0 nor -1; for the floor forms also a non-negative dividend and a
// positive divisor), else the helper that gives docs/semantics.md's results for every input.
template <typename Node>
Code CPrinter::int_division(const Node* op, const char* sym, const char* helper, bool floor,
                            int lane) {
  if (lane < 0) {
    arith::ConstIntBound a = an_.const_int_bound(op->a);
    arith::ConstIntBound b = an_.const_int_bound(op->b);
    bool divisor_ok = b.min >= 1 || (op->dtype.is_int() && b.max <= -2);
    if (divisor_ok && (!floor || op->dtype.is_uint() || (a.min >= 0 && b.min >= 1))) {
      return binary(op, sym, kMul, lane);
    }
  }
  require(SemanticsHelper::kIntDivision);
  return narrow_result(op->dtype, call(helper, {sub(op->a, lane), sub(op->b, lane)}));
}

// shift_left / shift_right through primjit_shl/shr<T, U> (U: T's unsigned type).
Code CPrinter::shift(const Call* op, int lane, bool left) {
  DataType t = op->dtype.element_of();
  PRIMJIT_USER_CHECK(t.is_integer() && !t.is_bool())
      << component_ << ": T." << op->op->name << " needs integers, got " << t << " (in " << where()
      << ")";
  require(SemanticsHelper::kShift);
  std::string type = scalar_type(t);
  std::string utype = scalar_type(DataType::UInt(t.bits()));
  return call(std::string(left ? "primjit_shl<" : "primjit_shr<") + type + ", " + utype + ">",
              {sub(op->args[0], lane), sub(op->args[1], lane)});
}

// A floating value (float or double, or a narrow float) as integer type `to`: saturating, NaN
// to 0, through primjit_ftoi.
Code CPrinter::float_to_int(DataType to, DataType from, const Code& v) {
  bool dbl = from.is_float() && from.bits() == 64;
  Code x = dbl ? v : float_of(from, v);
  require(SemanticsHelper::kFloatToInt);
  int bits = to.bits();
  std::string suffix = dbl ? "" : "f";
  std::string lo = to.is_int() ? "-0x1p" + std::to_string(bits - 1) + suffix : "0.0" + suffix;
  std::string hi = "0x1p" + std::to_string(to.is_int() ? bits - 1 : bits) + suffix;
  int64_t min =
      to.is_int() ? (bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (bits - 1)))
                  : 0;
  int64_t max = to.is_int() ? (bits == 64 ? std::numeric_limits<int64_t>::max()
                                          : (int64_t{1} << (bits - 1)) - 1)
                            : (bits == 64 ? -1 : (int64_t{1} << bits) - 1);
  std::string type = scalar_type(to);
  return call("primjit_ftoi<" + type + ", " + (dbl ? "double" : "float") + ">",
              {x,
               {lo, kUnary},
               {hi, kPrimary},
               {"(" + type + ")" + wrap(int_literal(to, min), kUnary), kUnary},
               {"(" + type + ")" + wrap(int_literal(to, max), kUnary), kUnary}});
}

Code CPrinter::cast(DataType to, DataType from, const Code& v) {
  if (to == from) return v;
  auto is_narrow_float = [](DataType t) {
    return (t.is_float() && t.bits() == 16) || t.is_bfloat16() || t.is_float8();
  };
  if (to.is_bool()) {
    if (from.is_handle()) return {wrap(v, kRel) + " != nullptr", kEq};
    return {"(bool)" + wrap(to_compute_float(from, v), kUnary), kUnary};
  }
  if (to.is_handle()) return {"(void*)" + wrap(v, kUnary), kUnary};
  if (from.is_floating() && to.is_integer()) return float_to_int(to, from, v);
  if (is_narrow_float(from) && !is_narrow_float(to)) {
    Code f = to_compute_float(from, v);
    return to.is_float() && to.bits() == 32
               ? f
               : Code{"(" + scalar_type(to) + ")" + wrap(f, kUnary), kUnary};
  }
  // Everything becomes a narrow float through float32: float64 and integers round twice, as
  // on the other backends (docs/semantics.md).
  if (is_narrow_float(to)) return from_float(to, float_of(from, v));
  return {"(" + scalar_type(to) + ")" + wrap(v, kUnary), kUnary};
}

// Any value as a float (half/bfloat16/float8 exactly, integers and double rounded).
Code CPrinter::float_of(DataType from, const Code& v) {
  if (from.is_float() && from.bits() == 32) return v;
  if ((from.is_float() && from.bits() == 16) || from.is_bfloat16() || from.is_float8()) {
    return to_compute_float(from, v);
  }
  return {"(float)" + wrap(v, kUnary), kUnary};
}

Code CPrinter::float_math(DataType t, const Op& fn, std::vector<Code> args) {
  DataType e = t.element_of();
  bool dbl = e.is_float() && e.bits() == 64;
  for (Code& a : args) a = to_compute_float(e, a);
  return from_float(e, float_function(dbl, fn, args));
}

Code CPrinter::float_function(bool dbl, const Op& fn, const std::vector<Code>& args) {
  const std::string& name = fn->libm.empty() ? fn->name : fn->libm;
  return call(dbl ? name : name + "f", args);
}

}  // namespace primjit::jit
