#include "jit/cuda/semantics_cuda.h"

#include "jit/cuda/source_printer.h"

namespace primjit::jit {
namespace {

constexpr const char* kInline = "__device__ __forceinline__ ";

struct IntType {
  const char* name;
  const char* min;  // empty for unsigned types
};

// The C types integer arithmetic runs in after C's promotions (narrower types promote to int).
constexpr IntType kIntTypes[] = {{"int", "(-2147483647 - 1)"},
                                 {"long long", "(-9223372036854775807LL - 1LL)"},
                                 {"unsigned int", ""},
                                 {"unsigned long long", ""}};

void int_division(SourceWriter& w) {
  w.line("// Integer division for every input (docs/semantics.md): x / 0 is -1 (all ones), x % 0");
  w.line(
      "// is x, MIN / -1 is MIN, MIN % -1 is 0; the floor forms round toward negative infinity.");
  w.line("// The divisor is replaced by 1 where C's operator is undefined.");
  for (const IntType& t : kIntTypes) {
    const std::string type = t.name;
    const bool is_signed = *t.min != 0;
    const std::string args = "(" + type + " a, " + type + " b)";
    const std::string safe = type + " d = (b == 0" +
                             (is_signed ? " || (a == " + std::string(t.min) + " && b == -1)" : "") +
                             ") ? 1 : b;";
    const std::string all_ones = is_signed ? "-1" : "~(" + type + ")0";
    w.open(kInline + type + " primjit_truncdiv" + args);
    w.line(safe);
    w.line("return b == 0 ? " + all_ones + " : a / d;");
    w.close();
    w.open(kInline + type + " primjit_truncmod" + args);
    w.line(safe);
    w.line("return b == 0 ? a : a % d;");
    w.close();
    w.open(kInline + type + " primjit_floordiv" + args);
    w.line(safe);
    if (is_signed) {
      w.line(type + " q = a / d;");
      w.line(type + " r = a % d;");
      w.line("return b == 0 ? -1 : (r != 0 && ((r < 0) != (d < 0))) ? q - 1 : q;");
    } else {
      w.line("return b == 0 ? " + all_ones + " : a / d;");
    }
    w.close();
    w.open(kInline + type + " primjit_floormod" + args);
    w.line(safe);
    if (is_signed) {
      w.line(type + " r = a % d;");
      w.line("return b == 0 ? a : (r != 0 && ((r < 0) != (d < 0))) ? r + d : r;");
    } else {
      w.line("return b == 0 ? a : a % d;");
    }
    w.close();
  }
}

void float_floor_mod(SourceWriter& w) {
  w.line("// Floating-point modulo with the sign of the divisor (the IR's `%`), no contraction.");
  w.line(std::string(kInline) +
         "float primjit_floormod(float a, float b) { return a - floorf(a / b) * b; }");
  w.line(std::string(kInline) +
         "double primjit_floormod(double a, double b) { return a - floor(a / b) * b; }");
}

void narrow_floor_mod(SourceWriter& w) {
  w.line(
      "// The IR's `%` on half, bfloat16 and float8: computed in float, each step rounded to T.");
  w.line("template <typename T>");
  w.open(std::string(kInline) + "T primjit_floormod_narrow(T a, T b)");
  w.line("float q = floorf((float)T((float)a / (float)b));");
  w.line("return T((float)a - (float)T(q * (float)b));");
  w.close();
}

void float_min_max(SourceWriter& w) {
  w.line("// Floating min/max: IEEE 754-2019 minimumNumber/maximumNumber (NaN only when both are");
  w.line("// NaN, -0 below +0), spelled out: fminf/fmaxf leave the sign of a zero result open.");
  for (const char* type : {"float", "double"}) {
    std::string t = type;
    w.open(kInline + t + " primjit_fmin(" + t + " a, " + t + " b)");
    w.line("return (b != b || a < b || (a == b && signbit(a))) ? a : b;");
    w.close();
    w.open(kInline + t + " primjit_fmax(" + t + " a, " + t + " b)");
    w.line("return (b != b || a > b || (a == b && !signbit(a))) ? a : b;");
    w.close();
  }
}

void shift(SourceWriter& w) {
  w.line("// Shifts with the amount read as unsigned: the width or more shifts every bit out (a");
  w.line("// signed right shift leaves the sign). Left shifts run on U, T's unsigned type.");
  w.line("template <typename T, typename U>");
  w.open(std::string(kInline) + "T primjit_shl(T a, T n)");
  w.line("return (U)n < (U)(8 * sizeof(T)) ? (T)((U)a << (U)n) : (T)0;");
  w.close();
  w.line("template <typename T, typename U>");
  w.open(std::string(kInline) + "T primjit_shr(T a, T n)");
  w.line("return (U)n < (U)(8 * sizeof(T)) ? (T)(a >> (U)n) : (T)(a >> (8 * sizeof(T) - 1) >> 1);");
  w.close();
}

void float_to_int(SourceWriter& w) {
  w.line(
      "// Floating to integer: toward zero, saturating at [min, max], NaN to 0 (x <= lo is min,");
  w.line("// x >= hi is max; lo and hi are powers of two, exact in F).");
  w.line("template <typename T, typename F>");
  w.open(std::string(kInline) + "T primjit_ftoi(F x, F lo, F hi, T min, T max)");
  w.line("return x != x ? (T)0 : x <= lo ? min : x >= hi ? max : (T)x;");
  w.close();
}

}  // namespace

std::string semantics_helper_source(SemanticsHelper helper) {
  SourceWriter w;
  switch (helper) {
    case SemanticsHelper::kIntDivision:
      int_division(w);
      break;
    case SemanticsHelper::kFloorModFloat:
      float_floor_mod(w);
      break;
    case SemanticsHelper::kFloorModNarrow:
      narrow_floor_mod(w);
      break;
    case SemanticsHelper::kFloatMinMax:
      float_min_max(w);
      break;
    case SemanticsHelper::kShift:
      shift(w);
      break;
    case SemanticsHelper::kFloatToInt:
      float_to_int(w);
      break;
  }
  return w.str();
}

const std::vector<std::string>& semantics_helper_names() {
  static const std::vector<std::string> names = {
      "primjit_truncdiv", "primjit_truncmod",
      "primjit_floordiv", "primjit_floormod",
      "primjit_fmin",     "primjit_fmax",
      "primjit_shl",      "primjit_shr",
      "primjit_ftoi",     "primjit_floormod_narrow",
  };
  return names;
}

}  // namespace primjit::jit
