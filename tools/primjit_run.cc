// primjit-run: compile a function from IR text and call it on generated arguments.
//
//   primjit-run FILE [--func NAME] [--target=llvm|cuda|emu] [--policy=exact|dynamic|auto|bucketed]
//               --arg NAME=DTYPE[D0,D1,...]:INIT ... [--scalar NAME=VALUE]
//               [--print NAME] [--checksum NAME] [--bench N] [--bench-json FILE]
//               [--bench-bytes B] [--bench-flops F] [--emit=llvm|llvm-opt|asm]
//
// Arguments are matched to parameters by buffer or parameter name. INIT is zeros, ones, iota
// (0, 1, 2, ... in flat order) or random (seeded per argument: floats uniform in [0, 1),
// integers uniform in [0, 10), bools fair). --print writes a tensor's values one per line in
// flat order, --checksum their sum. With --policy=exact (the default) the shapes of the given
// arguments are compiled in as constants; dynamic keeps them symbolic (auto behaves as exact
// for one call).
//
// --scalar NAME=VALUE: an integer for integer and bool parameters, within the parameter's
// dtype; for floating parameters a decimal or hexadecimal number, or inf, -inf or nan (any
// case), passed on as IEEE infinity and NaN. A finite number beyond the dtype's largest finite
// value (1e39 for float32) is refused rather than silently made infinite.
//
// --bench N times N cached calls with Kernel::benchmark (after warm-up calls; CUDA events on
// the GPU) and prints their statistics, ending with "median of N calls: T us".
// --bench-json FILE writes the statistics as JSON (schema primjit-bench/1, see the README);
// without --bench, the number of calls is chosen by Kernel::benchmark's time budget.
// --bench-bytes and --bench-flops give the bytes and floating-point operations of one call,
// for GB/s and GFLOP/s.
//
// --emit=KIND prints the host code of the variant the call compiles, before the results: its
// LLVM IR before LLVM's optimizer (llvm), after it (llvm-opt) or the assembly (asm). It is the
// variant's PRIMJIT_DUMP file, written to a private directory that is removed afterwards;
// while dumping, the JIT compiles the variant rather than loading it from a cache.
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "jit/cuda/driver.h"
#include "primjit/abi.h"
#include "primjit/benchmark.h"
#include "primjit/dlpack.h"
#include "primjit/error.h"
#include "primjit/float_formats.h"
#include "primjit/ir.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/passes.h"
#include "primjit/version.h"
#include "tools/tool_main.h"

namespace {

namespace pj = primjit;

constexpr const char* kUsage =
    "usage: primjit-run FILE [--func NAME] [--target=llvm|cuda|emu] "
    "[--policy=exact|dynamic|auto|bucketed]\n"
    "                   --arg NAME=DTYPE[D0,D1,...]:zeros|ones|iota|random ...\n"
    "                   [--scalar NAME=VALUE] [--print NAME] [--checksum NAME]\n"
    "                   [--bench N] [--bench-json FILE] [--bench-bytes B] [--bench-flops F]\n"
    "                   [--emit=llvm|llvm-opt|asm]\n"
    "  --scalar NAME=V    an integer, or for floating parameters a number, inf, -inf or nan\n"
    "  --bench N          time N cached calls (after warm-up) and print their statistics\n"
    "  --bench-json FILE  write the statistics as JSON (without --bench: calls chosen by a\n"
    "                     time budget)\n"
    "  --bench-bytes B    bytes one call moves: report GB/s\n"
    "  --bench-flops F    floating-point operations of one call: report GFLOP/s\n"
    "  --emit=KIND        print the compiled variant's host code first: LLVM IR before (llvm)\n"
    "                     or after (llvm-opt) LLVM's optimizer, or its assembly (asm)\n"
    "  --version          print primjit's version\n";

struct ArgSpec {
  pj::DataType dtype;
  std::vector<int64_t> shape;
  std::string init;
};

struct Options {
  std::string file;
  std::string func;
  std::string target;  // default: the function's own target kind, else llvm
  std::string policy = "exact";
  std::map<std::string, ArgSpec> args;
  std::map<std::string, std::string> scalars;
  std::vector<std::string> print, checksum;
  int bench = 0;
  std::string bench_json;
  double bench_bytes = 0;
  double bench_flops = 0;
  std::string emit;  // llvm, llvm-opt or asm; empty: none
};

int64_t parse_int(const std::string& text, const std::string& what) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  PRIMJIT_USER_CHECK(used == text.size() && !text.empty())
      << what << ": '" << text << "' is not an integer";
  return v;
}

