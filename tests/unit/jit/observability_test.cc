// What a Jit tells its user: the info line of every variant (its reason, by shape variable,
// and the time of each stage), one line per disk cache hit, PRIMJIT_DUMP's files, and
// Jit::stats with its JSON form.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "examples/kernels.h"
#include "ir/dump_config.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/log.h"
#include "primjit/tensor.h"
#include "tests/unit/jit/jit_test_util.h"
#include "tests/unit/test_util.h"

namespace primjit {
namespace {

namespace fs = std::filesystem;

using test::LogLines;
using test::Pair;
using test::scale_function;
using test::TempDir;

// Sets environment variables while alive.
class Env {
 public:
  Env(std::initializer_list<std::pair<const char*, std::string>> values) {
    for (const auto& [name, value] : values) {
      names_.push_back(name);
      setenv(name, value.c_str(), 1);
    }
  }
  ~Env() {
    for (const char* name : names_) unsetenv(name);
  }

 private:
  std::vector<const char*> names_;
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A JSON text of nested objects whose values are numbers (what Jit::stats prints), as its
// numbers by dotted path ("hits.memory"); nullopt for anything that is not strict JSON of that
// shape (trailing commas, NaN, leading zeros, duplicate keys, text after the value).
class JsonNumbers {
 public:
  static std::optional<std::map<std::string, double>> read(std::string_view text) {
    JsonNumbers reader(text);
    std::map<std::string, double> numbers;
    if (!reader.value("", &numbers)) return std::nullopt;
    reader.space();
    if (reader.pos_ != text.size()) return std::nullopt;
    return numbers;
  }

 private:
  explicit JsonNumbers(std::string_view text) : text_(text) {}

