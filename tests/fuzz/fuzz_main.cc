// primjit_fuzz: the differential fuzzer. For random programs (program_generator.h) it checks
//   llvm-vs-emu   fixed shapes: the compiled code and the reference interpreter compute the
//                 same bits on inputs with NaN, infinities, -0, subnormals, huge values,
//                 extreme integers and ordinary values; the math sinks M and M64 (inexact math
//                 results, never read back) within twice the op table's max_ulp;
//   shapes        symbolic shapes (one program in four): called with several shapes (0, 1, 15,
//                 16, 17, 32, 33, ...; one kernel per variant, called in turn with each, so
//                 kBucketed variants are shared by the shapes of a bucket), llvm under kExact,
//                 kDynamic and kBucketed and emu under kDynamic and kBucketed compute what emu
//                 under kExact computes (VersionLoops' fast and general paths, the bucketed
//                 variants' facts), with the same tolerance on the math sinks;
//   passes        every pass of the default pipeline (CommonSubexprElim included; FlattenBuffer,
//                 Simplify and RemoveNoOp must be in it), with VersionLoops, keeps the
//                 interpreter's result (emu::check_pipeline, on random, all-zero and all-one
//                 inputs; symbolic shapes at d = 17 and d = 32), the math sinks left out
//                 (DropSinkStores says why);
//   round-trip    the printed text parses back to a structurally equal function.
// A failure prints the seed, what differs, and a minimized reproducer as text IR, in the form
// of the corpus (tests/fuzz/corpus/README.md): a failure fixed is a file there, replayed by
// `--corpus DIR` (ctest fuzz_corpus).
//
//   primjit_fuzz [--seed S] [--count N] [--seconds T] [--settled-before-semantics] [--no-minimize]
//                [--pass-work] [--family fixed|symbolic] [--corpus DIR] [--print]
//
// --pass-work also counts the programs that each cleanup pass (run alone on the generated
// program) changes, to show that the generator gives them work. --print prints the programs
// (in the corpus' form) instead of checking them.
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
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "jit/emu/differential.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"
#include "primjit/ir/structural.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/passes.h"
#include "primjit/tensor.h"
#include "tests/fuzz/minimize.h"
#include "tests/fuzz/program_generator.h"

namespace primjit::fuzz {
namespace {

// The concrete values of the shape variables of a call (symbolic shapes; unused otherwise).
struct Shape {
  int64_t d = 0, e = 0;
};

struct Inputs {
  std::vector<std::string> names;
  std::vector<Tensor> tensors;  // every buffer parameter, in signature order
  int32_t n = 0;
  float x = 0;

