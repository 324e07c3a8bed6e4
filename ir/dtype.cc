#include "primjit/ir/dtype.h"

#include <charconv>
#include <ostream>

#include "primjit/error.h"

namespace primjit {
namespace {

bool parse_number(std::string_view text, int* value) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return ec == std::errc() && end == text.data() + text.size();
}

bool valid_bits(DataType::Code code, int bits) {
  switch (code) {
    case DataType::Code::kInt:
    case DataType::Code::kUInt:
      return bits == 8 || bits == 16 || bits == 32 || bits == 64;
    case DataType::Code::kFloat:
      return bits == 16 || bits == 32 || bits == 64;
    case DataType::Code::kBFloat:
      return bits == 16;
    default:
      return false;
  }
}

// Splits "float32x4" into "float32" and 4; without a lane suffix, `lanes` is 1. False when the
// suffix is not a number of at least 2 lanes (too many lanes are the caller's to reject).
bool split_lanes(std::string_view* text, int* lanes) {
  *lanes = 1;
  size_t x = text->rfind('x');
  if (x == std::string_view::npos || x + 1 >= text->size() || (*text)[x + 1] < '0' ||
      (*text)[x + 1] > '9') {
    return true;
  }
  if (!parse_number(text->substr(x + 1), lanes) || *lanes < 2) return false;
  *text = text->substr(0, x);
  return true;
}

}  // namespace

void check_lanes(int lanes, const char* what) {
  PRIMJIT_USER_CHECK(lanes >= 1) << what << " needs at least 1 lane, got " << lanes;
  PRIMJIT_USER_CHECK(lanes <= kMaxLanes)
      << what << " has " << lanes << " lanes, more than the limit of " << kMaxLanes
      << " lanes per vector (primjit::kMaxLanes); split it into vectors of at most " << kMaxLanes
      << " lanes";
}

bool DataType::try_parse(std::string_view text, DataType* out) {
  int lanes = 1;
  if (!split_lanes(&text, &lanes) || lanes > kMaxLanes) return false;
  if (text == "bool") {
    *out = Bool(lanes);
    return true;
  }
  if (text == "float8_e4m3fn") {
    *out = Float8E4M3FN(lanes);
    return true;
  }
  if (text == "float8_e5m2") {
    *out = Float8E5M2(lanes);
    return true;
  }
  if (lanes == 1 && text == "handle") {
    *out = Handle();
    return true;
  }
  if (lanes == 1 && text == "void") {
    *out = Void();
    return true;
  }
  struct Prefix {
    std::string_view name;
    Code code;
  };
  // Longest prefixes first: "uint" before "int", "bfloat" before "float".
  for (Prefix prefix : {Prefix{"uint", Code::kUInt}, Prefix{"int", Code::kInt},
                        Prefix{"bfloat", Code::kBFloat}, Prefix{"float", Code::kFloat}}) {
    if (text.substr(0, prefix.name.size()) != prefix.name) continue;
    int bits = 0;
    if (!parse_number(text.substr(prefix.name.size()), &bits)) return false;
    if (!valid_bits(prefix.code, bits)) return false;
    *out = DataType(prefix.code, bits, lanes);
    return true;
  }
  return false;
}

DataType DataType::parse(std::string_view text) {
  DataType dtype;
  if (try_parse(text, &dtype)) return dtype;
  std::string_view element = text;
  int lanes = 1;
  if (split_lanes(&element, &lanes) && lanes > kMaxLanes && try_parse(element, &dtype)) {
    check_lanes(lanes, ("dtype \"" + std::string(text) + "\"").c_str());
  }
  PRIMJIT_USER_ERROR()
      << "unknown dtype \"" << text
      << "\"; expected int8/16/32/64, uint8/16/32/64, float16/32/64, bfloat16, float8_e4m3fn, "
         "float8_e5m2, bool or handle, optionally with lanes as in \"float32x4\"";
}

std::string DataType::str() const {
  std::string name;
  switch (code_) {
    case Code::kInt:
      name = "int" + std::to_string(bits_);
      break;
    case Code::kUInt:
      name = bits_ == 1 ? "bool" : "uint" + std::to_string(bits_);
      break;
    case Code::kFloat:
      name = "float" + std::to_string(bits_);
      break;
    case Code::kBFloat:
      name = "bfloat" + std::to_string(bits_);
      break;
    case Code::kFloat8E4M3FN:
      name = "float8_e4m3fn";
      break;
    case Code::kFloat8E5M2:
      name = "float8_e5m2";
      break;
    case Code::kHandle:
      return bits_ == 0 ? "void" : "handle";
  }
  if (lanes_ > 1) name += "x" + std::to_string(lanes_);
  return name;
}

// DLPack's numbering (dlpack.h is not an IR dependency, so the values are spelled here).
namespace dl {
constexpr int kInt = 0, kUInt = 1, kFloat = 2, kOpaqueHandle = 3, kBfloat = 4;
constexpr int kFloat8E4M3FN = 10, kFloat8E5M2 = 12;  // as PJDLTypeCode in primjit/abi.h
}  // namespace dl

int DataType::dlpack_code() const {
  switch (code_) {
    case Code::kInt:
      return dl::kInt;
    case Code::kUInt:
      return dl::kUInt;
    case Code::kFloat:
      return dl::kFloat;
    case Code::kBFloat:
      return dl::kBfloat;
    case Code::kFloat8E4M3FN:
      return dl::kFloat8E4M3FN;
    case Code::kFloat8E5M2:
      return dl::kFloat8E5M2;
    case Code::kHandle:
      return dl::kOpaqueHandle;
  }
  return dl::kOpaqueHandle;
}

bool DataType::from_dlpack(int code, int bits, int lanes, DataType* out) {
  if (lanes < 1 || lanes > kMaxLanes) return false;
  DataType t;
  switch (code) {
    case dl::kInt:
      t = Int(bits, lanes);
      break;
    case dl::kUInt:
      t = bits == 1 ? Bool(lanes) : UInt(bits, lanes);
      break;
    case dl::kFloat:
      t = Float(bits, lanes);
      break;
    case dl::kBfloat:
      t = BFloat16(lanes);
      break;
    case dl::kFloat8E4M3FN:
      t = Float8E4M3FN(lanes);
      break;
    case dl::kFloat8E5M2:
      t = Float8E5M2(lanes);
      break;
    case dl::kOpaqueHandle:
      if (bits != 64 || lanes != 1) return false;
      *out = Handle();
      return true;
    default:
      return false;
  }
  if (!t.is_bool() && !t.is_float8() && !valid_bits(t.code(), bits)) return false;
  if ((t.is_float8() && bits != 8) || (t.is_bfloat16() && bits != 16)) return false;
  *out = t;
  return true;
}

std::ostream& operator<<(std::ostream& os, DataType dtype) { return os << dtype.str(); }

}  // namespace primjit