  void space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\r' || text_[pos_] == '\n')) {
      ++pos_;
    }
  }
  bool eat(char c) {
    space();
    if (pos_ >= text_.size() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  bool key(std::string* out) {
    if (!eat('"')) return false;
    size_t end = text_.find('"', pos_);
    if (end == std::string_view::npos) return false;
    *out = std::string(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    for (char c : *out) {
      if (c == '\\' || static_cast<unsigned char>(c) < 0x20) return false;  // not in our keys
    }
    return true;
  }
  bool value(const std::string& path, std::map<std::string, double>* numbers) {
    if (eat('{')) {
      if (eat('}')) return true;
      do {
        std::string name;
        if (!key(&name) || !eat(':') || !value(path.empty() ? name : path + "." + name, numbers)) {
          return false;
        }
      } while (eat(','));
      return eat('}');
    }
    static const std::regex kNumber(R"(-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?)");
    std::match_results<std::string_view::const_iterator> match;
    if (path.empty() || !std::regex_search(text_.begin() + pos_, text_.end(), match, kNumber,
                                           std::regex_constants::match_continuous)) {
      return false;
    }
    pos_ += static_cast<size_t>(match.length());
    return numbers->emplace(path, std::stod(match.str())).second;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

std::optional<std::map<std::string, double>> json_numbers(std::string_view text) {
  return JsonNumbers::read(text);
}

// m rows of n: two shape variables, n shared by nothing else, m by both buffers.
PrimFunc row_sum_function() {
  return parse(R"(
@T.prim_func
def row_sum(a: T.handle, b: T.handle):
    T.func_attr({"target": T.target("llvm")})
    m = T.int32()
    n = T.int32()
    A = T.match_buffer(a, (m, n), "float32")
    B = T.match_buffer(b, (m, 4), "float32")
    for i in range(m):
        B[i, 0] = T.float32(0)
        for j in range(n):
            B[i, 0] = B[i, 0] + A[i, j]
)")
      ->lookup("row_sum");
}

const char* const kStages =
    R"(in [0-9]+\.[0-9]{3} ms \[passes [0-9]+\.[0-9]{3}, host codegen [0-9]+\.[0-9]{3}, )"
    R"(device codegen 0\.000, nvrtc 0\.000, load 0\.000, disk [0-9]+\.[0-9]{3} ms\])";

TEST(Observability, CompileLineGivesTheReasonByShapeVariableAndStageTimes) {
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel k = jit.kernel(row_sum_function());
  LogLines info(LogLevel::kInfo);
  auto call = [&](int64_t m, int64_t n, int64_t cols) {
    Tensor a = Tensor::zeros({m, n}, DataType::Float(32));
    Tensor b = Tensor::zeros({m, cols}, DataType::Float(32));
    k(a, b);
  };
  call(2, 3, 4);
  call(2, 3, 4);  // a hit: no line
  call(2, 5, 4);  // n changed: A.shape[1]
  call(6, 5, 4);  // m changed: A.shape[0] and B.shape[0], named once
  std::vector<std::string> lines = info.lines();
  ASSERT_EQ(lines.size(), 3u);
  std::string prefix = "kernel 'row_sum': compiled a variant ";
  EXPECT_TRUE(std::regex_match(lines[0], std::regex(prefix + R"(\(first call\) )" + kStages)))
      << lines[0];
  EXPECT_TRUE(std::regex_match(lines[1], std::regex(prefix + R"(\(n: 3 -> 5\) )" + kStages)))
      << lines[1];
  EXPECT_TRUE(std::regex_match(lines[2], std::regex(prefix + R"(\(m: 2 -> 6\) )" + kStages)))
      << lines[2];
  EXPECT_EQ(k.stats().reasons, (std::vector<std::string>{"first call", "n: 3 -> 5", "m: 2 -> 6"}));
}

TEST(Observability, ADimensionThatIsNotAVariableIsNamedByItsBuffer) {
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel k = jit.kernel(parse(R"(
@T.prim_func
def copy(a: T.handle, b: T.handle, n: T.int32):
    T.func_attr({"target": T.target("llvm")})
    A = T.match_buffer(a, (n * 2,), "float32")
    B = T.match_buffer(b, (n * 2,), "float32")
    for i in range(n * 2):
        B[i] = A[i]
)")
                            ->lookup("copy"));
  for (int64_t n : {2, 4}) {
    Pair p(2 * n);
    k(p.a, p.b, n);
    for (int64_t i = 0; i < 2 * n; ++i) ASSERT_EQ(p.b.data<float>()[i], p.a.data<float>()[i]);
  }
  EXPECT_EQ(k.stats().reasons,
            (std::vector<std::string>{"first call", "A.shape[0]: 4 -> 8, B.shape[0]: 4 -> 8"}));
}

TEST(Observability, ADiskCacheHitIsOneLineWithItsTime) {
  TempDir dir("primjit_observe_disk");
  JitOptions options{.disk_cache = DiskCacheMode::kEnabled, .cache_dir = dir.str()};
  Pair p(8);
  {
    Jit jit(options);
    jit.kernel(scale_function())(p.a, p.b, 2.0f);
  }
  Jit jit(options);
  Kernel k = jit.kernel(scale_function());
  LogLines info(LogLevel::kInfo);
  k(p.a, p.b, 3.0f);
  p.expect_scaled(3.0f);
  std::vector<std::string> lines = info.lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(std::regex_match(
      lines[0], std::regex(R"(kernel 'scale': loaded a variant from the disk cache \(first call\) )"
                           R"(in [0-9]+\.[0-9]{3} ms \[passes 0\.000, host codegen 0\.000, )"
                           R"(device codegen 0\.000, nvrtc 0\.000, load 0\.000, )"
                           R"(disk [0-9]+\.[0-9]{3} ms\])")))
      << lines[0];
  JitStats s = jit.stats();
  EXPECT_EQ(s.compiles, 0u);
  EXPECT_EQ(s.disk_hits, 1u);
  EXPECT_GT(s.compile.disk_ms, 0);
  EXPECT_GT(s.host_code_bytes, 0u);  // loaded code counts too
}

TEST(Observability, DumpWritesEachRequestedStageOfAVariant) {
  TempDir dir("primjit_observe_dump");
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel k = jit.kernel(scale_function());
  {
    Env env{{"PRIMJIT_DUMP", "ir,llvm,llvm-opt,asm"}, {"PRIMJIT_DUMP_DIR", dir.str()}};
    Pair p(8);
    k(p.a, p.b, 2.0f);
    p.expect_scaled(2.0f);
  }
  fs::path v0 = dir.path() / "scale.v0";
  std::string input = read_file(v0 / "00_input.tir");
  EXPECT_NE(input.find("def scale("), std::string::npos) << input;
  EXPECT_NE(input.find("8"), std::string::npos) << "specialized for n = 8: " << input;
  bool after_packed_api = false;
  for (const auto& e : fs::directory_iterator(v0)) {
    after_packed_api |= e.path().filename().string().ends_with("_MakePackedAPI.tir");
  }
  EXPECT_TRUE(after_packed_api);
  std::string ir = read_file(v0 / "host.ll");
  std::string optimized = read_file(v0 / "host.opt.ll");
  std::string assembly = read_file(v0 / "host.s");
  EXPECT_NE(ir.find("define "), std::string::npos) << ir;
  EXPECT_NE(optimized.find("define "), std::string::npos) << optimized;
  EXPECT_NE(ir, optimized);  // before and after LLVM's optimizer
  EXPECT_NE(assembly.find(".text"), std::string::npos) << assembly;
  EXPECT_NE(assembly.find("ret"), std::string::npos) << assembly;
  EXPECT_FALSE(fs::exists(v0 / "device.cu"));  // not asked for (and no kernels)
  // Nothing is dumped when PRIMJIT_DUMP is unset again.
  Pair p16(16);
  k(p16.a, p16.b, 1.0f);
  EXPECT_FALSE(fs::exists(dir.path() / "scale.v1"));
}

TEST(Observability, DumpIrKeepsWorkingAsAnAlias) {
  TempDir dir("primjit_observe_dump_ir");
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel k = jit.kernel(scale_function());
  {
    Env env{{"PRIMJIT_DUMP_IR", dir.str()}};
    Pair p(8);
    k(p.a, p.b, 2.0f);
  }
  EXPECT_TRUE(fs::exists(dir.path() / "scale.v0" / "00_input.tir"));
  EXPECT_FALSE(fs::exists(dir.path() / "scale.v0" / "host.ll"));
}

TEST(Observability, DumpDoesNotReadTheCaches) {
  TempDir cache("primjit_observe_cache"), dir("primjit_observe_dump_cached");
  JitOptions options{.disk_cache = DiskCacheMode::kEnabled, .cache_dir = cache.str()};
  Pair p(8);
  {
    Jit jit(options);
    jit.kernel(scale_function())(p.a, p.b, 2.0f);
  }
  ASSERT_EQ(cache.files(".pjv").size(), 1u);
  std::string entry = read_file(cache.files(".pjv")[0]);
  Env env{{"PRIMJIT_DUMP", "llvm"}, {"PRIMJIT_DUMP_DIR", dir.str()}};
  Jit jit(options);
  Kernel k = jit.kernel(scale_function());
  k(p.a, p.b, 2.0f);
  EXPECT_EQ(k.stats().misses, 1u);  // compiled, for the dump, though the disk has it
  EXPECT_EQ(k.stats().disk_hits, 0u);
  EXPECT_TRUE(fs::exists(dir.path() / "scale.v0" / "host.ll"));
  ASSERT_EQ(cache.files(".pjv").size(), 1u);  // nor stored again
  EXPECT_EQ(read_file(cache.files(".pjv")[0]), entry);
}

TEST(Observability, ABadDumpValueIsAnErrorListingTheValidOnes) {
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel k = jit.kernel(scale_function());
  Env env{{"PRIMJIT_DUMP", "ir,llvmir"}};
  Pair p(8);
  EXPECT_ERROR_CONTAINS(k(p.a, p.b, 2.0f),
                        "PRIMJIT_DUMP: unknown value 'llvmir' in 'ir,llvmir'; valid values (comma "
                        "separated): ir, llvm, llvm-opt, asm, cuda, ptx (or all)");
}

// Without PRIMJIT_DUMP_DIR the dumps go to a new private directory, named at warning level.
TEST(Observability, TheDefaultDumpDirectoryIsPrivateAndLogged) {
  TempDir tmp("primjit_observe_tmpdir");
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel k = jit.kernel(scale_function());
  LogLines warnings(LogLevel::kWarning);
  {
    Env env{{"PRIMJIT_DUMP", "ir"}, {"TMPDIR", tmp.str()}};
    Pair p(8);
    k(p.a, p.b, 2.0f);
  }
  std::vector<std::string> lines = warnings.lines();
  ASSERT_EQ(lines.size(), 1u);
  std::smatch match;
  ASSERT_TRUE(std::regex_match(lines[0], match,
                               std::regex("PRIMJIT_DUMP: writing dumps to (.*/primjit-dump-[^/]+) "
                                          "\\(set PRIMJIT_DUMP_DIR to choose the directory\\)")))
      << lines[0];
  fs::path dir = match[1].str();
  EXPECT_EQ(dir.parent_path(), tmp.path());
  struct stat st;
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(fs::exists(dir / "scale.v0" / "00_input.tir"));
}

TEST(Observability, JitStatsCountEveryKernelAndPrintAsJson) {
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  JitStats empty = jit.stats();
  EXPECT_EQ(to_json(empty),
            R"({"compiles":0,"hits":{"memory":0,"disk":0,"remote":0,"tiered":0},"switch_overs":0,)"
            R"("compile_ms":{"passes":0.000,"host_codegen":0.000,"device_codegen":0.000,)"
            R"("nvrtc":0.000,"load":0.000,"disk":0.000,"total":0.000},)"
            R"("code_bytes":{"host":0,"device":0,"total":0}})");
  Kernel k = jit.kernel(scale_function());
  Pair p8(8), p16(16);
  for (int i = 0; i < 3; ++i) k(p8.a, p8.b, 2.0f);  // 1 compile, 2 hits
  k(p16.a, p16.b, 2.0f);                            // 1 compile
  {
    Kernel gone = jit.kernel(scale_function(), {.max_unroll = 7});  // its own variants
    gone(p8.a, p8.b, 2.0f);
    gone(p8.a, p8.b, 2.0f);
  }
  JitStats s = jit.stats();
  EXPECT_EQ(s.compiles, 3u);
  EXPECT_EQ(s.memory_hits, 3u);
  EXPECT_EQ(s.disk_hits, 0u);
  EXPECT_EQ(s.remote_hits, 0u);
  EXPECT_GT(s.compile.passes_ms, 0);
  EXPECT_GT(s.compile.host_ms, 0);
  EXPECT_EQ(s.compile.device_compile_ms, 0);
  EXPECT_GT(s.host_code_bytes, 0u);
  EXPECT_EQ(s.device_code_bytes, 0u);
  KernelStats ks = k.stats();
  EXPECT_LE(ks.compile.host_ms, s.compile.host_ms);

  std::string json = to_json(s);
  EXPECT_EQ(
      json.rfind(
          R"({"compiles":3,"hits":{"memory":3,"disk":0,"remote":0,"tiered":0},"switch_overs":0,)"
          R"("compile_ms":{)",
          0),
      0u)
      << json;
  std::string bytes = std::to_string(s.host_code_bytes);
  EXPECT_NE(
      json.find(R"("code_bytes":{"host":)" + bytes + R"(,"device":0,"total":)" + bytes + "}}"),
      std::string::npos)
      << json;
  // It is JSON, read back by a strict parser, with these numbers and nothing else.
  std::optional<std::map<std::string, double>> numbers = json_numbers(json);
  ASSERT_TRUE(numbers.has_value()) << "not JSON: " << json;
  std::vector<std::string> paths;
  for (const auto& [path, value] : *numbers) paths.push_back(path);
  EXPECT_EQ(paths, (std::vector<std::string>{
                       "code_bytes.device", "code_bytes.host", "code_bytes.total",
                       "compile_ms.device_codegen", "compile_ms.disk", "compile_ms.host_codegen",
                       "compile_ms.load", "compile_ms.nvrtc", "compile_ms.passes",
                       "compile_ms.total", "compiles", "hits.disk", "hits.memory", "hits.remote",
                       "hits.tiered", "switch_overs"}))
      << json;
  EXPECT_EQ(numbers->at("compiles"), 3);
  EXPECT_EQ(numbers->at("hits.memory"), 3);
  EXPECT_EQ(numbers->at("hits.disk"), 0);
  EXPECT_EQ(numbers->at("hits.remote"), 0);
  EXPECT_GT(numbers->at("compile_ms.total"), 0);
  EXPECT_EQ(numbers->at("code_bytes.host"), static_cast<double>(s.host_code_bytes));
}

// The parser the stats test reads the JSON with refuses what is not JSON.
TEST(Observability, JsonNumbersRefusesWhatIsNotJson) {
  EXPECT_EQ(json_numbers(R"({"a":{"b":1.5e3},"c":-0.25})"),
            (std::map<std::string, double>{{"a.b", 1500}, {"c", -0.25}}));
  for (const char* bad :
       {R"({"a":1,})", R"({"a":1)", R"({"a":nan})", R"({"a":inf})", R"({"a":01})", R"({"a":1.})",
        R"({a:1})", R"({"a":1}x)", R"({"a":1,"a":2})", R"({"a" 1})", ""}) {
    EXPECT_FALSE(json_numbers(bad).has_value()) << bad;
  }
}

// On a GPU: the CUDA source and NVRTC's PTX (compiled for the dump when the variant is a
// CUBIN), the device stages in the log line, and the device image in the stats.
TEST(Observability, CudaDumpsAndDeviceStagesOnAGpu) {
  if (!test::have_gpu()) GTEST_SKIP() << "no CUDA driver or device";
  TempDir dir("primjit_observe_cuda");
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel k = jit.kernel(examples::vector_add_cuda(), {.target = Target::cuda()});
  LogLines info(LogLevel::kInfo);
  {
    Env env{{"PRIMJIT_DUMP", "cuda,ptx"}, {"PRIMJIT_DUMP_DIR", dir.str()}};
    int64_t n = 1000;
    Tensor a = Tensor::zeros({n}, DataType::Float(32)).to(test::kGpu);
    Tensor b = Tensor::zeros({n}, DataType::Float(32)).to(test::kGpu);
    Tensor c = Tensor::zeros({n}, DataType::Float(32)).to(test::kGpu);
    k(a, b, c);
  }
  fs::path v0 = dir.path() / "vector_add_cuda.v0";
  std::string cuda = read_file(v0 / "device.cu");
  std::string ptx = read_file(v0 / "device.ptx");
  EXPECT_NE(cuda.find("__global__"), std::string::npos) << cuda;
  EXPECT_NE(ptx.find(".entry vector_add_cuda_kernel"), std::string::npos) << ptx;
  EXPECT_EQ(ptx.find('\0'), std::string::npos);
  EXPECT_FALSE(fs::exists(v0 / "host.ll"));
  std::vector<std::string> lines = info.lines();
  std::string compiled;
  for (const std::string& line : lines) {
    if (line.find("compiled a variant") != std::string::npos) compiled = line;
  }
  EXPECT_TRUE(std::regex_match(
      compiled,
      std::regex(R"(kernel 'vector_add_cuda': compiled a variant \(first call\) in [0-9.]+ ms )"
                 R"(\[passes [0-9.]+, host codegen [0-9.]+, device codegen [0-9.]+, )"
                 R"(nvrtc [0-9.]*[1-9][0-9.]*, load [0-9.]+, disk 0\.000 ms\])")))
      << compiled;
  JitStats s = jit.stats();
  EXPECT_EQ(s.compiles, 1u);
  EXPECT_GT(s.device_code_bytes, 0u);
  EXPECT_GT(s.compile.device_compile_ms, 0);
}

}  // namespace
}  // namespace primjit

namespace primjit {
namespace {

// Dump files are written as the user's own regular files: a FIFO left in the directory is an
// error, not a hang; a symbolic link is not followed; new directories are private.
TEST(Observability, DumpFilesRefuseFifosAndLinksAndDirectoriesArePrivate) {
  test::TempDir temp("primjit_dump_hostile");
  const std::string dir = temp.str();
  const std::string fifo = dir + "/device.cu";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_ERROR_CONTAINS(write_dump_file(dir, "device.cu", "x"), "must be a regular file");
  const std::string target = dir + "/target.txt";
  { std::ofstream(target) << "keep"; }
  ASSERT_EQ(::symlink(target.c_str(), (dir + "/host.ll").c_str()), 0);
  EXPECT_ERROR_CONTAINS(write_dump_file(dir, "host.ll", "overwritten"), "must be a regular file");
  std::ifstream in(target);
  std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(kept, "keep");
  write_dump_file(dir + "/new/sub", "ok.tir", "text");
  for (const std::string& d : {dir + "/new", dir + "/new/sub"}) {
    struct stat st {};
    ASSERT_EQ(::stat(d.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u) << d;
  }
  struct stat st {};
  ASSERT_EQ(::stat((dir + "/new/sub/ok.tir").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

}  // namespace
}  // namespace primjit
