// Values of the reference interpreter: one lane of any IR dtype, its arithmetic, conversions
// and memory encoding.
//
// A Scalar holds one lane in a canonical form for its dtype:
// - int/uint/bool: `i`, wrapped to the dtype's width (int sign-extended, uint zero-extended;
//   uint64 keeps its two's-complement bit pattern); bool is 0 or 1.
// - floating types: `f`, a double holding a value exactly representable in the dtype
//   (float32 results are rounded to float, narrow formats to their format through float32).
// - handle: `u` is the address; `alloc` is the allocation it points into when the interpreter
//   knows it (a hint used by the memory checks; never needed for correctness).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "primjit/float_formats.h"
#include "primjit/ir/dtype.h"

namespace primjit::jit::emu {

class Allocation;

struct Scalar {
  union {
    int64_t i = 0;
    uint64_t u;
    double f;
  };
  Allocation* alloc = nullptr;

  static Scalar of_int(int64_t v) {
    Scalar s;
    s.i = v;
    return s;
  }
  static Scalar of_float(double v) {
    Scalar s;
    s.f = v;
    return s;
  }
  static Scalar of_pointer(uint64_t address, Allocation* alloc) {
    Scalar s;
    s.u = address;
    s.alloc = alloc;
    return s;
  }
};

/// The lanes of a vector value.
using Lanes = std::vector<Scalar>;

/// How the lanes of a dtype are represented and computed.
enum class Repr : uint8_t { kInt, kUInt, kBool, kFloat32, kFloat64, kNarrow, kHandle, kVoid };

/// A dtype's element, ready for arithmetic: representation, width, narrow format.
struct TypeInfo {
  DataType dtype;  // element type (one lane)
  Repr repr = Repr::kVoid;
  int bits = 0;
  const fp::Format* format = nullptr;  // kNarrow only

  explicit TypeInfo(DataType t = DataType::Void());
  bool is_floating() const {
    return repr == Repr::kFloat32 || repr == Repr::kFloat64 || repr == Repr::kNarrow;
  }
  bool is_integral() const {
    return repr == Repr::kInt || repr == Repr::kUInt || repr == Repr::kBool;
  }
};

/// `v` wrapped to a signed / unsigned integer of `bits` bits.
inline int64_t wrap_signed(uint64_t v, int bits) {
  if (bits >= 64) return static_cast<int64_t>(v);
  const int shift = 64 - bits;
  return static_cast<int64_t>(v << shift) >> shift;
}
inline int64_t wrap_unsigned(uint64_t v, int bits) {
  if (bits >= 64) return static_cast<int64_t>(v);
  return static_cast<int64_t>(v & ((uint64_t{1} << bits) - 1));
}
/// `v` rounded to the floating type of `t` (round to nearest even, through float32 for the
/// narrow formats, as primjit/float_formats.h).
double round_float(const TypeInfo& t, double v);
/// An integer (given as its int64 bit pattern and signedness) in the canonical form of `t`.
Scalar from_integer(const TypeInfo& t, int64_t v, bool is_unsigned);
/// A floating value in the canonical form of `t` (ints truncate toward zero and saturate).
Scalar from_double(const TypeInfo& t, double v);
/// The numeric value of `v` (of type `t`) as a double.
double to_double(const TypeInfo& t, const Scalar& v);

/// Converts one lane from `from` to `to` (IR Cast semantics).
Scalar cast_scalar(const TypeInfo& from, const TypeInfo& to, const Scalar& v);

/// Writes one element of type `t` (one lane) as it is stored in memory: little endian,
/// `t.dtype.bytes()` bytes (bool: one byte 0/1; narrow floats: their bit pattern).
void encode(const TypeInfo& t, const Scalar& v, uint8_t* out);
/// Reads one element of type `t`; handles come back without allocation hint.
Scalar decode(const TypeInfo& t, const uint8_t* in);

/// Bit-level reinterpretation of a whole value (all lanes) from `from` to `to` (same total
/// number of bits).
Lanes reinterpret_lanes(DataType from, const Lanes& in, DataType to);

/// The value as text for messages ("1.5", "-3", "True", "0x7f00...").
std::string scalar_text(const TypeInfo& t, const Scalar& v);

}  // namespace primjit::jit::emu
