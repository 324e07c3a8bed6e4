// Attribute values for function attributes and statement annotations: booleans, integers,
// floats, strings, expressions, targets and arrays of these. Maps are ordered by key, so
// printing and hashing are deterministic.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "primjit/ir/attr_keys.h"
#include "primjit/ir/target.h"

namespace primjit {

class Expr;

class AttrValue {
 public:
  using Array = std::vector<AttrValue>;

  AttrValue() : value_(int64_t{0}) {}
  AttrValue(bool v) : value_(v) {}                      // NOLINT: implicit by design
  AttrValue(int v) : value_(int64_t{v}) {}              // NOLINT
  AttrValue(int64_t v) : value_(v) {}                   // NOLINT
  AttrValue(double v) : value_(v) {}                    // NOLINT
  AttrValue(const char* v) : value_(std::string(v)) {}  // NOLINT
  AttrValue(std::string v) : value_(std::move(v)) {}    // NOLINT
  AttrValue(Target v) : value_(std::move(v)) {}         // NOLINT
  AttrValue(Array v) : value_(std::move(v)) {}          // NOLINT
  AttrValue(const Expr& v);                             // NOLINT

  bool is_bool() const { return std::holds_alternative<bool>(value_); }
  bool is_int() const { return std::holds_alternative<int64_t>(value_); }
  bool is_float() const { return std::holds_alternative<double>(value_); }
  bool is_string() const { return std::holds_alternative<std::string>(value_); }
  bool is_target() const { return std::holds_alternative<Target>(value_); }
  bool is_array() const { return std::holds_alternative<Array>(value_); }
  bool is_expr() const { return std::holds_alternative<Ref<Object>>(value_); }

  bool as_bool() const { return std::get<bool>(value_); }
  int64_t as_int() const { return std::get<int64_t>(value_); }
  double as_float() const { return std::get<double>(value_); }
  const std::string& as_string() const { return std::get<std::string>(value_); }
  const Target& as_target() const { return std::get<Target>(value_); }
  const Array& as_array() const { return std::get<Array>(value_); }
  Expr as_expr() const;

  size_t index() const { return value_.index(); }

 private:
  // Expressions are held as plain object references to keep this header independent of expr.h.
  std::variant<bool, int64_t, double, std::string, Target, Array, Ref<Object>> value_;
};

using Attrs = std::map<std::string, AttrValue>;

}  // namespace primjit