double parse_non_negative(const std::string& text, const std::string& what) {
  size_t used = 0;
  double v = -1;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  PRIMJIT_USER_CHECK(used == text.size() && !text.empty() && v >= 0)
      << what << ": '" << text << "' is not a number >= 0";
  return v;
}

// The largest finite value of floating dtype `t`.
double max_finite(pj::DataType t) {
  if (t.is_float() && t.bits() == 64) return std::numeric_limits<double>::max();
  if (t.is_float() && t.bits() == 32) return std::numeric_limits<float>::max();
  const pj::fp::Format& f = t.is_bfloat16()                                 ? pj::fp::kBFloat16
                            : t.code() == pj::DataType::Code::kFloat8E4M3FN ? pj::fp::kFloat8E4M3FN
                            : t.code() == pj::DataType::Code::kFloat8E5M2   ? pj::fp::kFloat8E5M2
                                                                            : pj::fp::kFloat16;
  return pj::fp::decode(f, f.max_bits);
}

// A --scalar value for a floating parameter of dtype `t`: a decimal or hexadecimal number, or
// inf, -inf or nan (any case), which are passed on as IEEE infinity and NaN. A finite number
// beyond the dtype's largest finite value is refused rather than silently made infinite.
double parse_float(const std::string& text, const std::string& what, pj::DataType t) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = text.empty() || std::isspace(static_cast<unsigned char>(text[0]))
                       ? 0
                       : std::strtod(begin, &end);
  PRIMJIT_USER_CHECK(end != nullptr && end != begin && *end == 0)
      << what << ": '" << text << "' is not a number for the " << t
      << " parameter; use e.g. 1.5, -2e3, inf, -inf or nan";
  PRIMJIT_USER_CHECK(!std::isfinite(v) ? errno != ERANGE : std::fabs(v) <= max_finite(t))
      << what << ": " << text << " is out of the range of " << t << " (largest finite value "
      << max_finite(t) << "); write inf or -inf for an infinity";
  return v;
}

// NAME=DTYPE[D0,D1,...]:INIT
std::pair<std::string, ArgSpec> parse_arg(const std::string& text) {
  size_t eq = text.find('=');
  size_t open = text.find('[', eq == std::string::npos ? 0 : eq);
  size_t close = text.find(']', open == std::string::npos ? 0 : open);
  PRIMJIT_USER_CHECK(eq != std::string::npos && eq > 0 && open != std::string::npos &&
                     close != std::string::npos && close + 1 < text.size() &&
                     text[close + 1] == ':')
      << "--arg '" << text << "' must look like NAME=DTYPE[D0,D1,...]:INIT, e.g. "
      << "A=float32[128,64]:random";
  ArgSpec spec;
  spec.dtype = pj::DataType::parse(text.substr(eq + 1, open - eq - 1));
  std::string dims = text.substr(open + 1, close - open - 1);
  std::stringstream stream(dims);
  for (std::string d; std::getline(stream, d, ',');) {
    int64_t v = parse_int(d, "--arg " + text.substr(0, eq) + " dimension");
    PRIMJIT_USER_CHECK(v >= 0) << "--arg " << text.substr(0, eq) << ": negative dimension " << v;
    spec.shape.push_back(v);
  }
  spec.init = text.substr(close + 2);
  PRIMJIT_USER_CHECK(spec.init == "zeros" || spec.init == "ones" || spec.init == "iota" ||
                     spec.init == "random")
      << "--arg " << text.substr(0, eq) << ": unknown INIT '" << spec.init
      << "'; use zeros, ones, iota or random";
  return {text.substr(0, eq), spec};
}