  Inputs copy() const {
    Inputs c = *this;
    for (Tensor& t : c.tensors) {
      Tensor fresh = Tensor::zeros(t.shape(), t.dtype());
      if (t.nbytes() > 0) std::memcpy(fresh.data<void>(), t.data<void>(), t.nbytes());
      t = fresh;
    }
    return c;
  }
  std::vector<Arg> args() const {
    std::vector<Arg> out(tensors.begin(), tensors.end());
    out.emplace_back(n);
    out.emplace_back(x);
    return out;
  }
};

bool is_symbolic(const PrimFunc& f) {
  for (const Var& p : f->params) {
    Buffer b = f->buffer_of(p);
    if (!b.defined()) continue;
    for (const Expr& e : b->shape) {
      if (!as_const_int(e)) return true;
    }
  }
  return false;
}

// Inputs for `f`'s signature (buffers, then n and x) with shape variables d and e of `shape`.
Inputs make_inputs(uint64_t seed, const PrimFunc& f, Shape shape = {}) {
  std::mt19937_64 rng(seed ^ 0x5DEECE66Dull);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  const int32_t ints[] = {0, 1, -1, 2, 7, -8, 15, 16, 100, -100, INT32_MAX, INT32_MIN};
  const float inf = std::numeric_limits<float>::infinity();
  // Special values: NaN, infinities, zeros, subnormals (1e-40, the smallest), huge values,
  // and where math functions overflow or underflow (exp near 88.7 and -103.9) or reduce their
  // argument (sin of 1e5).
  const float floats[] = {0.0f,   -0.0f,   1.0f,     -1.5f,
                          0.5f,   3.0f,    1e30f,    -1e-30f,
                          1e-40f, inf,     -inf,     std::numeric_limits<float>::quiet_NaN(),
                          2.5f,   100.25f, 88.75f,   -103.5f,
                          1e5f,   3.4e38f, 1.4e-45f, -0.75f};
  constexpr int kFloats = static_cast<int>(std::size(floats));
  Inputs in;
  for (const Var& p : f->params) {
    Buffer b = f->buffer_of(p);
    if (!b.defined()) continue;
    std::vector<int64_t> dims;
    for (const Expr& e : b->shape) {
      if (std::optional<int64_t> c = as_const_int(e)) {
        dims.push_back(*c);
      } else {
        const auto* v = e.as<VarNode>();
        PRIMJIT_USER_CHECK(v != nullptr && (v->name == "d" || v->name == "e"))
            << "primjit_fuzz: buffer " << b->name << " has a shape other than constants, d and e";
        dims.push_back(v->name == "d" ? shape.d : shape.e);
      }
    }
    Tensor tensor = Tensor::zeros(dims, b->dtype);
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      if (b->dtype.is_int()) {
        tensor.data<int32_t>()[i] = pick(3) == 0 ? ints[pick(12)] : pick(41) - 20;
      } else {
        const float v = pick(3) == 0 ? floats[pick(kFloats)] : (pick(2001) - 1000) / 64.0f;
        if (b->dtype.bits() == 64) {
          tensor.data<double>()[i] = v;
        } else {
          tensor.data<float>()[i] = v;
        }
      }
    }
    in.names.push_back(b->name);
    in.tensors.push_back(tensor);
  }
  in.n = ints[pick(12)];
  in.x = floats[pick(kFloats)];
  return in;
}

// The shapes a symbolic program is called with, in order: a multiple of 16 above the bucket
// limit (VersionLoops' fast path), a non-multiple above it, a small one (0, 1, 15, 16, 5: each
// its own bucket) and any, in a random order; e small (0 to 3, 16, 17).
std::vector<Shape> shapes_for(uint64_t seed) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 1);
  auto one_of = [&](std::initializer_list<int64_t> values) {
    return values.begin()[rng() % values.size()];
  };
  auto e = [&] { return one_of({0, 1, 2, 3, 3, 2, 16, 17}); };
  std::vector<Shape> shapes = {{one_of({32, 48, 64}), e()},
                               {one_of({17, 31, 33, 50}), e()},
                               {one_of({0, 1, 15, 16, 5}), e()},
                               {one_of({0, 1, 15, 16, 17, 32, 33, 48}), e()}};
  std::shuffle(shapes.begin(), shapes.end(), rng);
  return shapes;
}

// The distance in ulp of two floats of `bits` bits, given as their bits (adjacent floats are 1
// apart; +0 and -0 are 0 apart, the largest finite float and infinity 1).
int64_t ulp_distance(uint64_t a, uint64_t b, int bits) {
  const uint64_t sign = uint64_t{1} << (bits - 1);
  auto ordered = [&](uint64_t u) {
    return (u & sign) ? -static_cast<int64_t>(u & ~sign) : static_cast<int64_t>(u);
  };
  const int64_t x = ordered(a), y = ordered(b);
  return x > y ? x - y : y - x;
}

