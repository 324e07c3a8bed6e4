// primjit_fuzz: the differential fuzzer. For random programs (program_generator.h) it checks
//   llvm-vs-emu   the compiled code and the reference interpreter compute the same bits on
//                 inputs with NaN, infinities, -0, extreme integers and ordinary values;
//   passes        every pass of the default pipeline (CommonSubexprElim included; FlattenBuffer,
//                 Simplify and RemoveNoOp must be in it) keeps the interpreter's result
//                 (emu::check_pipeline, on random, all-zero and all-one inputs);
//   round-trip    the printed text parses back to a structurally equal function.
// A failure prints the seed, what differs, and a minimized reproducer as text IR.
//
//   primjit_fuzz [--seed S] [--count N] [--seconds T] [--settled-before-semantics] [--no-minimize]
//                [--pass-work]
//
// --pass-work also counts the programs that each cleanup pass (run alone on the generated
// program) changes, to show that the generator gives them work.
//
// Stops after N programs or T seconds, whichever comes first (default: 200 programs). Ends with
// "fuzz: N programs, K failed" and the line "P passed, K failed"; exits 1 when any check failed.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "jit/emu/differential.h"
#include "primjit/error.h"
#include "primjit/ir/structural.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/passes.h"
#include "primjit/tensor.h"
#include "tests/fuzz/minimize.h"
#include "tests/fuzz/program_generator.h"

namespace primjit::fuzz {
namespace {

struct Inputs {
  std::vector<Tensor> tensors;  // I, J (int32), F, G (float32)
  int32_t n = 0;
  float x = 0;