Options parse_args(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const std::string& flag) -> std::optional<std::string> {
      if (arg.rfind(flag + "=", 0) == 0) return arg.substr(flag.size() + 1);
      if (arg == flag) {
        PRIMJIT_USER_CHECK(i + 1 < argc) << flag << " needs a value\n" << kUsage;
        return std::string(argv[++i]);
      }
      return std::nullopt;
    };
    if (auto v = value("--func")) {
      o.func = *v;
    } else if (auto v = value("--target")) {
      PRIMJIT_USER_CHECK(*v == "llvm" || *v == "cuda" || *v == "emu")
          << "unknown --target '" << *v << "'; use llvm, cuda or emu";
      o.target = *v;
    } else if (auto v = value("--policy")) {
      PRIMJIT_USER_CHECK(*v == "exact" || *v == "dynamic" || *v == "auto" || *v == "bucketed")
          << "unknown --policy '" << *v << "'; use exact, dynamic, auto or bucketed";
      o.policy = *v;
    } else if (auto v = value("--arg")) {
      auto [name, spec] = parse_arg(*v);
      PRIMJIT_USER_CHECK(o.args.emplace(name, spec).second) << "--arg " << name << " given twice";
    } else if (auto v = value("--scalar")) {
      size_t eq = v->find('=');
      PRIMJIT_USER_CHECK(eq != std::string::npos && eq > 0)
          << "--scalar '" << *v << "' must look like NAME=VALUE";
      o.scalars[v->substr(0, eq)] = v->substr(eq + 1);
    } else if (auto v = value("--print")) {
      o.print.push_back(*v);
    } else if (auto v = value("--checksum")) {
      o.checksum.push_back(*v);
    } else if (auto v = value("--bench")) {
      o.bench = static_cast<int>(parse_int(*v, "--bench"));
      PRIMJIT_USER_CHECK(o.bench > 0) << "--bench needs a positive count";
    } else if (auto v = value("--bench-json")) {
      PRIMJIT_USER_CHECK(!v->empty()) << "--bench-json needs a file name";
      o.bench_json = *v;
    } else if (auto v = value("--bench-bytes")) {
      o.bench_bytes = parse_non_negative(*v, "--bench-bytes");
    } else if (auto v = value("--bench-flops")) {
      o.bench_flops = parse_non_negative(*v, "--bench-flops");
    } else if (auto v = value("--emit")) {
      PRIMJIT_USER_CHECK(*v == "llvm" || *v == "llvm-opt" || *v == "asm")
          << "unknown --emit '" << *v << "'; use llvm, llvm-opt or asm";
      o.emit = *v;
    } else if (arg == "-h" || arg == "--help") {
      std::cout << kUsage << pj::tools::kEnvironmentHelp;
      std::exit(0);
    } else if (arg == "--version") {
      std::cout << "primjit-run " << pj::version() << "\n";
      std::exit(0);
    } else if (!arg.empty() && arg[0] == '-' && arg != "-") {
      PRIMJIT_USER_ERROR() << "unknown option '" << arg << "'\n" << kUsage;
    } else {
      PRIMJIT_USER_CHECK(o.file.empty()) << "only one input file is accepted\n" << kUsage;
      o.file = arg;
    }
  }
  PRIMJIT_USER_CHECK(!o.file.empty()) << "no input file\n" << kUsage;
  return o;
}

// A host tensor of any primjit dtype with element-wise access by number.
class HostValues {
 public:
  HostValues(pj::DataType dtype, std::vector<int64_t> shape)
      : dtype_(dtype), tensor_(pj::Tensor::zeros(std::move(shape), dtype)) {}
  const pj::Tensor& tensor() const { return tensor_; }
  int64_t count() const { return tensor_.numel() * dtype_.lanes(); }

  void set(int64_t i, double v) {
    uint8_t* p = tensor_.data<uint8_t>() + i * dtype_.element_of().bytes();
    pj::DataType t = dtype_.element_of();
    auto put = [&](auto x) { std::memcpy(p, &x, sizeof(x)); };
    if (t.is_bool()) return put(static_cast<uint8_t>(v != 0));
    if (t.is_float()) {
      if (t.bits() == 16) return put(static_cast<_Float16>(v));
      if (t.bits() == 32) return put(static_cast<float>(v));
      return put(v);
    }
    if (t.is_bfloat16()) return put(pj::fp::float_to_bfloat16_bits(static_cast<float>(v)));
    if (t.is_float8()) {
      return put(static_cast<uint8_t>(pj::fp::encode(narrow_format(t), static_cast<float>(v))));
    }
    int64_t x = static_cast<int64_t>(v);
    switch (t.bits()) {
      case 8:
        return put(static_cast<int8_t>(x));
      case 16:
        return put(static_cast<int16_t>(x));
      case 32:
        return put(static_cast<int32_t>(x));
      default:
        return put(x);
    }
  }