// Bitwise equality, with every NaN equal to every NaN; for `ulp` > 0, floats within that many
// ulp of each other.
bool same_value(const Tensor& a, const Tensor& b, int64_t i, int ulp, std::string* what) {
  if (a.dtype().is_int()) {
    int32_t x = a.data<int32_t>()[i], y = b.data<int32_t>()[i];
    if (x == y) return true;
    *what = std::to_string(x) + " vs " + std::to_string(y);
    return false;
  }
  const int bits = a.dtype().bits();
  double x, y;
  uint64_t bx = 0, by = 0;
  if (bits == 64) {
    x = a.data<double>()[i];
    y = b.data<double>()[i];
    std::memcpy(&bx, &x, 8);
    std::memcpy(&by, &y, 8);
  } else {
    float fx = a.data<float>()[i], fy = b.data<float>()[i];
    x = fx;
    y = fy;
    uint32_t ux, uy;
    std::memcpy(&ux, &fx, 4);
    std::memcpy(&uy, &fy, 4);
    bx = ux;
    by = uy;
  }
  if (bx == by || (std::isnan(x) && std::isnan(y))) return true;
  const bool nan = std::isnan(x) || std::isnan(y);
  if (ulp > 0 && !nan && ulp_distance(bx, by, bits) <= ulp) return true;
  char text[160];
  std::snprintf(text, sizeof(text), "%.17g (0x%llx) vs %.17g (0x%llx)", x,
                static_cast<unsigned long long>(bx), y, static_cast<unsigned long long>(by));
  *what = text;
  if (ulp > 0 && !nan) {
    *what += ", " + std::to_string(ulp_distance(bx, by, bits)) + " ulp apart (bound " +
             std::to_string(ulp) + ")";
  }
  return false;
}

// "" when `got` holds what `want` holds (the math sinks within `sink_ulp`), else the first
// difference.
std::string compare(const Inputs& got, const Inputs& want, int sink_ulp, const std::string& who) {
  for (size_t t = 0; t < want.tensors.size(); ++t) {
    const int ulp = is_math_sink(want.names[t]) ? sink_ulp : 0;
    for (int64_t i = 0; i < want.tensors[t].numel(); ++i) {
      std::string what;
      if (!same_value(got.tensors[t], want.tensors[t], i, ulp, &what)) {
        return want.names[t] + "[" + std::to_string(i) + "]: " + who + ": " + what;
      }
    }
  }
  return "";
}

