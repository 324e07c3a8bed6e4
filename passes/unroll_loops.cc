// UnrollLoops: `T.unroll` loops with constant bounds become straight-line code.
//
// Requires: nothing.
// Ensures:  no For of kind unroll with constant min and extent of at most `max` iterations
//           (UnrollLoops{max=N}, default kDefaultMaxUnroll) remains; each iteration is a copy of
//           the body with the loop variable replaced by its value and every variable or buffer
//           defined in the body given a fresh object (single definition holds). A T.unroll loop
//           over more iterations becomes a serial loop (logged at info level with the reason);
//           unrolled loops with symbolic bounds are left alone.
// Example:
//   for i in T.unroll(2):          =>      A[0] = T.float32(0)
//       A[i] = T.float32(0)                A[1] = T.float32(0)
#include "passes/fresh_definitions.h"
#include "passes/pass_list.h"
#include "passes/pass_options.h"
#include "primjit/error.h"
#include "primjit/log.h"

namespace primjit::passes {
namespace {

class Unroller : public StmtExprMutator {
 public:
  explicit Unroller(int64_t max_unroll) : max_unroll_(max_unroll) {}

  Stmt mutate(const For* op) override {
    Stmt s = StmtExprMutator::mutate(op);  // inner loops first
    const auto* loop = s.as<For>();
    std::optional<int64_t> min = as_const_int(loop->min);
    std::optional<int64_t> extent = as_const_int(loop->extent);
    if (loop->for_kind != ForKind::kUnrolled || !min || !extent) return s;
    if (!unroll_within_limit(*loop, max_unroll_, "UnrollLoops")) {
      return For::make(loop->loop_var, loop->min, loop->extent, ForKind::kSerial, loop->body,
                       loop->thread_tag, loop->annotations);
    }
    std::vector<Stmt> copies;
    for (int64_t k = 0; k < *extent; ++k) {
      VarMap value{{loop->loop_var.get(), IntImm::make(loop->loop_var.dtype(), *min + k)}};
      copies.push_back(copy_with_fresh_definitions(loop->body, value));
    }
    return SeqStmt::make(std::move(copies));
  }

 private:
  int64_t max_unroll_;
};

struct UnrollLoopsOptions {
  int64_t max = kDefaultMaxUnroll;
};

}  // namespace

bool unroll_within_limit(const For& loop, int64_t max_unroll, const char* who) {
  std::optional<int64_t> extent = as_const_int(loop.extent);
  if (extent && *extent <= max_unroll) return true;
  if (extent) {
    PRIMJIT_LOG_INFO << who << ": the T.unroll loop over '" << loop.loop_var->name << "' has "
                     << *extent << " iterations, more than the unroll limit of " << max_unroll
                     << "; it stays a loop";
  } else {
    PRIMJIT_LOG_INFO << who << ": the T.unroll loop over '" << loop.loop_var->name
                     << "' has a symbolic extent; it stays a loop";
  }
  return false;
}

Pass make_unroll_loops_pass() {
  PassOptions<UnrollLoopsOptions> options;
  options.add_int("max", &UnrollLoopsOptions::max,
                  "the most iterations a T.unroll loop is unrolled for", 0);
  return typed_pass<UnrollLoopsOptions>(
      "UnrollLoops", "expand T.unroll loops with constant bounds, at most max iterations",
      std::move(options), [](const IRModule& module, const UnrollLoopsOptions& options) {
        IRModule out = module;
        for (const auto& [gvar, func] : module->functions) {
          Stmt body = Unroller(options.max).mutate_stmt(func->body);
          if (!body.same_as(func->body)) {
            out = out.with_function(gvar->name, func.with_body(body));
          }
        }
        return out;
      });
}

}  // namespace primjit::passes
