// CommonSubexprElim on long runs of consecutive Binds (1k ... 64k). The pass must stay linear in
// the length of such a run: the complexity should fit O(N) with a small RMS, and the time per
// Bind should grow with N no more than a reference linear pass's does. Three shapes:
//   TrivialChain   x_k = x_{k-1} + 1                          nothing to share (the common case)
//   CrossSibling   x_k = (x_{k-1} * m + c) + (x_{k-2} * m + c) every value repeats a term of the
//                                                             previous Bind: one new Bind each
//   ReuseExisting  t_k = x_{k-1} * m;  x_k = x_{k-1} * m + k   every second value reuses a Bind
// plus ReferenceConvertSSA: ConvertSSA, another single walk over the same TrivialChain input,
// to tell the memory hierarchy (1k Binds fit in L2, 64k do not) from the algorithm.
// Before timing, each benchmark checks once that the pass gives exactly the expected function
// (built independently below) and that it is well formed; a failure makes the program exit 1.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "bench/bench_main.h"
#include "primjit/ir/function.h"
#include "primjit/ir/structural.h"
#include "primjit/ir/verify.h"
#include "primjit/passes.h"

namespace {

using primjit::Add;
using primjit::Bind;
using primjit::Buffer;
using primjit::BufferStore;
using primjit::DataType;
using primjit::Expr;
using primjit::IRModule;
using primjit::make_const;
using primjit::Mul;
using primjit::PrimFunc;
using primjit::SeqStmt;
using primjit::Stmt;
using primjit::Var;

// Why the pass's result for one input is wrong, or "" when it is right.
std::string check(const IRModule& out, const IRModule& expected) {
  std::vector<std::string> errors = primjit::well_formed_errors(out);
  if (!errors.empty()) return "result is not well formed: " + errors[0];
  if (auto diff = primjit::structural_diff(out, expected)) {
    return "result differs from the expected function: " + *diff;
  }
  return "";
}

Var int_var(const std::string& name) { return Var::make(name, DataType::Int(32)); }

struct Generated {
  IRModule input;
  IRModule expected;
};

// A function (A: T.Buffer((1,), "int32"), x_0, m, c) whose body is `body` then A[0] = result.
IRModule wrap(const Var& x0, const Var& m, const Var& c, const Buffer& out, const Var& handle,
              std::vector<Stmt> body, const Expr& result) {
  body.push_back(BufferStore::make(out, result, {make_const(0)}));
  PrimFunc f = PrimFunc::make({handle, x0, m, c}, {{handle, out}}, SeqStmt::make(std::move(body)));
  return IRModule::from_function("main", f);
}

// Input and expected output share the parameters, so they can be compared structurally.
template <typename F>
Generated generate(F&& build) {
  Var x0 = int_var("x_0"), m = int_var("m"), c = int_var("c");
  Var handle = Var::make_handle("A_handle");
  Buffer out = Buffer::make("A", DataType::Int(32), {make_const(1)});
  std::vector<Stmt> in_body, ex_body;
  Expr in_result, ex_result;
  build(x0, m, c, &in_body, &in_result, &ex_body, &ex_result);
  return {wrap(x0, m, c, out, handle, std::move(in_body), in_result),
          wrap(x0, m, c, out, handle, std::move(ex_body), ex_result)};
}

Generated trivial_chain(int64_t n) {
  return generate([n](const Var& x0, const Var&, const Var&, std::vector<Stmt>* in, Expr* in_res,
                      std::vector<Stmt>* ex, Expr* ex_res) {
    Var prev = x0;
    for (int64_t k = 1; k <= n; ++k) {
      Var x = int_var("x_" + std::to_string(k));
      in->push_back(Bind::make(x, Add::make(prev, make_const(1))));
      prev = x;
    }
    *ex = *in;  // nothing is repeated
    *in_res = *ex_res = prev;
  });
}

Generated cross_sibling(int64_t n) {
  return generate([n](const Var& x0, const Var& m, const Var& c, std::vector<Stmt>* in,
                      Expr* in_res, std::vector<Stmt>* ex, Expr* ex_res) {
    auto term = [&](const Expr& x) { return Add::make(Mul::make(x, m), c); };
    std::vector<Var> xs = {x0};
    std::vector<Expr> shared = {Expr()};  // expected: what replaces term(x_j)
    int cse = 0;
    for (int64_t k = 1; k <= n; ++k) {
      Var x = int_var("x_" + std::to_string(k));
      if (k == 1) {
        in->push_back(Bind::make(x, term(x0)));
        ex->push_back(Bind::make(x, term(x0)));
        shared[0] = x;  // term(x_0) is x_1's value: reused from there on
      } else {
        in->push_back(Bind::make(x, Add::make(term(xs[k - 1]), term(xs[k - 2]))));
        Expr first = term(xs[k - 1]);
        if (k < n) {  // term(x_{k-1}) is used again by x_{k+1}: a new Bind before x_k
          Var v = int_var("cse_v" + std::to_string(++cse));
          ex->push_back(Bind::make(v, first));
          first = v;
        }
        ex->push_back(Bind::make(x, Add::make(first, shared[k - 2])));
        shared.push_back(first);
      }
      xs.push_back(x);
    }
    *in_res = *ex_res = xs.back();
  });
}

Generated reuse_existing(int64_t n) {
  return generate([n](const Var& x0, const Var& m, const Var&, std::vector<Stmt>* in, Expr* in_res,
                      std::vector<Stmt>* ex, Expr* ex_res) {
    Var prev = x0;
    for (int64_t k = 1; k <= n / 2; ++k) {
      Var t = int_var("t_" + std::to_string(k)), x = int_var("x_" + std::to_string(k));
      in->push_back(Bind::make(t, Mul::make(prev, m)));
      in->push_back(Bind::make(x, Add::make(Mul::make(prev, m), make_const(k))));
      ex->push_back(Bind::make(t, Mul::make(prev, m)));
      ex->push_back(Bind::make(x, Add::make(t, make_const(k))));
      prev = x;
    }
    *in_res = *ex_res = prev;
  });
}

void run_pass(benchmark::State& state, const char* name, Generated (*make)(int64_t)) {
  const int64_t n = state.range(0);  // Binds in the input
  Generated g = make(n);
  const primjit::passes::Pass& pass = primjit::passes::get_pass(name);
  // Checked once per benchmark and size (Google Benchmark calls this function several times),
  // outside the timed loop. A failure is reported and makes main() return 1, but the run still
  // completes: Google Benchmark 1.7.1 crashes fitting the complexity of a family with a run
  // skipped by SkipWithError.
  static std::map<std::tuple<std::string, Generated (*)(int64_t), int64_t>, std::string> verdict;
  auto [it, first] = verdict.try_emplace({name, make, n});
  if (first) {
    it->second = check(pass.run(g.input, {}), g.expected);
    if (!it->second.empty()) {
      primjit::bench::fail();
      std::fprintf(stderr, "bench_cse: CHECK FAILED for %s with %lld Binds: %s\n", name,
                   static_cast<long long>(n), it->second.c_str());
    }
  }
  if (!it->second.empty()) state.SetLabel("CHECK FAILED");
  for (auto _ : state) {
    IRModule out = pass.run(g.input, {});
    benchmark::DoNotOptimize(out.get());
  }
  state.SetComplexityN(n);
  state.counters["per_bind"] = benchmark::Counter(
      static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate |
                                  benchmark::Counter::kInvert);  // seconds per Bind
}

constexpr const char* kCse = "CommonSubexprElim";
void BM_CseTrivialChain(benchmark::State& state) { run_pass(state, kCse, trivial_chain); }
void BM_CseCrossSibling(benchmark::State& state) { run_pass(state, kCse, cross_sibling); }
void BM_CseReuseExisting(benchmark::State& state) { run_pass(state, kCse, reuse_existing); }
void BM_ReferenceConvertSSA(benchmark::State& state) {
  run_pass(state, "ConvertSSA", trivial_chain);  // already SSA: unchanged, like TrivialChain
}

BENCHMARK(BM_CseTrivialChain)
    ->RangeMultiplier(2)
    ->Range(1 << 10, 1 << 16)
    ->Unit(benchmark::kMicrosecond)
    ->Complexity(benchmark::oN);
BENCHMARK(BM_CseCrossSibling)
    ->RangeMultiplier(2)
    ->Range(1 << 10, 1 << 16)
    ->Unit(benchmark::kMicrosecond)
    ->Complexity(benchmark::oN);
BENCHMARK(BM_CseReuseExisting)
    ->RangeMultiplier(2)
    ->Range(1 << 10, 1 << 16)
    ->Unit(benchmark::kMicrosecond)
    ->Complexity(benchmark::oN);
BENCHMARK(BM_ReferenceConvertSSA)
    ->RangeMultiplier(2)
    ->Range(1 << 10, 1 << 16)
    ->Unit(benchmark::kMicrosecond)
    ->Complexity(benchmark::oN);

}  // namespace

PRIMJIT_BENCHMARK_MAIN()
