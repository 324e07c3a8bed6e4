// The default pipeline (passes::default_pipeline(), the passes the JIT runs on every new variant)
// on the builder examples of examples/kernels.h and on a generated kernel of 1000 statements.
// Goal: a small function goes through the whole pipeline within 1 ms.
//
//   BM_Pipeline/<input>         the whole pipeline through run_passes, as the JIT runs it
//   BM_PipelineByPass/<input>   the same passes run one by one, the thread's CPU time taken
//                               around each: one counter per pass, its share in % of the
//                               summed pass times of the same run (the shares add up to 100)
//
// Before timing, each input is checked once: the pipeline keeps it well formed after every
// pass (verify_each), and the reference interpreter computes the same outputs before and after
// every pass on the same inputs (jit/emu/differential.h); the generated kernel must have
// exactly 1000 statements. A failure makes the program exit 1.
#include <benchmark/benchmark.h>

#include <time.h>

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "examples/kernels.h"
#include "jit/emu/differential.h"
#include "primjit/builder.h"
#include "primjit/passes.h"

namespace primjit::bench {
namespace {

namespace pb = primjit::builder;

constexpr int kStatements = 1000;

// A kernel of exactly 1000 statements (every statement but sequences counts, nested ones too):
// one block per row of A and B (n x 64), 64 threads, three dynamic shared buffers rotated
// through 90 rounds. Each round reads a neighbour's value of one shared buffer, updates the
// thread's own slot of the next one, updates B through a branch, a two-way branch and a small
// loop, binds a dead value (for RemoveNoOp) and ends with a barrier, so that no two threads
// touch the same shared bytes between barriers with one of them writing. 2-d accesses give
// FlattenBuffer, Simplify and CommonSubexprElim their work.
PrimFunc generated_1000() {
  pb::FunctionBuilder f("generated_1000");
  pb::Var n = f.dim("n");
  pb::BufferRef A = f.arg_buffer("A", {n, 64}), B = f.arg_buffer("B", {n, 64});
  f.target(Target::cuda());
  pb::Var bx = f.launch_thread("blockIdx.x", n);    // 1 statement
  pb::Var tx = f.launch_thread("threadIdx.x", 64);  // 2
  std::vector<pb::BufferRef> S;
  for (int s = 0; s < 3; ++s) {
    S.push_back(f.alloc_buffer("S" + std::to_string(s), {64}, pb::f32, "shared.dyn"));
  }                                                    // 5
  for (const pb::BufferRef& s : S) s[tx] = A(bx, tx);  // 8
  f.sync_threads("shared.dyn");                        // 9
  constexpr int kPerRound = 11;
  constexpr int kRounds = (kStatements - 9 - 1) / kPerRound;
  static_assert(9 + kPerRound * kRounds + 1 == kStatements);
  for (int r = 0; r < kRounds; ++r) {
    const pb::BufferRef &read = S[r % 3], &write = S[(r + 1) % 3];
    pb::Var v = f.bind("v", A(bx, (tx + r) % 64) * 0.5 + read[(tx + 1) % 64]);  // 1
    f.bind("dead", tx * 7 + r);                                                 // 2
    write[tx] = v + write[tx];                                                  // 3
    f.if_then(tx < 32, [&] { B(bx, tx) = B(bx, tx) + read[tx + 32]; });         // 5
    f.if_then_else(
        v > 0.75, [&] { B(bx, tx) = B(bx, tx) * 0.5; }, [&] { B(bx, tx) = B(bx, tx) + v; });  // 8
    f.for_("k", 4, [&](pb::Var k) { B(bx, tx) = B(bx, tx) + A(bx, (tx + k) % 64) * 0.25; });  // 10
    f.sync_threads("shared.dyn");                                                             // 11
  }
  B(bx, tx) = B(bx, tx) + S[kRounds % 3][tx];  // 1000
  return f.finish();
}

int count_statements(const PrimFunc& func) {
  int count = 0;
  post_order_visit(func->body, [&](const Ref<Object>& node) {
    count += is_stmt_kind(node->kind()) && node->kind() != NodeKind::kSeqStmt;
  });
  return count;
}

struct Input {
  const char* name;
  PrimFunc (*make)();
};

const std::vector<Input>& inputs() {
  static const std::vector<Input> list = {
      {"vector_add_cpu", examples::vector_add_cpu}, {"vector_add_cuda", examples::vector_add_cuda},
      {"row_softmax", examples::row_softmax},       {"matmul_relu", examples::matmul_relu},
      {"generated_1000", generated_1000},
  };
  return list;
}

// Why the pipeline's result for `name` is wrong, or "" when it is right.
std::string check(const std::string& name, const IRModule& module) {
  const std::vector<std::string> pipeline = passes::default_pipeline();
  if (name == "generated_1000") {
    int count = count_statements(module->lookup(name));
    if (count != kStatements)
      return "the generated kernel has " + std::to_string(count) + " statements";
  }
  try {
    passes::run_passes(module, pipeline, {.verify_each = true});
  } catch (const Error& e) {
    return std::string("the pipeline failed: ") + e.what();
  }
  jit::emu::DifferentialOptions options;
  options.dims = {{"n", 3}, {"m", 3}};  // small grids: the interpreter runs every block
  jit::emu::DifferentialReport report = jit::emu::check_pipeline(module, pipeline, options);
  if (!report.ok() || report.num_checked() != 1 || report.num_skipped() != 0) {
    return "the interpreter's outputs differ or it could not run the function: " + report.str();
  }
  return "";
}

// Checks `name` once (Google Benchmark calls a benchmark function several times); false, with
// the run marked failed and skipped, when the check fails.
bool checked(benchmark::State& state, const std::string& name, const IRModule& module) {
  static std::map<std::string, std::string> verdicts;
  auto [it, first] = verdicts.try_emplace(name);
  if (first) {
    it->second = check(name, module);
    if (!it->second.empty()) {
      std::fprintf(stderr, "bench_pipeline: CHECK FAILED for %s: %s\n", name.c_str(),
                   it->second.c_str());
    }
  }
  if (it->second.empty()) return true;
  fail();
  state.SkipWithError(("CHECK FAILED: " + it->second).c_str());
  return false;
}

void BM_Pipeline(benchmark::State& state, const Input& input) {
  IRModule module = IRModule::from_function(input.name, input.make());
  if (!checked(state, input.name, module)) return;
  const std::vector<std::string> pipeline = passes::default_pipeline();
  for (auto _ : state) {
    IRModule out = passes::run_passes(module, pipeline);
    benchmark::DoNotOptimize(out.get());
  }
  int statements = count_statements(module->lookup(input.name));
  state.counters["statements"] = statements;
  state.counters["per_stmt"] = benchmark::Counter(
      statements, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// CPU time of the calling thread in seconds: unaffected by other processes on a shared machine.
double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void BM_PipelineByPass(benchmark::State& state, const Input& input) {
  IRModule module = IRModule::from_function(input.name, input.make());
  if (!checked(state, input.name, module)) return;
  const std::vector<std::string> pipeline = passes::default_pipeline();
  // Each step as run_passes runs it: a registered pass, or an invocation with arguments.
  std::vector<std::function<IRModule(const IRModule&)>> steps;
  for (const std::string& invocation : pipeline) {
    if (invocation.find('{') == std::string::npos) {
      const passes::Pass& pass = passes::get_pass(invocation);
      steps.push_back([&pass](const IRModule& m) { return pass.run(m, {}); });
    } else {
      steps.push_back([invocation](const IRModule& m) {
        return passes::run_passes(m, std::vector<std::string>{invocation});
      });
    }
  }
  std::vector<double> seconds(steps.size(), 0.0);
  for (auto _ : state) {
    IRModule m = module;
    for (size_t i = 0; i < steps.size(); ++i) {
      double start = thread_seconds();
      m = steps[i](m);
      seconds[i] += thread_seconds() - start;
    }
    benchmark::DoNotOptimize(m.get());
  }
  double sum = 0;
  for (double t : seconds) sum += t;
  for (size_t i = 0; i < pipeline.size(); ++i) {
    state.counters[pipeline[i]] = sum > 0 ? 100 * seconds[i] / sum : 0;
  }
}

BENCHMARK_CAPTURE(BM_Pipeline, vector_add_cpu, inputs()[0])->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Pipeline, vector_add_cuda, inputs()[1])->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Pipeline, row_softmax, inputs()[2])->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Pipeline, matmul_relu, inputs()[3])->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Pipeline, generated_1000, inputs()[4])->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PipelineByPass, vector_add_cpu, inputs()[0])->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PipelineByPass, vector_add_cuda, inputs()[1])->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PipelineByPass, row_softmax, inputs()[2])->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PipelineByPass, matmul_relu, inputs()[3])->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PipelineByPass, generated_1000, inputs()[4])->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace primjit::bench

PRIMJIT_BENCHMARK_MAIN()
