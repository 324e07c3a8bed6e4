// FuseMultiplyAdd: floating-point contraction, when primjit decides it (PipelineOptions::
// fp_contract, KernelOptions::fp_contract). LLVM and NVRTC never contract on their own, so
// without this pass `a * b + c` rounds twice on every backend, and with it once, everywhere.
//
// Requires: nothing.
// Ensures:  every floating Add with a floating Mul operand is `T.fma(x, y, z)`, the product
//           rounded once with the addend: `x * y + z` and `z + x * y` both; when both operands
//           are products the left one is fused (`x*y + u*v` => `T.fma(x, y, u*v)`). Operands
//           are rewritten first, so the nested sums of a dot product fuse one by one. Integer
//           arithmetic, subtractions and products used otherwise are left alone.
// Example:
//   C[i] = A[i] * alpha + B[i]      =>      C[i] = T.fma(A[i], alpha, B[i])
#include "passes/pass_list.h"
#include "primjit/ir/functor.h"

namespace primjit::passes {
namespace {

class Fuser : public StmtExprMutator {
 public:
  Expr mutate(const Add* op) override {
    Expr e = StmtExprMutator::mutate(op);
    const auto* add = e.as<Add>();
    if (add == nullptr || !add->dtype.is_floating()) return e;
    const auto* left = add->a.as<Mul>();
    const auto* right = add->b.as<Mul>();
    if (left != nullptr) return Call::make(add->dtype, fma(), {left->a, left->b, add->b});
    if (right != nullptr) return Call::make(add->dtype, fma(), {right->a, right->b, add->a});
    return e;
  }

 private:
  static const Op& fma() {
    static const Op op = Op::get("fma");
    return op;
  }
};

}  // namespace

Pass make_fuse_multiply_add_pass() {
  return body_pass("FuseMultiplyAdd", "contract a * b + c into T.fma (one rounding)",
                   [](const Stmt& body) { return Fuser().mutate_stmt(body); });
}

}  // namespace primjit::passes