  // The value as text: integers exactly, floats with enough digits to read back.
  std::string get(int64_t i) const {
    pj::DataType t = dtype_.element_of();
    if (t.is_bool()) return load<uint8_t>(i) != 0 ? "1" : "0";
    if (t.is_int()) return std::to_string(int_at(i));
    if (t.is_uint()) return std::to_string(uint_at(i));
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.9g", float_at(i));
    return buf;
  }

  double value(int64_t i) const {
    pj::DataType t = dtype_.element_of();
    if (t.is_bool()) return load<uint8_t>(i) != 0 ? 1 : 0;
    if (t.is_int()) return static_cast<double>(int_at(i));
    if (t.is_uint()) return static_cast<double>(uint_at(i));
    return float_at(i);
  }

  void fill(const std::string& init, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::uniform_int_distribution<int> small(0, 9);
    pj::DataType t = dtype_.element_of();
    for (int64_t i = 0; i < count(); ++i) {
      double v = init == "zeros"   ? 0
                 : init == "ones"  ? 1
                 : init == "iota"  ? static_cast<double>(i)
                 : t.is_floating() ? unit(rng)
                 : t.is_bool()     ? small(rng) % 2
                                   : small(rng);
      set(i, v);
    }
  }

 private:
  template <typename T>
  T load(int64_t i) const {
    T x;
    std::memcpy(&x, tensor_.data<uint8_t>() + i * dtype_.element_of().bytes(), sizeof(x));
    return x;
  }
  int64_t int_at(int64_t i) const {
    switch (dtype_.bits()) {
      case 8:
        return load<int8_t>(i);
      case 16:
        return load<int16_t>(i);
      case 32:
        return load<int32_t>(i);
      default:
        return load<int64_t>(i);
    }
  }
  uint64_t uint_at(int64_t i) const {
    switch (dtype_.bits()) {
      case 8:
        return load<uint8_t>(i);
      case 16:
        return load<uint16_t>(i);
      case 32:
        return load<uint32_t>(i);
      default:
        return load<uint64_t>(i);
    }
  }
  double float_at(int64_t i) const {
    pj::DataType t = dtype_.element_of();
    if (t.is_bfloat16()) return pj::fp::bfloat16_bits_to_float(load<uint16_t>(i));
    if (t.is_float8()) return pj::fp::decode(narrow_format(t), load<uint8_t>(i));
    if (t.bits() == 16) return static_cast<double>(load<_Float16>(i));
    if (t.bits() == 32) return load<float>(i);
    return load<double>(i);
  }
  static const pj::fp::Format& narrow_format(pj::DataType t) {
    return t.code() == pj::DataType::Code::kFloat8E4M3FN ? pj::fp::kFloat8E4M3FN
                                                         : pj::fp::kFloat8E5M2;
  }

  pj::DataType dtype_;
  pj::Tensor tensor_;
};

uint32_t seed_of(const std::string& name) {
  uint32_t h = 2166136261u;
  for (char c : name) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  return h;
}

pj::PrimFunc pick_function(const pj::IRModule& module, const std::string& wanted,
                           std::string* name) {
  if (!wanted.empty()) {
    *name = wanted;
    return module->lookup(wanted);
  }
  std::vector<std::string> public_names;
  for (const auto& [gvar, func] : module->functions) {
    if (!func->global_symbol().empty()) public_names.push_back(gvar->name);
  }
  PRIMJIT_USER_CHECK(public_names.size() == 1) << "the module has " << public_names.size()
                                               << " public functions; choose one with --func NAME";
  *name = public_names[0];
  return module->lookup(*name);
}

