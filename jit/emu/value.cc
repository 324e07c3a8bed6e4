#include "jit/emu/value.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "primjit/error.h"

namespace primjit::jit::emu {

TypeInfo::TypeInfo(DataType t) : dtype(t.element_of()), bits(t.bits()) {
  switch (t.code()) {
    case DataType::Code::kInt:
      repr = Repr::kInt;
      break;
    case DataType::Code::kUInt:
      repr = t.bits() == 1 ? Repr::kBool : Repr::kUInt;
      break;
    case DataType::Code::kFloat:
      if (t.bits() == 32) {
        repr = Repr::kFloat32;
      } else if (t.bits() == 64) {
        repr = Repr::kFloat64;
      } else {
        PRIMJIT_ICHECK(t.bits() == 16) << "float" << t.bits();
        repr = Repr::kNarrow;
        format = &fp::kFloat16;
      }
      break;
    case DataType::Code::kBFloat:
      repr = Repr::kNarrow;
      format = &fp::kBFloat16;
      break;
    case DataType::Code::kFloat8E4M3FN:
      repr = Repr::kNarrow;
      format = &fp::kFloat8E4M3FN;
      break;
    case DataType::Code::kFloat8E5M2:
      repr = Repr::kNarrow;
      format = &fp::kFloat8E5M2;
      break;
    case DataType::Code::kHandle:
      repr = t.bits() == 0 ? Repr::kVoid : Repr::kHandle;
      break;
  }
}

double round_float(const TypeInfo& t, double v) {
  switch (t.repr) {
    case Repr::kFloat32:
      return static_cast<double>(static_cast<float>(v));
    case Repr::kNarrow:
      return static_cast<double>(fp::round_to(*t.format, static_cast<float>(v)));
    default:
      return v;
  }
}

Scalar from_integer(const TypeInfo& t, int64_t v, bool is_unsigned) {
  const uint64_t u = static_cast<uint64_t>(v);
  switch (t.repr) {
    case Repr::kInt:
      return Scalar::of_int(wrap_signed(u, t.bits));
    case Repr::kUInt:
      return Scalar::of_int(wrap_unsigned(u, t.bits));
    case Repr::kBool:
      return Scalar::of_int(v != 0 ? 1 : 0);
    case Repr::kFloat32:
      return Scalar::of_float(is_unsigned ? static_cast<double>(static_cast<float>(u))
                                          : static_cast<double>(static_cast<float>(v)));
    case Repr::kFloat64:
      return Scalar::of_float(is_unsigned ? static_cast<double>(u) : static_cast<double>(v));
    case Repr::kNarrow: {
      float f = is_unsigned ? static_cast<float>(u) : static_cast<float>(v);
      return Scalar::of_float(fp::round_to(*t.format, f));
    }
    case Repr::kHandle:
      return Scalar::of_pointer(u, nullptr);
    case Repr::kVoid:
      break;
  }
  return Scalar();
}

Scalar from_double(const TypeInfo& t, double v) {
  switch (t.repr) {
    case Repr::kFloat32:
    case Repr::kFloat64:
    case Repr::kNarrow:
      return Scalar::of_float(round_float(t, v));
    case Repr::kBool:
      return Scalar::of_int(v != 0 ? 1 : 0);
    case Repr::kInt: {
      // Toward zero, saturating at the type's range (NaN gives 0), as GPU conversions do.
      if (std::isnan(v)) return Scalar::of_int(0);
      const double lo = -std::ldexp(1.0, t.bits - 1);
      const double hi = std::ldexp(1.0, t.bits - 1);
      if (v <= lo) return Scalar::of_int(wrap_signed(uint64_t{1} << (t.bits - 1), t.bits));
      if (v >= hi) return Scalar::of_int(wrap_signed((uint64_t{1} << (t.bits - 1)) - 1, t.bits));
      return Scalar::of_int(static_cast<int64_t>(std::trunc(v)));
    }
    case Repr::kUInt: {
      if (std::isnan(v) || v <= 0) return Scalar::of_int(0);
      const double hi = std::ldexp(1.0, t.bits);
      if (v >= hi) return Scalar::of_int(wrap_unsigned(~uint64_t{0}, t.bits));
      return Scalar::of_int(static_cast<int64_t>(static_cast<uint64_t>(std::trunc(v))));
    }
    case Repr::kHandle:
      return Scalar::of_pointer(static_cast<uint64_t>(v), nullptr);
    case Repr::kVoid:
      break;
  }
  return Scalar();
}

double to_double(const TypeInfo& t, const Scalar& v) {
  switch (t.repr) {
    case Repr::kInt:
    case Repr::kBool:
      return static_cast<double>(v.i);
    case Repr::kUInt:
      return static_cast<double>(v.u);
    case Repr::kFloat32:
    case Repr::kFloat64:
    case Repr::kNarrow:
      return v.f;
    case Repr::kHandle:
      return static_cast<double>(v.u);
    case Repr::kVoid:
      break;
  }
  return 0;
}

Scalar cast_scalar(const TypeInfo& from, const TypeInfo& to, const Scalar& v) {
  if (from.repr == Repr::kHandle && to.repr == Repr::kHandle) return v;
  if (from.is_integral() || from.repr == Repr::kHandle) {
    return from_integer(to, v.i, from.repr == Repr::kUInt || from.repr == Repr::kHandle);
  }
  if (from.is_floating()) return from_double(to, v.f);
  return Scalar();
}

void encode(const TypeInfo& t, const Scalar& v, uint8_t* out) {
  switch (t.repr) {
    case Repr::kInt:
    case Repr::kUInt:
      std::memcpy(out, &v.i, static_cast<size_t>(t.bits / 8));
      return;
    case Repr::kBool:
      out[0] = v.i != 0 ? 1 : 0;
      return;
    case Repr::kFloat32: {
      float x = static_cast<float>(v.f);
      std::memcpy(out, &x, 4);
      return;
    }
    case Repr::kFloat64:
      std::memcpy(out, &v.f, 8);
      return;
    case Repr::kNarrow: {
      uint32_t bits = fp::encode(*t.format, static_cast<float>(v.f));
      if (t.bits == 16) {
        uint16_t b = static_cast<uint16_t>(bits);
        std::memcpy(out, &b, 2);
      } else {
        out[0] = static_cast<uint8_t>(bits);
      }
      return;
    }
    case Repr::kHandle:
      std::memcpy(out, &v.u, 8);
      return;
    case Repr::kVoid:
      return;
  }
}

Scalar decode(const TypeInfo& t, const uint8_t* in) {
  switch (t.repr) {
    case Repr::kInt:
    case Repr::kUInt: {
      uint64_t raw = 0;
      std::memcpy(&raw, in, static_cast<size_t>(t.bits / 8));
      return Scalar::of_int(t.repr == Repr::kInt ? wrap_signed(raw, t.bits)
                                                 : wrap_unsigned(raw, t.bits));
    }
    case Repr::kBool:
      return Scalar::of_int(in[0] != 0 ? 1 : 0);
    case Repr::kFloat32: {
      float x;
      std::memcpy(&x, in, 4);
      return Scalar::of_float(x);
    }
    case Repr::kFloat64: {
      double x;
      std::memcpy(&x, in, 8);
      return Scalar::of_float(x);
    }
    case Repr::kNarrow: {
      uint32_t bits = in[0];
      if (t.bits == 16) {
        uint16_t b;
        std::memcpy(&b, in, 2);
        bits = b;
      }
      return Scalar::of_float(fp::decode(*t.format, bits));
    }
    case Repr::kHandle: {
      uint64_t a;
      std::memcpy(&a, in, 8);
      return Scalar::of_pointer(a, nullptr);
    }
    case Repr::kVoid:
      break;
  }
  return Scalar();
}

Lanes reinterpret_lanes(DataType from, const Lanes& in, DataType to) {
  const int total = from.bits() * from.lanes();
  PRIMJIT_USER_CHECK(total == to.bits() * to.lanes() && from.bits() % 8 == 0 && to.bits() % 8 == 0)
      << "T.reinterpret from " << from << " to " << to
      << ": both types must have the same number of bits, in whole bytes";
  std::vector<uint8_t> bytes(static_cast<size_t>(total / 8));
  TypeInfo ti(from), to_info(to);
  for (int l = 0; l < from.lanes(); ++l) encode(ti, in[l], bytes.data() + l * (from.bits() / 8));
  Lanes out(static_cast<size_t>(to.lanes()));
  for (int l = 0; l < to.lanes(); ++l) out[l] = decode(to_info, bytes.data() + l * (to.bits() / 8));
  return out;
}

std::string scalar_text(const TypeInfo& t, const Scalar& v) {
  char buf[64];
  switch (t.repr) {
    case Repr::kInt:
      std::snprintf(buf, sizeof(buf), "%" PRId64, v.i);
      return buf;
    case Repr::kUInt:
      std::snprintf(buf, sizeof(buf), "%" PRIu64, v.u);
      return buf;
    case Repr::kBool:
      return v.i != 0 ? "True" : "False";
    case Repr::kFloat64:
      std::snprintf(buf, sizeof(buf), "%.17g", v.f);
      return buf;
    case Repr::kFloat32:
    case Repr::kNarrow:
      std::snprintf(buf, sizeof(buf), "%.9g", v.f);
      return buf;
    case Repr::kHandle:
      std::snprintf(buf, sizeof(buf), "0x%" PRIx64, v.u);
      return buf;
    case Repr::kVoid:
      break;
  }
  return "void";
}

}  // namespace primjit::jit::emu
