// UnrollLoops: `T.unroll` loops with constant bounds become straight-line code.
//
// Requires: nothing.
// Ensures:  no For of kind unroll with constant min and extent remains; each iteration is a
//           copy of the body with the loop variable replaced by its value and every variable
//           or buffer defined in the body given a fresh object (single definition holds).
//           Unrolled loops with symbolic bounds are left alone. More than 4096 iterations is
//           refused with an error (use T.serial).
// Example:
//   for i in T.unroll(2):          =>      A[0] = T.float32(0)
//       A[i] = T.float32(0)                A[1] = T.float32(0)
#include "passes/fresh_definitions.h"
#include "passes/pass_list.h"
#include "primjit/error.h"

namespace primjit::passes {
namespace {

constexpr int64_t kMaxUnroll = 4096;

class Unroller : public StmtExprMutator {
 public:
  Stmt mutate(const For* op) override {
    Stmt s = StmtExprMutator::mutate(op);  // inner loops first
    const auto* loop = s.as<For>();
    std::optional<int64_t> min = as_const_int(loop->min);
    std::optional<int64_t> extent = as_const_int(loop->extent);
    if (loop->for_kind != ForKind::kUnrolled || !min || !extent) return s;
    PRIMJIT_USER_CHECK(*extent <= kMaxUnroll)
        << "UnrollLoops: the T.unroll loop over '" << loop->loop_var->name << "' has " << *extent
        << " iterations; more than " << kMaxUnroll << " is refused (use T.serial)";
    std::vector<Stmt> copies;
    for (int64_t k = 0; k < *extent; ++k) {
      VarMap value{{loop->loop_var.get(), IntImm::make(loop->loop_var.dtype(), *min + k)}};
      copies.push_back(copy_with_fresh_definitions(loop->body, value));
    }
    return SeqStmt::make(std::move(copies));
  }
};

}  // namespace

Pass make_unroll_loops_pass() {
  return body_pass("UnrollLoops", "expand T.unroll loops with constant bounds",
                   [](const Stmt& body) { return Unroller().mutate_stmt(body); });
}

}  // namespace primjit::passes