  Inputs copy() const {
    Inputs c = *this;
    for (Tensor& t : c.tensors) {
      Tensor fresh = Tensor::zeros(t.shape(), t.dtype());
      std::memcpy(fresh.data<void>(), t.data<void>(), t.nbytes());
      t = fresh;
    }
    return c;
  }
};

Inputs make_inputs(uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x5DEECE66Dull);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  const int32_t ints[] = {0, 1, -1, 2, 7, -8, 15, 16, 100, -100, INT32_MAX, INT32_MIN};
  const float inf = std::numeric_limits<float>::infinity();
  const float floats[] = {0.0f,   -0.0f,  1.0f,  -1.5f,
                          0.5f,   3.0f,   1e30f, -1e-30f,
                          1e-40f, inf,    -inf,  std::numeric_limits<float>::quiet_NaN(),
                          2.5f,   100.25f};
  Inputs in;
  for (DataType t :
       {DataType::Int(32), DataType::Int(32), DataType::Float(32), DataType::Float(32)}) {
    Tensor tensor = Tensor::zeros({kExtent}, t);
    for (int i = 0; i < kExtent; ++i) {
      if (t.is_int()) {
        tensor.data<int32_t>()[i] = pick(3) == 0 ? ints[pick(12)] : pick(41) - 20;
      } else {
        tensor.data<float>()[i] = pick(3) == 0 ? floats[pick(14)] : (pick(2001) - 1000) / 64.0f;
      }
    }
    in.tensors.push_back(tensor);
  }
  in.n = ints[pick(12)];
  in.x = floats[pick(14)];
  return in;
}

// Bitwise equality, with every NaN equal to every NaN.
bool same_bits(const Tensor& a, const Tensor& b, int i, std::string* what) {
  if (a.dtype().is_int()) {
    int32_t x = a.data<int32_t>()[i], y = b.data<int32_t>()[i];
    if (x == y) return true;
    *what = std::to_string(x) + " vs " + std::to_string(y);
    return false;
  }
  float x = a.data<float>()[i], y = b.data<float>()[i];
  uint32_t bx, by;
  std::memcpy(&bx, &x, 4);
  std::memcpy(&by, &y, 4);
  if (bx == by || (std::isnan(x) && std::isnan(y))) return true;
  char text[96];
  std::snprintf(text, sizeof(text), "%.9g (0x%08x) vs %.9g (0x%08x)", x, bx, y, by);
  *what = text;
  return false;
}

// Runs `check` in a child process, so that a crash (a signal in compiled code) is a finding,
// not the end of the fuzzer; returns what it returned, or how it died. The parent stays
// single-threaded (it only generates and prints), so forking is safe.
std::string in_child(const std::function<std::string()>& check) {
  int fds[2];
  PRIMJIT_USER_CHECK(::pipe(fds) == 0) << "pipe: " << std::strerror(errno);
  pid_t pid = ::fork();
  PRIMJIT_USER_CHECK(pid >= 0) << "fork: " << std::strerror(errno);
  if (pid == 0) {
    ::close(fds[0]);
    std::string result;
    try {
      result = check();
    } catch (const std::exception& e) {
      result = std::string("internal error: ") + e.what();
    }
    for (size_t done = 0; done < result.size();) {
      ssize_t n = ::write(fds[1], result.data() + done, result.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string result;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof(buffer))) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    result.append(buffer, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    return std::string("crashed with signal ") + std::to_string(WTERMSIG(status)) + " (" +
           ::strsignal(WTERMSIG(status)) + ")";
  }
  return result;
}

// The three checks; each returns "" when it holds, else what differs.
const std::string kRefused = "\x01";
std::string llvm_vs_emu(const PrimFunc& f, const Inputs& in) {
  Jit jit(JitOptions{.cache_capacity = 4, .disk_cache = DiskCacheMode::kDisabled});
  Inputs outs[2] = {in.copy(), in.copy()};
  std::string errors[2];
  const Target targets[2] = {Target::llvm(), Target::emu()};
  for (int b = 0; b < 2; ++b) {
    try {
      Kernel k = jit.kernel(f, {.target = targets[b]});
      Inputs& o = outs[b];
      k(o.tensors[0], o.tensors[1], o.tensors[2], o.tensors[3], o.n, o.x);
    } catch (const Error& e) {
      errors[b] = e.what();
    }
  }
  if (errors[0].empty() != errors[1].empty()) {
    return "llvm " + (errors[0].empty() ? std::string("ran") : "failed: " + errors[0]) + "; emu " +
           (errors[1].empty() ? std::string("ran") : "failed: " + errors[1]);
  }
  // Both refused (an error, not a crash): they agree, but the program checked nothing.
  if (!errors[0].empty()) return kRefused + errors[0];
  const char* names[] = {"I", "J", "F", "G"};
  for (int t = 0; t < 4; ++t) {
    for (int i = 0; i < kExtent; ++i) {
      std::string what;
      if (!same_bits(outs[0].tensors[t], outs[1].tensors[t], i, &what)) {
        return std::string(names[t]) + "[" + std::to_string(i) + "]: llvm vs emu: " + what;
      }
    }
  }
  return "";
}

// The pipeline the "passes" check runs: the default one, with CommonSubexprElim whatever the
// default options say, and VersionLoops after FlattenBuffer as the JIT runs it for symbolic
// dimensions. The cleanup passes must be in it (run() checks).
std::vector<std::string> checked_pipeline() {
  passes::PipelineOptions options;
  options.common_subexpr_elim = true;
  std::vector<std::string> pipeline = passes::default_pipeline(options);
  auto flatten = std::find(pipeline.begin(), pipeline.end(), "FlattenBuffer");
  if (flatten != pipeline.end()) pipeline.insert(flatten + 1, "VersionLoops");
  return pipeline;
}
constexpr const char* kCleanupPasses[] = {"FlattenBuffer", "Simplify", "CommonSubexprElim",
                                          "RemoveNoOp"};

std::string passes_keep_results(const PrimFunc& f) {
  jit::emu::DifferentialReport r =
      jit::emu::check_pipeline(IRModule::from_function("main", f), checked_pipeline());
  if (!r.pipeline_error.empty()) return r.pipeline_error;
  if (const jit::emu::FunctionOutcome* bad = r.first_change()) {
    return "pass '" + bad->pass + "' changed the result: " + bad->detail;
  }
  return "";
}

std::string round_trip(const PrimFunc& f) {
  IRModule m = IRModule::from_function("main", f);
  std::string text = print(m);
  try {
    if (!structural_equal(parse(text), m)) return "the printed text parses to another function";
  } catch (const Error& e) {
    return std::string("the printed text does not parse: ") + e.what();
  }
  return "";
}

// What kind of failure a problem is, so that minimizing keeps the kind (a crash stays that
// crash; a mismatch does not turn into an out-of-bounds access).
std::string kind_of(const std::string& problem) {
  for (const char* kind : {"crashed with signal", "llvm vs emu", "emu failed: ", "llvm failed: ",
                           "changed the result", "parses to another", "does not parse"}) {
    size_t at = problem.find(kind);
    if (at == std::string::npos) continue;
    size_t end = problem.find_first_of(":(`", at + std::strlen(kind) + 1);
    return problem.substr(at, end == std::string::npos ? std::string::npos : end - at);
  }
  return problem.substr(0, 40);
}

int run(int argc, char** argv) {
  uint64_t seed = 1;
  long count = 200;
  double seconds = 0;
  bool minimize_failures = true;
  bool pass_work = false;
  Features features;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      PRIMJIT_USER_CHECK(i + 1 < argc) << a << " needs a value";
      return argv[++i];
    };
    if (a == "--seed") {
      seed = std::stoull(value());
    } else if (a == "--count") {
      count = std::stol(value());
    } else if (a == "--seconds") {
      seconds = std::stod(value());
      if (count == 200) count = std::numeric_limits<long>::max();
    } else if (a == "--settled-before-semantics") {
      // Only what every backend computed alike before docs/semantics.md existed.
      features = Features{false, false, false, false, true, true, false};
    } else if (a == "--no-minimize") {
      minimize_failures = false;
    } else if (a == "--pass-work") {
      pass_work = true;
    } else {
      std::cerr << "usage: primjit_fuzz [--seed S] [--count N] [--seconds T] "
                   "[--settled-before-semantics] "
                   "[--no-minimize] [--pass-work]\n";
      return 2;
    }
  }
  const std::vector<std::string> pipeline = checked_pipeline();
  for (const char* name : kCleanupPasses) {
    if (std::find(pipeline.begin(), pipeline.end(), name) == pipeline.end()) {
      std::cerr << "primjit_fuzz: the default pipeline lost " << name
                << "; the passes check must run it (edit checked_pipeline())\n";
      return 2;
    }
  }
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  long programs = 0, checks_passed = 0, failed = 0, refused = 0;
  long changed_by[std::size(kCleanupPasses)] = {};
  for (uint64_t s = seed; programs < count && (seconds <= 0 || elapsed() < seconds); ++s) {
    ++programs;
    PrimFunc f = generate_program(s, features);
    if (pass_work) {
      IRModule m = IRModule::from_function("main", f);
      for (size_t p = 0; p < std::size(kCleanupPasses); ++p) {
        IRModule out = passes::get_pass(kCleanupPasses[p]).run(m, {});
        changed_by[p] += !structural_equal(out, m);
      }
    }
    Inputs in = make_inputs(s);
    struct Check {
      const char* name;
      std::function<std::string(const PrimFunc&)> run;
    };
    const Check checks[] = {
        {"llvm-vs-emu", [&](const PrimFunc& g) { return llvm_vs_emu(g, in); }},
        {"passes", passes_keep_results},
        {"round-trip", round_trip},
    };
    for (const Check& c : checks) {
      std::string problem;
      try {
        problem = in_child([&] { return c.run(f); });
        if (problem.rfind(kRefused, 0) == 0) {
          ++refused;
          problem.clear();
        }
      } catch (const std::exception& e) {
        problem = std::string("internal error: ") + e.what();
      }
      if (problem.empty()) {
        ++checks_passed;
        continue;
      }
      ++failed;
      std::cout << "FAIL seed " << s << " check " << c.name << ": " << problem << std::endl;
      PrimFunc small = f;
      const std::string kind = kind_of(problem);
      if (minimize_failures) {
        small = minimize(f, [&](const PrimFunc& g) {
          try {
            std::string p = in_child([&] { return c.run(g); });
            return !p.empty() && p.rfind(kRefused, 0) != 0 && kind_of(p) == kind;
          } catch (const std::exception&) {
            return true;
          }
        });
        std::cout << "minimized: " << in_child([&] { return c.run(small); }) << "\n";
      }
      std::cout << "reproducer (inputs: primjit_fuzz --seed " << s << " --count 1):\n"
                << print(passes::run_passes(IRModule::from_function("main", small),
                                            std::vector<std::string>{"RemoveNoOp"}))
                << std::endl;
    }
  }
  std::cout << "fuzz: " << programs << " programs in " << static_cast<int>(elapsed())
            << " s, seeds " << seed << ".." << seed + programs - 1 << ", " << failed
            << " failed checks, " << refused << " refused by both backends with an error\n";
  if (pass_work) {
    std::cout << "programs changed by each cleanup pass alone:";
    for (size_t p = 0; p < std::size(kCleanupPasses); ++p) {
      std::cout << " " << kCleanupPasses[p] << " " << changed_by[p];
    }
    std::cout << "\n";
  }
  std::cout << checks_passed << " passed, " << failed << " failed\n";
  return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace primjit::fuzz

int main(int argc, char** argv) {
  try {
    return primjit::fuzz::run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "primjit_fuzz: " << e.what() << "\n";
    return 2;
  }
}