// --emit: the compiled variant's host code, through PRIMJIT_DUMP into a private directory of
// its own, removed again when done.
class EmitCapture {
 public:
  EmitCapture(const std::string& kind, const std::string& function) : kind_(kind) {
    for (const char* name : {"PRIMJIT_DUMP", "PRIMJIT_DUMP_IR"}) {
      const char* v = std::getenv(name);
      PRIMJIT_USER_CHECK(v == nullptr || *v == 0)
          << "--emit=" << kind << " and " << name << " both ask for dumps; unset " << name
          << ", or drop --emit and read the files " << name << " writes";
    }
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != 0 ? tmp : "/tmp") + "/primjit-emit-XXXXXX";
    PRIMJIT_USER_CHECK(mkdtemp(pattern.data()) != nullptr)
        << "--emit: cannot create a directory '" << pattern << "': " << std::strerror(errno)
        << "; set TMPDIR to a writable directory";
    dir_ = pattern;
    setenv("PRIMJIT_DUMP", kind.c_str(), 1);
    setenv("PRIMJIT_DUMP_DIR", dir_.c_str(), 1);
    file_ = dir_ + "/" + function + ".v0/" +
            (kind == "llvm"       ? "host.ll"
             : kind == "llvm-opt" ? "host.opt.ll"
                                  : "host.s");
  }
  ~EmitCapture() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  EmitCapture(const EmitCapture&) = delete;
  EmitCapture& operator=(const EmitCapture&) = delete;

  // The text, once the first call compiled the variant; later compiles dump nothing.
  std::string take() {
    unsetenv("PRIMJIT_DUMP");
    unsetenv("PRIMJIT_DUMP_DIR");
    std::ifstream in(file_);
    PRIMJIT_USER_CHECK(in.good()) << "--emit=" << kind_ << ": the call compiled no host code ('"
                                  << file_ << "' was not written)";
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  std::string kind_;
  std::string dir_;
  std::string file_;
};