// Calls `k` on `io` in place; "" or the error.
std::string call(const Kernel& k, Inputs* io) {
  try {
    std::vector<Arg> args = io->args();
    k.call(args);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
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

// The checks; each returns "" when it holds, else what differs.
const std::string kRefused = "\x01";
std::string llvm_vs_emu(const PrimFunc& f, uint64_t seed) {
  Jit jit(JitOptions{.cache_capacity = 4, .disk_cache = DiskCacheMode::kDisabled});
  const Inputs in = make_inputs(seed, f);
  Inputs outs[2] = {in.copy(), in.copy()};
  std::string errors[2];
  const Target targets[2] = {Target::llvm(), Target::emu()};
  for (int b = 0; b < 2; ++b) {
    try {
      errors[b] = call(jit.kernel(f, {.target = targets[b]}), &outs[b]);
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
  return compare(outs[0], outs[1], math_sink_tolerance(f), "llvm vs emu");
}

// Symbolic shapes: every variant against emu under kExact, shape after shape.
std::string shapes_agree(const PrimFunc& f, uint64_t seed) {
  Jit jit(JitOptions{.cache_capacity = 64, .disk_cache = DiskCacheMode::kDisabled});
  struct Variant {
    const char* name;
    Target target;
    Policy policy;
  };
  const Variant variants[] = {{"llvm exact", Target::llvm(), Policy::kExact},
                              {"llvm dynamic", Target::llvm(), Policy::kDynamic},
                              {"llvm bucketed", Target::llvm(), Policy::kBucketed},
                              {"emu dynamic", Target::emu(), Policy::kDynamic},
                              {"emu bucketed", Target::emu(), Policy::kBucketed}};
  const Kernel reference = jit.kernel(f, {.target = Target::emu(), .policy = Policy::kExact});
  std::vector<Kernel> kernels;
  for (const Variant& v : variants) {
    kernels.push_back(jit.kernel(f, {.target = v.target, .policy = v.policy}));
  }
  const int sink_ulp = math_sink_tolerance(f);
  std::string refusal;
  bool first = true;
  for (const Shape& shape : shapes_for(seed)) {
    const std::string at = "d=" + std::to_string(shape.d) + " e=" + std::to_string(shape.e) + ": ";
    const Inputs in = make_inputs(seed, f, shape);
    Inputs want = in.copy();
    const std::string ref_error = call(reference, &want);
    // llvm under kExact compiles a variant per shape, and symbolic shapes change nothing in it:
    // the first shape checks it.
    for (size_t k = first ? 0 : 1; k < kernels.size(); ++k) {
      const std::string name = variants[k].name;
      Inputs got = in.copy();
      const std::string error = call(kernels[k], &got);
      if (error.empty() != ref_error.empty()) {
        return at + (error.empty() ? name + " ran; emu exact failed: " + ref_error
                                   : name + " failed: " + error + "; emu exact ran");
      }
      if (!error.empty()) {
        refusal = error;
        continue;
      }
      std::string diff = compare(got, want, sink_ulp, name + " vs emu exact");
      if (!diff.empty()) return at + diff;
    }
    first = false;
  }
  return refusal.empty() ? "" : kRefused + refusal;
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

// The passes check leaves out the stores to the math sinks. LowerVectorReductions reassociates
// float reductions (docs/semantics.md), which the check accepts within float32's tolerance; a
// value computed from such a result can differ by more in a sink: 1 ulp of float32 cast to
// float64 is far beyond float64's tolerance (seed 5159 of the symbolic programs), and a math
// function amplifies its argument's difference (exp by the argument). llvm-vs-emu and shapes
// compare the sinks on the lowered program, in which both run the same order.
class DropSinkStores : public StmtExprMutator {
 public:
  Stmt mutate(const BufferStore* op) override {
    if (is_math_sink(op->buffer->name)) return Evaluate::make(make_const(0));
    return StmtExprMutator::mutate(op);
  }
};

std::string passes_keep_results(const PrimFunc& program) {
  const PrimFunc f = DropSinkStores().mutate_function(program);
  // Symbolic shapes: VersionLoops' general path (d = 17) and fast path (d = 32).
  std::vector<std::map<std::string, int64_t>> dims = {{}};
  if (is_symbolic(f)) dims = {{{"d", 17}, {"e", 3}}, {{"d", 32}, {"e", 2}}};
  for (const auto& values : dims) {
    jit::emu::DifferentialOptions options;
    options.dims = values;
    jit::emu::DifferentialReport r =
        jit::emu::check_pipeline(IRModule::from_function("main", f), checked_pipeline(), options);
    if (!r.pipeline_error.empty()) return r.pipeline_error;
    if (const jit::emu::FunctionOutcome* bad = r.first_change()) {
      return "pass '" + bad->pass + "' changed the result: " + bad->detail;
    }
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
  for (const char* kind :
       {"crashed with signal", "llvm vs emu", "emu failed: ", "llvm failed: ", "changed the result",
        "parses to another", "does not parse", "vs emu exact", " failed: "}) {
    size_t at = problem.find(kind);
    if (at == std::string::npos) continue;
    size_t end = problem.find_first_of(":(`", at + std::strlen(kind) + 1);
    return problem.substr(at, end == std::string::npos ? std::string::npos : end - at);
  }
  return problem.substr(0, 40);
}

struct Check {
  const char* name;
  std::function<std::string(const PrimFunc&)> run;
};

// The checks of a program; `seed` picks its inputs (and shapes).
std::vector<Check> checks_for(const PrimFunc& f, uint64_t seed) {
  Check backends =
      is_symbolic(f)
          ? Check{"shapes", [seed](const PrimFunc& g) { return shapes_agree(g, seed); }}
          : Check{"llvm-vs-emu", [seed](const PrimFunc& g) { return llvm_vs_emu(g, seed); }};
  return {backends, {"passes", passes_keep_results}, {"round-trip", round_trip}};
}

// Runs `c` on `f` in a child: "" when it holds or both backends refused (counted).
std::string run_check(const Check& c, const PrimFunc& f, long* refused) {
  try {
    std::string problem = in_child([&] { return c.run(f); });
    if (problem.rfind(kRefused, 0) == 0) {
      ++*refused;
      return "";
    }
    return problem;
  } catch (const std::exception& e) {
    return std::string("internal error: ") + e.what();
  }
}

// The corpus: text IR files, each with a line "# seed: S" (the seed whose inputs and shapes
// it runs on), every one of whose checks must hold (refusing to run fails). Returns the number
// of failed checks.
long replay_corpus(const std::string& dir, long* passed) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".tir") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  PRIMJIT_USER_CHECK(!files.empty()) << "primjit_fuzz --corpus: no .tir file in " << dir;
  long failed = 0, refused = 0;
  for (const auto& path : files) {
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf();
    const std::string s = text.str();
    size_t at = s.find("# seed: ");
    PRIMJIT_USER_CHECK(at != std::string::npos)
        << path.string() << ": a corpus file needs a line '# seed: S' (the inputs' seed)";
    const uint64_t seed = std::stoull(s.substr(at + 8));
    PrimFunc f = parse(s, path.string())->lookup("main");
    for (const Check& c : checks_for(f, seed)) {
      const long refused_before = refused;
      std::string problem = run_check(c, f, &refused);
      // A corpus program must run: one that every backend refuses checks nothing.
      if (refused != refused_before) problem = "every backend refused it";
      if (problem.empty()) {
        ++*passed;
        continue;
      }
      ++failed;
      std::cout << "FAIL " << path.filename().string() << " check " << c.name << ": " << problem
                << std::endl;
    }
  }
  std::cout << "corpus: " << files.size() << " programs, " << failed << " failed checks\n";
  return failed;
}

int run(int argc, char** argv) {
  uint64_t seed = 1;
  long count = 200;
  double seconds = 0;
  bool minimize_failures = true;
  bool pass_work = false;
  bool print_only = false;
  std::string family, corpus;
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
      features = Features{false, false, false, false, true, true, false, false};
    } else if (a == "--no-minimize") {
      minimize_failures = false;
    } else if (a == "--pass-work") {
      pass_work = true;
    } else if (a == "--print") {
      print_only = true;
    } else if (a == "--family") {
      family = value();
      if (family != "fixed" && family != "symbolic") {
        std::cerr << "primjit_fuzz: --family is fixed or symbolic, not '" << family << "'\n";
        return 2;
      }
    } else if (a == "--corpus") {
      corpus = value();
    } else {
      std::cerr << "usage: primjit_fuzz [--seed S] [--count N] [--seconds T] "
                   "[--settled-before-semantics] [--no-minimize] [--pass-work] "
                   "[--family fixed|symbolic] [--corpus DIR] [--print]\n";
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
  if (!corpus.empty()) {
    long passed = 0;
    long failed = replay_corpus(corpus, &passed);
    std::cout << passed << " passed, " << failed << " failed\n";
    return failed == 0 ? 0 : 1;
  }
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  long programs = 0, symbolic = 0, checks_passed = 0, failed = 0, refused = 0;
  long changed_by[std::size(kCleanupPasses)] = {};
  for (uint64_t s = seed; programs < count && (seconds <= 0 || elapsed() < seconds); ++s) {
    // One seed in four is a program with symbolic shapes (they compile several variants each).
    const bool sym = family.empty() ? s % 4 == 3 : family == "symbolic";
    PrimFunc f = sym ? generate_symbolic_program(s, features) : generate_program(s, features);
    ++programs;
    symbolic += sym;
    if (print_only) {
      std::cout << "# seed: " << s << "\n" << print(f) << "\n";
      continue;
    }
    if (pass_work) {
      IRModule m = IRModule::from_function("main", f);
      for (size_t p = 0; p < std::size(kCleanupPasses); ++p) {
        IRModule out = passes::get_pass(kCleanupPasses[p]).run(m, {});
        changed_by[p] += !structural_equal(out, m);
      }
    }
    for (const Check& c : checks_for(f, s)) {
      std::string problem = run_check(c, f, &refused);
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
      std::cout << "reproducer (primjit_fuzz --seed " << s << " --count 1"
                << (family.empty() ? "" : " --family " + family) << "; as a corpus file):\n"
                << "# seed: " << s << "\n"
                << print(passes::run_passes(IRModule::from_function("main", small),
                                            std::vector<std::string>{"RemoveNoOp"}))
                << std::endl;
    }
  }
  std::cout << "fuzz: " << programs << " programs (" << symbolic << " with symbolic shapes) in "
            << static_cast<int>(elapsed()) << " s, seeds " << seed << ".." << seed + programs - 1
            << ", " << failed << " failed checks, " << refused
            << " refused by both backends with an error\n";
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
