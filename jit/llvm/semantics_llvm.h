// The operations whose plain LLVM instruction leaves some inputs undefined (poison, undefined
// behaviour, or a trap), lowered to the results docs/semantics.md gives on every backend:
// integer division by zero and MIN / -1, shifts by the width or more, float to integer out of
// range or NaN, NaN and signed zeros in floating min/max. Each costs a few selects around the
// instruction; with constant operands LLVM folds them away.
#pragma once

#include <llvm/IR/IRBuilder.h>

namespace primjit::jit {

enum class IntDivision { kTruncDiv, kTruncMod, kFloorDiv, kFloorMod };

/// `a op b` on integers (scalars or vectors of one type): x / 0 = -1 (all ones), x % 0 = x,
/// MIN / -1 = MIN, MIN % -1 = 0; FloorDiv/FloorMod round toward negative infinity.
llvm::Value* emit_int_division(llvm::IRBuilder<>& b, IntDivision kind, bool is_signed,
                               llvm::Value* x, llvm::Value* y);

/// shift_left / shift_right with the amount `s` converted to x's type and read as unsigned: an
/// amount of the width or more gives 0 (a signed right shift: the sign, -1 or 0).
llvm::Value* emit_shift(llvm::IRBuilder<>& b, bool left, bool is_signed, llvm::Value* x,
                        llvm::Value* s, bool s_is_signed);

/// Floating min/max: IEEE 754-2019 minimumNumber / maximumNumber (NaN only when both are NaN,
/// -0 below +0).
llvm::Value* emit_float_min_max(llvm::IRBuilder<>& b, bool is_min, llvm::Value* x, llvm::Value* y);

/// Floating to integer: toward zero, saturating at the type's range, NaN to 0.
llvm::Value* emit_float_to_int(llvm::IRBuilder<>& b, llvm::Value* v, llvm::Type* to,
                               bool is_signed);

}  // namespace primjit::jit
