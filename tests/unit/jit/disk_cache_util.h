// Helpers shared by the disk cache tests: entry files, a sample variant, and a small kernel
// (axpb) whose results say which code ran.
#pragma once

#include <gtest/gtest.h>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "jit/runtime/crypto.h"
#include "jit/runtime/disk_cache.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/log.h"
#include "primjit/tensor.h"
#include "tests/unit/jit/jit_test_util.h"

extern char** environ;  // NOLINT: for posix_spawn

namespace primjit::test::disk {

namespace fs = std::filesystem;

// The extension of the cache's entry files.
inline constexpr const char* kEntry = ".pjv";

inline std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// The disk cache's format before kernel handles moved into the packed `self` argument: its
// host objects read them from module globals.
inline constexpr uint32_t kOldFormat = 2;

// `sealed`, an entry of the cache in `dir`, as an older primjit of entry format `format` would
// have written it: the header's format field changed and the MAC made again with the
// directory's own key, so that only the format tells it apart.
inline std::string with_format(std::string sealed, uint32_t format, const std::string& dir) {
  constexpr size_t kSealedHeader = 8 + 4 + 4 + 8 + 8;  // magic, format, reserved, two lengths
  constexpr size_t kHeader = kSealedHeader + jit::kMacBytes;
  if (sealed.size() < kHeader) return sealed;
  uint64_t key_size = 0;
  std::memcpy(sealed.data() + 8, &format, 4);
  std::memcpy(&key_size, sealed.data() + 16, 8);
  std::string mac_key = read_bytes(fs::path(dir) / jit::DiskCache::kKeyFile);
  std::string_view all(sealed);
  jit::Mac mac =
      jit::compute_mac(mac_key, {all.substr(0, kSealedHeader), all.substr(kHeader, key_size),
                                 all.substr(kHeader + key_size)});
  std::memcpy(sealed.data() + kSealedHeader, mac.data(), mac.size());
  return sealed;
}

inline jit::CachedVariant sample_variant() {
  jit::CachedVariant v;
  v.host.object = std::string(
      "\x7f"
      "ELF object bytes\0with a NUL",
      27);
  v.host.suffix = ".pj0123456789abcdef";
  v.host.functions = {{"main", "main"}, {"helper", "helper_sym"}};
  v.host.launched_kernels = {"main_kernel"};
  v.device.ptx = false;
  v.device.arch = 90;
  v.device.image = std::string("cubin\0bytes", 11);
  v.device.kernels = {
      {"main_kernel", {"blockIdx.x", "threadIdx.x", attr::kUseDynSharedMemory}, {8, 8, 4, 1}}};
  return v;
}

inline void expect_same(const jit::CachedVariant& a, const jit::CachedVariant& b) {
  EXPECT_EQ(a.host.object, b.host.object);
  EXPECT_EQ(a.host.suffix, b.host.suffix);
  EXPECT_EQ(a.host.functions, b.host.functions);
  EXPECT_EQ(a.host.launched_kernels, b.host.launched_kernels);
  EXPECT_EQ(a.device.ptx, b.device.ptx);
  EXPECT_EQ(a.device.arch, b.device.arch);
  EXPECT_EQ(a.device.image, b.device.image);
  ASSERT_EQ(a.device.kernels.size(), b.device.kernels.size());
  for (size_t i = 0; i < a.device.kernels.size(); ++i) {
    EXPECT_EQ(a.device.kernels[i].name, b.device.kernels[i].name);
    EXPECT_EQ(a.device.kernels[i].launch_params, b.device.kernels[i].launch_params);
    EXPECT_EQ(a.device.kernels[i].param_bytes, b.device.kernels[i].param_bytes);
  }
}

// B = A * s + offset. Every version is named axpb: only the function's text tells them apart.
inline PrimFunc axpb_function(int offset = 1) {
  std::string text = R"(
@T.prim_func
def axpb(a: T.handle, b: T.handle, s: T.float32):
    T.func_attr({"target": T.target("llvm")})
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    for i in range(n):
        B[i] = A[i] * s + T.float32(OFFSET)
)";
  text.replace(text.find("OFFSET"), 6, std::to_string(offset));
  return parse(text)->lookup("axpb");
}

inline const int64_t kSizes[] = {8, 16, 24};

// Calls the kernel once per size and checks each result (a * 3 + offset); true when all are
// right.
inline bool run_sizes(const Kernel& k, float offset = 1.0f) {
  bool ok = true;
  for (int64_t n : kSizes) {
    Tensor a = Tensor::zeros({n}, DataType::Float(32)), b = Tensor::zeros({n}, DataType::Float(32));
    std::iota(a.data<float>(), a.data<float>() + n, 1.0f);
    k(a, b, 3.0f);
    for (int64_t i = 0; i < n; ++i) ok &= b.data<float>()[i] == a.data<float>()[i] * 3.0f + offset;
  }
  return ok;
}

inline JitOptions on_disk(const std::string& dir) {
  JitOptions o;
  o.disk_cache = DiskCacheMode::kEnabled;
  o.cache_dir = dir;
  return o;
}

// Collects warnings while alive.
class Warnings : public LogLines {
 public:
  Warnings() : LogLines(LogLevel::kWarning) {}
};

struct ChildStats {
  uint64_t misses = 0, disk_hits = 0, remote_hits = 0;
  double host_ms = -1, passes_ms = -1;
  int ok = 0;
};

// Starts this program as a child running DiskCacheChild.Run; returns its pid.
inline pid_t spawn_child(const std::string& dir, const std::string& out) {
  std::vector<std::string> env_strings = {"PRIMJIT_TEST_CHILD_DIR=" + dir,
                                          "PRIMJIT_TEST_CHILD_OUT=" + out};
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "PRIMJIT_TEST_CHILD_", 19) != 0) env_strings.emplace_back(*e);
  }
  std::vector<char*> env;
  for (std::string& s : env_strings) env.push_back(s.data());
  env.push_back(nullptr);
  std::string self = fs::read_symlink("/proc/self/exe").string();
  std::string filter = "--gtest_filter=DiskCacheChild.DISABLED_Run";
  std::string disabled = "--gtest_also_run_disabled_tests";
  std::string brief = "--gtest_brief=1";
  char* argv[] = {self.data(), filter.data(), disabled.data(), brief.data(), nullptr};
  pid_t pid = 0;
  EXPECT_EQ(posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv, env.data()), 0);
  return pid;
}

inline ChildStats wait_child(pid_t pid, const std::string& out) {
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  ChildStats s;
  std::ifstream in(out);
  in >> s.misses >> s.disk_hits >> s.host_ms >> s.passes_ms >> s.ok >> s.remote_hits;
  EXPECT_TRUE(in.good() || in.eof()) << "no stats from the child";
  return s;
}

}  // namespace primjit::test::disk
