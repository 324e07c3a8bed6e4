// Messages of failed argument checks: the formatter shared by compiled code and the
// interpreter, so both report the same text.
#include "primjit/abi.h"

#include <cinttypes>
#include <cstdio>

#include "primjit/ir/dtype.h"

namespace primjit {
namespace {

// The placeholder at `format[pos]` ('{'): its value count and its length, or {-1, 0}.
struct Placeholder {
  int values;
  size_t length;
};

Placeholder placeholder_at(std::string_view format, size_t pos) {
  struct Kind {
    std::string_view text;
    int values;
  };
  for (Kind kind : {Kind{"{}", 1}, Kind{"{dtype}", 3}, Kind{"{type}", 1}, Kind{"{device}", 1},
                    Kind{"{str}", 1}}) {
    if (format.substr(pos, kind.text.size()) == kind.text) return {kind.values, kind.text.size()};
  }
  return {-1, 0};
}

std::string value_text(const PJValue& v) {
  char buf[64];
  switch (v.type_index) {
    case kPJInt:
      std::snprintf(buf, sizeof(buf), "%" PRId64, v.v_int64);
      return buf;
    case kPJBool:
      return v.v_int64 != 0 ? "True" : "False";
    case kPJFloat:
      std::snprintf(buf, sizeof(buf), "%.9g", v.v_float64);
      return buf;
    case kPJNone:
      return "None";
    default:
      std::snprintf(buf, sizeof(buf), "%p", v.v_ptr);
      return buf;
  }
}

const char* device_name(int64_t device_type) {
  switch (device_type) {
    case 1:
      return "cpu";
    case 2:
      return "cuda";
    case 3:
      return "cuda_host";
    case 13:
      return "cuda_managed";
    default:
      return nullptr;
  }
}

}  // namespace

const char* type_index_name(int32_t type_index) {
  switch (type_index) {
    case kPJNone:
      return "None";
    case kPJInt:
      return "int";
    case kPJBool:
      return "boolean";
    case kPJFloat:
      return "float";
    case kPJOpaquePtr:
      return "pointer";
    case kPJDLTensorPtr:
      return "Tensor";
    default:
      return "unknown type";
  }
}

int32_t type_index_of(DataType t) {
  if (t.is_bool()) return kPJBool;
  if (t.is_integer()) return kPJInt;
  if (t.is_floating()) return kPJFloat;
  if (t.is_handle()) return kPJOpaquePtr;
  return kPJNone;
}

int format_value_count(std::string_view format) {
  int count = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] == '}') {
      if (i + 1 < format.size() && format[i + 1] == '}') {
        ++i;
        continue;
      }
      return -1;
    }
    if (format[i] != '{') continue;
    if (i + 1 < format.size() && format[i + 1] == '{') {
      ++i;
      continue;
    }
    Placeholder p = placeholder_at(format, i);
    if (p.values < 0) return -1;
    count += p.values;
    i += p.length - 1;
  }
  return count;
}

std::string format_message(std::string_view format, const PJValue* values, int num_values) {
  std::string out;
  int next = 0;
  auto has = [&](int n) { return values != nullptr && next + n <= num_values; };
  for (size_t i = 0; i < format.size(); ++i) {
    char c = format[i];
    if ((c == '{' || c == '}') && i + 1 < format.size() && format[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    Placeholder p = c == '{' ? placeholder_at(format, i) : Placeholder{-1, 0};
    if (p.values < 0 || !has(p.values)) {
      out += c;
      continue;
    }
    std::string_view kind = format.substr(i, p.length);
    const PJValue& v = values[next];
    if (kind == "{dtype}") {
      DataType t;
      if (DataType::from_dlpack(static_cast<int>(values[next].v_int64),
                                static_cast<int>(values[next + 1].v_int64),
                                static_cast<int>(values[next + 2].v_int64), &t)) {
        out += t.str();
      } else {
        out += "(code " + value_text(values[next]) + ", bits " + value_text(values[next + 1]) +
               ", lanes " + value_text(values[next + 2]) + ")";
      }
    } else if (kind == "{str}") {
      // A string literal of the module (T.format admits no other pointer value).
      out += v.type_index == kPJOpaquePtr && v.v_ptr != nullptr ? static_cast<const char*>(v.v_ptr)
                                                                : value_text(v);
    } else if (kind == "{type}") {
      out += type_index_name(static_cast<int32_t>(v.v_int64));
    } else if (kind == "{device}") {
      const char* name = device_name(v.v_int64);
      out += name != nullptr ? std::string(name) : "device type " + value_text(v);
    } else {
      out += value_text(v);
    }
    next += p.values;
    i += p.length - 1;
  }
  return out;
}

std::string escape_format(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    out += c;
    if (c == '{' || c == '}') out += c;
  }
  return out;
}

}  // namespace primjit
