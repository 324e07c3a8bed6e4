// Data types of IR values: a type code, a bit width and a vector lane count.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace primjit {

/// The most lanes a vector dtype (and so a Ramp or Broadcast) may have. One limit for every
/// backend: LLVM's code generation slows down superlinearly with the width of a vector
/// (seconds at 1,000 lanes, a minute at 4,095) and aborts beyond about 32,000 lanes; CUDA code
/// generation spells out every lane. Real SIMD registers hold at most 64 lanes.
inline constexpr int kMaxLanes = 1024;

/// Throws primjit::Error unless 1 <= lanes <= kMaxLanes; `what` names the vector for the message
/// ("Ramp", "dtype float32x2000", ...).
void check_lanes(int lanes, const char* what);

class DataType {
 public:
  enum class Code : uint8_t {
    kInt,
    kUInt,          // uint1 is bool
    kFloat,         // IEEE float16/32/64
    kBFloat,        // bfloat16
    kFloat8E4M3FN,  // float8_e4m3fn (no infinities, one NaN)
    kFloat8E5M2,    // float8_e5m2
    kHandle,        // pointers and opaque handles; 0 bits is void
  };

  constexpr DataType() = default;
  /// Throws primjit::Error when `lanes` is outside [1, kMaxLanes] (check_lanes).
  constexpr DataType(Code code, int bits, int lanes = 1)
      : code_(code), bits_(static_cast<uint8_t>(bits)), lanes_(static_cast<uint16_t>(lanes)) {
    if (lanes < 1 || lanes > kMaxLanes) check_lanes(lanes, "a vector dtype");
  }

  static constexpr DataType Int(int bits, int lanes = 1) { return {Code::kInt, bits, lanes}; }
  static constexpr DataType UInt(int bits, int lanes = 1) { return {Code::kUInt, bits, lanes}; }
  static constexpr DataType Float(int bits, int lanes = 1) { return {Code::kFloat, bits, lanes}; }
  static constexpr DataType BFloat16(int lanes = 1) { return {Code::kBFloat, 16, lanes}; }
  static constexpr DataType Float8E4M3FN(int lanes = 1) { return {Code::kFloat8E4M3FN, 8, lanes}; }
  static constexpr DataType Float8E5M2(int lanes = 1) { return {Code::kFloat8E5M2, 8, lanes}; }
  static constexpr DataType Bool(int lanes = 1) { return {Code::kUInt, 1, lanes}; }
  static constexpr DataType Handle() { return {Code::kHandle, 64, 1}; }
  static constexpr DataType Void() { return {Code::kHandle, 0, 1}; }

  /// Parses "int32", "float16x4", "bool", "bfloat16", "float8_e4m3fn", "handle", "void".
  /// Throws primjit::Error naming the string otherwise (and the limit for more than kMaxLanes
  /// lanes).
  static DataType parse(std::string_view text);
  /// Like parse(), but returns false instead of throwing.
  static bool try_parse(std::string_view text, DataType* out);

  constexpr Code code() const { return code_; }
  constexpr int bits() const { return bits_; }
  constexpr int lanes() const { return lanes_; }
  constexpr int bytes() const { return (bits_ * lanes_ + 7) / 8; }

  constexpr bool is_int() const { return code_ == Code::kInt; }
  constexpr bool is_uint() const { return code_ == Code::kUInt && bits_ != 1; }
  constexpr bool is_bool() const { return code_ == Code::kUInt && bits_ == 1; }
  /// int or uint (not bool).
  constexpr bool is_integer() const { return is_int() || is_uint(); }
  /// int, uint or bool: values with integer semantics.
  constexpr bool is_int_or_bool() const { return code_ == Code::kInt || code_ == Code::kUInt; }
  constexpr bool is_float() const { return code_ == Code::kFloat; }
  constexpr bool is_bfloat16() const { return code_ == Code::kBFloat; }
  constexpr bool is_float8() const {
    return code_ == Code::kFloat8E4M3FN || code_ == Code::kFloat8E5M2;
  }
  /// Any floating-point format (IEEE, bfloat16, float8).
  constexpr bool is_floating() const { return is_float() || is_bfloat16() || is_float8(); }
  constexpr bool is_handle() const { return code_ == Code::kHandle && bits_ != 0; }
  constexpr bool is_void() const { return code_ == Code::kHandle && bits_ == 0; }
  constexpr bool is_scalar() const { return lanes_ == 1; }
  constexpr bool is_vector() const { return lanes_ > 1; }

  /// For int, uint and bool: the largest value of one lane, in int64 (uint64 saturates).
  constexpr int64_t max_int_value() const {
    if (bits_ >= 64) return INT64_MAX;
    return is_int() ? (int64_t{1} << (bits_ - 1)) - 1 : (int64_t{1} << bits_) - 1;
  }

  constexpr DataType element_of() const { return with_lanes(1); }
  constexpr DataType with_lanes(int lanes) const { return {code_, bits_, lanes}; }
  constexpr DataType with_bits(int bits) const { return {code_, bits, lanes_}; }

  std::string str() const;

  /// The DLPack type code of this dtype's elements (kDLInt, kDLUInt (bool is uint with 1 bit),
  /// kDLFloat, kDLBfloat, kDLOpaqueHandle, and the float8 codes of primjit/abi.h).
  int dlpack_code() const;
  /// The dtype of a DLPack (code, bits, lanes); false when primjit has no such dtype (also for
  /// more than kMaxLanes lanes).
  static bool from_dlpack(int code, int bits, int lanes, DataType* out);

  friend constexpr bool operator==(DataType a, DataType b) {
    return a.code_ == b.code_ && a.bits_ == b.bits_ && a.lanes_ == b.lanes_;
  }
  friend constexpr bool operator!=(DataType a, DataType b) { return !(a == b); }

 private:
  Code code_ = Code::kHandle;
  uint8_t bits_ = 0;
  uint16_t lanes_ = 1;
};

std::ostream& operator<<(std::ostream& os, DataType dtype);

}  // namespace primjit
