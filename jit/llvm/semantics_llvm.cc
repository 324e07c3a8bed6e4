#include "jit/llvm/semantics_llvm.h"

#include <llvm/IR/Intrinsics.h>

namespace primjit::jit {

using llvm::Value;

Value* emit_int_division(llvm::IRBuilder<>& b, IntDivision kind, bool is_signed, Value* x,
                         Value* y) {
  llvm::Type* t = x->getType();
  const unsigned bits = t->getScalarSizeInBits();
  Value* zero = llvm::Constant::getNullValue(t);
  Value* all_ones = llvm::Constant::getAllOnesValue(t);
  Value* by_zero = b.CreateICmpEQ(y, zero);
  Value* unsafe = by_zero;
  if (is_signed) {
    Value* min = llvm::ConstantInt::get(t, llvm::APInt::getSignedMinValue(bits));
    unsafe = b.CreateOr(by_zero, b.CreateAnd(b.CreateICmpEQ(x, min), b.CreateICmpEQ(y, all_ones)));
  }
  // Divide by 1 where the instruction is undefined: MIN / 1 is the MIN / -1 result already,
  // and the zero case is selected below.
  Value* d = b.CreateSelect(unsafe, llvm::ConstantInt::get(t, 1), y);
  const bool quotient = kind == IntDivision::kTruncDiv || kind == IntDivision::kFloorDiv;
  Value* result = nullptr;
  if (!is_signed) {
    result = quotient ? b.CreateUDiv(x, d) : b.CreateURem(x, d);
  } else if (kind == IntDivision::kTruncDiv) {
    result = b.CreateSDiv(x, d);
  } else if (kind == IntDivision::kTruncMod) {
    result = b.CreateSRem(x, d);
  } else {
    // Truncating division, corrected when the remainder and divisor have opposite signs.
    Value* q = b.CreateSDiv(x, d);
    Value* r = b.CreateSRem(x, d);
    Value* adjust = b.CreateAnd(b.CreateICmpNE(r, zero),
                                b.CreateICmpNE(b.CreateICmpSLT(r, zero), b.CreateICmpSLT(d, zero)));
    result = kind == IntDivision::kFloorDiv
                 ? b.CreateSelect(adjust, b.CreateSub(q, llvm::ConstantInt::get(t, 1)), q)
                 : b.CreateSelect(adjust, b.CreateAdd(r, d), r);
  }
  return b.CreateSelect(by_zero, quotient ? all_ones : x, result);
}

Value* emit_shift(llvm::IRBuilder<>& b, bool left, bool is_signed, Value* x, Value* s,
                  bool s_is_signed) {
  llvm::Type* t = x->getType();
  s = b.CreateIntCast(s, t, s_is_signed);
  const unsigned bits = t->getScalarSizeInBits();
  Value* in_range = b.CreateICmpULT(s, llvm::ConstantInt::get(t, bits));
  Value* zero = llvm::Constant::getNullValue(t);
  if (left) return b.CreateSelect(in_range, b.CreateShl(x, s), zero);
  if (!is_signed) return b.CreateSelect(in_range, b.CreateLShr(x, s), zero);
  // Shifting by width - 1 leaves the sign in every bit.
  return b.CreateAShr(x, b.CreateSelect(in_range, s, llvm::ConstantInt::get(t, bits - 1)));
}

Value* emit_float_min_max(llvm::IRBuilder<>& b, bool is_min, Value* x, Value* y) {
  llvm::Type* t = x->getType();
  llvm::Type* bits_type = t->getWithNewType(b.getIntNTy(t->getScalarSizeInBits()));
  Value* x_negative =
      b.CreateICmpSLT(b.CreateBitCast(x, bits_type), llvm::Constant::getNullValue(bits_type));
  // x when y is NaN, when x orders first, or when they compare equal (zeros) and x has the
  // sign that orders first; else y (also when x is NaN).
  Value* first = is_min ? b.CreateFCmpOLT(x, y) : b.CreateFCmpOGT(x, y);
  Value* sign_first = is_min ? x_negative : b.CreateNot(x_negative);
  Value* take_x = b.CreateOr(b.CreateOr(b.CreateFCmpUNO(y, y), first),
                             b.CreateAnd(b.CreateFCmpOEQ(x, y), sign_first));
  return b.CreateSelect(take_x, x, y);
}

Value* emit_float_to_int(llvm::IRBuilder<>& b, Value* v, llvm::Type* to, bool is_signed) {
  llvm::Intrinsic::ID id = is_signed ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat;
  return b.CreateIntrinsic(id, {to, v->getType()}, {v});
}

}  // namespace primjit::jit