int main_impl(int argc, char** argv) {
  Options o = parse_args(argc, argv);
  std::ifstream in(o.file);
  PRIMJIT_USER_CHECK(in.good()) << "cannot read '" << o.file << "'";
  std::stringstream text;
  text << in.rdbuf();
  pj::IRModule module = pj::parse(text.str(), o.file);
  std::string name;
  pj::PrimFunc func = pick_function(module, o.func, &name);

  if (o.target.empty()) o.target = func->target().defined() ? func->target()->kind : "llvm";
  pj::Target target = o.target == "cuda"  ? pj::Jit::default_target()
                      : o.target == "emu" ? pj::Target::emu()
                                          : pj::Target::llvm();
  PRIMJIT_USER_CHECK(target->kind == o.target)
      << "--target=cuda needs a GPU (a CUDA driver and a device); this machine has none. Use "
         "--target=emu to run the kernels in the interpreter";
  bool on_gpu = target->kind == "cuda";

  // Arguments, in parameter order, matched by buffer or parameter name.
  std::map<std::string, HostValues> tensors;
  std::map<std::string, pj::Tensor> device_copies;
  std::vector<pj::Arg> call_args;
  std::set<std::string> used;
  for (const pj::Var& param : func->params) {
    pj::Buffer buffer = func->buffer_of(param);
    if (buffer.defined()) {
      auto it = o.args.find(buffer->name);
      if (it == o.args.end()) it = o.args.find(param->name);
      PRIMJIT_USER_CHECK(it != o.args.end())
          << "no --arg for buffer parameter '" << buffer->name << "'; add e.g. --arg "
          << buffer->name << "=" << buffer->dtype << "[...]:random";
      used.insert(it->first);
      HostValues& t = tensors.emplace(buffer->name, HostValues(it->second.dtype, it->second.shape))
                          .first->second;
      t.fill(it->second.init, seed_of(it->first));
      if (on_gpu) {
        pj::Tensor& d = device_copies[buffer->name] = t.tensor().to({kDLCUDA, 0});
        call_args.emplace_back(d);
      } else {
        call_args.emplace_back(t.tensor());
      }
      continue;
    }
    auto it = o.scalars.find(param->name);
    PRIMJIT_USER_CHECK(it != o.scalars.end())
        << "no --scalar for parameter '" << param->name << "' (" << param.dtype() << ")";
    used.insert(it->first);
    const std::string what = "--scalar " + param->name;
    if (param.dtype().is_floating()) {
      call_args.emplace_back(parse_float(it->second, what, param.dtype()));
    } else if (param.dtype().is_bool()) {
      call_args.emplace_back(parse_int(it->second, what) != 0);
    } else {
      const int64_t v = parse_int(it->second, what);
      const pj::DataType t = param.dtype();
      const int64_t min = t.is_int() ? -t.max_int_value() - 1 : 0;
      PRIMJIT_USER_CHECK(t.is_uint() && t.bits() == 64 ? v >= 0
                                                       : v >= min && v <= t.max_int_value())
          << what << ": " << v << " does not fit in " << t << " (" << min << " to "
          << t.max_int_value() << ")";
      call_args.emplace_back(v);
    }
  }
  for (const auto& [n, spec] : o.args) {
    PRIMJIT_USER_CHECK(used.count(n))
        << "--arg " << n << " matches no parameter of '" << name << "'";
  }
  for (const auto& [n, v] : o.scalars) {
    PRIMJIT_USER_CHECK(used.count(n))
        << "--scalar " << n << " matches no parameter of '" << name << "'";
  }

  std::optional<EmitCapture> emit;
  if (!o.emit.empty()) {
    PRIMJIT_USER_CHECK(target->kind != "emu")
        << "--emit=" << o.emit << ": --target=emu runs in the interpreter and compiles no host "
        << "code; use --target=llvm";
    emit.emplace(o.emit, name);
  }
  pj::Jit jit;
  pj::KernelOptions options;
  options.target = target;
  options.policy = o.policy == "dynamic"    ? pj::Policy::kDynamic
                   : o.policy == "auto"     ? pj::Policy::kAuto
                   : o.policy == "bucketed" ? pj::Policy::kBucketed
                                            : pj::Policy::kExact;
  pj::Kernel kernel = jit.kernel(module, name, options);
  auto call = [&] {
    PJValue r = kernel.call(call_args);
    if (on_gpu) pj::jit::CudaDriver::get().synchronize();
    return r;
  };
  PJValue result = call();
  if (emit) std::cout << emit->take();
  for (auto& [n, d] : device_copies) {
    pj::Tensor back = d.to({kDLCPU, 0});
    std::memcpy(tensors.at(n).tensor().data<uint8_t>(), back.data<uint8_t>(), back.nbytes());
  }
  if (result.type_index == kPJInt || result.type_index == kPJBool) {
    std::cout << "result: " << result.v_int64 << "\n";
  } else if (result.type_index == kPJFloat) {
    std::printf("result: %.17g\n", result.v_float64);
  }

  auto tensor = [&](const std::string& n) -> HostValues& {
    auto it = tensors.find(n);
    PRIMJIT_USER_CHECK(it != tensors.end()) << "'" << n << "' is not a tensor argument";
    return it->second;
  };
  for (const std::string& n : o.print) {
    HostValues& t = tensor(n);
    for (int64_t i = 0; i < t.count(); ++i) std::cout << t.get(i) << "\n";
  }
  for (const std::string& n : o.checksum) {
    HostValues& t = tensor(n);
    double sum = 0;
    for (int64_t i = 0; i < t.count(); ++i) sum += t.value(i);
    std::printf("checksum %s: %.17g\n", n.c_str(), sum);
  }
  if (o.bench > 0 || !o.bench_json.empty()) {
    pj::BenchOptions bench;
    bench.reps = o.bench;
    bench.bytes = o.bench_bytes;
    bench.flops = o.bench_flops;
    pj::BenchResult r = kernel.benchmark(call_args, bench);
    std::cout << pj::to_string(r);
    std::printf("median of %lld calls: %.3f us\n", static_cast<long long>(r.device.count),
                r.device.median_ms * 1e3);
    if (!o.bench_json.empty()) {
      std::ofstream json(o.bench_json);
      json << pj::to_json(r);
      json.close();
      PRIMJIT_USER_CHECK(json.good()) << "--bench-json: cannot write '" << o.bench_json << "'";
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return primjit::tools::run_tool("primjit-run", argc, argv, main_impl);
}
