// Helpers shared by the unit tests.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <system_error>
#include <vector>

#include "primjit/error.h"

namespace primjit::test {

/// Unit tests never read or write the user's persistent cache: counts of compiles must not
/// depend on earlier runs. (Tests of the disk cache enable it with their own directory.)
inline const bool kNoUserDiskCache = [] { return setenv("PRIMJIT_CACHE", "0", 1) == 0; }();

/// Runs `f` and returns the message of the primjit::Error it throws, or "" when it does not.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

/// A fresh, empty directory under the system's temporary directory. The destructor removes it
/// and its contents, also when a failed ASSERT ends the test early.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "primjit_test") {
    static std::atomic<int> count{0};
    path_ = std::filesystem::temp_directory_path() /
            (prefix + "." + std::to_string(::getpid()) + "." + std::to_string(count++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
    // Private whatever the umask: the disk cache refuses a directory others may write.
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  /// The files directly in the directory whose names end in `extension` (e.g. ".pjv").
  std::vector<std::filesystem::path> files(const std::string& extension) const {
    std::vector<std::filesystem::path> out;
    for (const auto& e : std::filesystem::directory_iterator(path_)) {
      if (e.path().extension() == extension) out.push_back(e.path());
    }
    return out;
  }

 private:
  std::filesystem::path path_;
};

/// Distance in units in the last place between two floats of one type (I: the signed integer
/// of its width): 0 for two NaNs, the largest int64 for a NaN and a number and for zeros of
/// opposite sign.
template <typename F, typename I>
int64_t ulp_distance(F a, F b) {
  if (std::isnan(a) && std::isnan(b)) return 0;
  if (a == b) return std::signbit(a) == std::signbit(b) ? 0 : INT64_MAX;
  if (std::isnan(a) || std::isnan(b)) return INT64_MAX;
  I ia, ib;
  std::memcpy(&ia, &a, sizeof(a));
  std::memcpy(&ib, &b, sizeof(b));
  if (ia < 0) ia = std::numeric_limits<I>::min() - ia;
  if (ib < 0) ib = std::numeric_limits<I>::min() - ib;
  return ia > ib ? static_cast<int64_t>(ia - ib) : static_cast<int64_t>(ib - ia);
}

}  // namespace primjit::test

/// Expects `statement` to throw a primjit::Error whose message contains `text`.
#define EXPECT_ERROR_CONTAINS(statement, text)                                           \
  do {                                                                                   \
    std::string primjit_message = ::primjit::test::error_of([&] { (void)(statement); }); \
    EXPECT_NE(primjit_message.find(text), std::string::npos)                             \
        << "message: '" << primjit_message << "'";                                       \
  } while (0)
