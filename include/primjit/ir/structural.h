// Structural equality and hashing. Alpha-equivalent over binders: variables and buffers are
// matched by where they are first met (definition), not by name or identity, so two
// independently built or parsed copies of a function compare equal. Every other field
// (dtypes, constants, names of functions and builtins, attributes, annotations) must match.
// structural_hash(a) == structural_hash(b) whenever structural_equal(a, b).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "primjit/ir/function.h"

namespace primjit {

bool structural_equal(const IRModule& a, const IRModule& b);
bool structural_equal(const PrimFunc& a, const PrimFunc& b);
bool structural_equal(const Stmt& a, const Stmt& b);
bool structural_equal(const Expr& a, const Expr& b);

size_t structural_hash(const IRModule& m);
size_t structural_hash(const PrimFunc& f);
size_t structural_hash(const Stmt& s);
size_t structural_hash(const Expr& e);

/// Where two modules first differ ("function 'main': body.seq[2].value.b: IntImm 3 vs IntImm 4",
/// with both sides described), or nullopt when they are structurally equal.
std::optional<std::string> structural_diff(const IRModule& a, const IRModule& b);
std::optional<std::string> structural_diff(const PrimFunc& a, const PrimFunc& b);

}  // namespace primjit
