// Simplify's cost per statement, to show that it stays linear in the size of a function:
//   Golden          the largest module among the Simplify goldens (tests/passes/simplify*.tir;
//                   every section that parses and simplifies, the one with the most statements)
//   Generated/N     a generated function of N statements (1k, 4k, 16k) that gives the simplifier
//                   work in every statement: Binds `x_k = (x_{k-1} + c) * 1 + 0`, stores of
//                   `x % 16 * 4 // 4`, and loops `for j in range(4)` guarding a store to
//                   `A[(j * 8 + 3) // 8 + c]` with `j < 4`
// `per_stmt` is the time per statement of the input (statements other than sequences). Before
// timing, each benchmark checks once that Simplify did the work (the generated function keeps no
// floor division, no multiplication by one and no If; the result is well formed); a failure
// prints CHECK FAILED and makes the program exit 1.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "primjit/error.h"
#include "primjit/ir/function.h"
#include "primjit/ir/functor.h"
#include "primjit/ir/text.h"
#include "primjit/ir/verify.h"
#include "primjit/passes.h"

namespace {

namespace pj = primjit;

// Statements of the module, sequences not counted.
int64_t count_statements(const pj::IRModule& module) {
  int64_t n = 0;
  for (const auto& [gvar, func] : module->functions) {
    pj::post_order_visit(func->body, [&](const pj::Ref<pj::Object>& node) {
      if (pj::is_stmt_kind(node.kind()) && node.kind() != pj::NodeKind::kSeqStmt) ++n;
    });
  }
  return n;
}

const pj::passes::Pass& simplify() { return pj::passes::get_pass("Simplify"); }

struct Input {
  pj::IRModule module;
  int64_t statements = 0;
  std::string name;
};

// The largest section of the Simplify goldens that parses and simplifies (first in file and
// line order among equals).
Input largest_golden() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(PRIMJIT_SOURCE_DIR "/tests/passes")) {
    std::string name = entry.path().filename().string();
    if (name.rfind("simplify", 0) == 0 && entry.path().extension() == ".tir") {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  Input best;
  for (const std::filesystem::path& file : files) {
    std::ifstream in(file);
    std::vector<std::string> sections(1);
    std::vector<int> first_line = {1};
    int number = 0;
    for (std::string line; std::getline(in, line);) {
      ++number;
      if (line == "# -----") {
        sections.emplace_back();
        first_line.push_back(number + 1);
      } else {
        sections.back() += line + "\n";
      }
    }
    for (size_t i = 0; i < sections.size(); ++i) {
      try {
        pj::IRModule m = pj::parse(sections[i]);
        simplify().run(m, {});
        int64_t n = count_statements(m);
        if (n > best.statements) {
          best = {m, n, file.filename().string() + ":" + std::to_string(first_line[i])};
        }
      } catch (const pj::Error&) {
        // an error case of the golden file
      }
    }
  }
  return best;
}

// A function of at least `n` statements (see the header comment).
pj::IRModule generated(int64_t n) {
  using namespace primjit;
  const DataType i32 = DataType::Int(32), f32 = DataType::Float(32);
  Var handle = Var::make_handle("A_handle");
  Buffer a = Buffer::make("A", f32, {make_const(64)});
  Var param = Var::make("n", i32);
  std::vector<Stmt> body;
  Var prev = param;
  int64_t count = 0;
  for (int64_t k = 0; count < n; ++k) {
    switch (k % 3) {
      case 0: {
        Var x = Var::make("x_" + std::to_string(k), i32);
        Expr value = Add::make(
            Mul::make(Add::make(prev, make_const(static_cast<int>(k % 7))), make_const(1)),
            make_const(0));
        body.push_back(Bind::make(x, value));
        prev = x;
        count += 1;
        break;
      }
      case 1: {
        Expr v = FloorDiv::make(Mul::make(FloorMod::make(prev, make_const(16)), make_const(4)),
                                make_const(4));
        body.push_back(
            BufferStore::make(a, Cast::make(f32, v), {make_const(static_cast<int>(k % 64))}));
        count += 1;
        break;
      }
      default: {
        Var j = Var::make("j_" + std::to_string(k), i32);
        Expr index =
            FloorDiv::make(Add::make(Mul::make(j, make_const(8)), make_const(3)), make_const(8));
        Stmt store = BufferStore::make(a, FloatImm::make(f32, 1.0),
                                       {Add::make(index, make_const(static_cast<int>(k % 60)))});
        Stmt guarded = IfThenElse::make(LT::make(j, make_const(4)), store, Stmt());
        body.push_back(For::make(j, make_const(0), make_const(4), ForKind::kSerial, guarded));
        count += 3;
        break;
      }
    }
  }
  PrimFunc f = PrimFunc::make({handle, param}, {{handle, a}}, SeqStmt::make(std::move(body)));
  return IRModule::from_function("main", f);
}

// Why the result of the generated function is wrong, or "".
std::string check_generated(const pj::IRModule& out) {
  std::vector<std::string> errors = pj::well_formed_errors(out);
  if (!errors.empty()) return "result is not well formed: " + errors[0];
  std::string left;
  for (const auto& [gvar, func] : out->functions) {
    pj::post_order_visit(func->body, [&](const pj::Ref<pj::Object>& node) {
      if (node.kind() == pj::NodeKind::kFloorDiv) left = "a floor division";
      if (node.kind() == pj::NodeKind::kIfThenElse) left = "a guard j < 4 in range(4)";
      if (const auto* mul = node.as<pj::Mul>()) {
        std::optional<int64_t> c = pj::as_const_int(mul->b);
        if (c && *c == 1) left = "a multiplication by 1";
      }
    });
  }
  return left.empty() ? "" : "Simplify left " + left;
}

void time_simplify(benchmark::State& state, const pj::IRModule& input, int64_t statements) {
  for (auto _ : state) {
    pj::IRModule out = simplify().run(input, {});
    benchmark::DoNotOptimize(out.get());
  }
  state.counters["statements"] = static_cast<double>(statements);
  state.counters["per_stmt"] = benchmark::Counter(
      static_cast<double>(statements),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_SimplifyGolden(benchmark::State& state) {
  static const Input input = largest_golden();
  if (input.statements == 0) {
    primjit::bench::fail();
    state.SkipWithError("no Simplify golden section parses");
    return;
  }
  state.SetLabel(input.name);
  time_simplify(state, input.module, input.statements);
}

void BM_SimplifyGenerated(benchmark::State& state) {
  const int64_t n = state.range(0);
  pj::IRModule input = generated(n);
  static std::map<int64_t, std::string> verdict;  // checked once per size, outside the timing
  auto [it, first] = verdict.try_emplace(n);
  if (first) {
    it->second = check_generated(simplify().run(input, {}));
    if (!it->second.empty()) {
      primjit::bench::fail();
      std::fprintf(stderr, "bench_simplify: CHECK FAILED with %lld statements: %s\n",
                   static_cast<long long>(n), it->second.c_str());
    }
  }
  if (!it->second.empty()) state.SetLabel("CHECK FAILED");
  time_simplify(state, input, count_statements(input));
  state.SetComplexityN(n);
}

BENCHMARK(BM_SimplifyGolden)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SimplifyGenerated)
    ->Arg(1 << 10)
    ->Arg(1 << 12)
    ->Arg(1 << 14)
    ->Unit(benchmark::kMicrosecond)
    ->Complexity(benchmark::oN);

}  // namespace

PRIMJIT_BENCHMARK_MAIN()
