// Diagnostic logging, controlled by the PRIMJIT_LOG environment variable:
//   PRIMJIT_LOG=off | warning (default) | info | debug
// `warning` reports problems primjit recovered from (e.g. a corrupt disk cache entry that is
// recompiled); `info` reports what a user may want to know (each compile and its reason, cache
// decisions); `debug` adds detail for primjit developers. Lines go to stderr as "[primjit info]
// ..." unless a sink is installed. The message after `<<` is built only when its level is enabled.
//
//   PRIMJIT_LOG_INFO << "compiling variant " << key << " (" << reason << ")";
#pragma once

#include <atomic>
#include <functional>
#include <sstream>
#include <string>
#include <string_view>

namespace primjit {

enum class LogLevel : int { kOff = 0, kWarning = 1, kInfo = 2, kDebug = 3 };

namespace detail {
// -1 until PRIMJIT_LOG has been read; then a LogLevel value.
extern std::atomic<int> g_log_level;
LogLevel init_log_level_from_env();
}  // namespace detail

/// Current level: from PRIMJIT_LOG on first use, unless set_log_level was called.
inline LogLevel log_level() {
  int level = detail::g_log_level.load(std::memory_order_relaxed);
  return level >= 0 ? static_cast<LogLevel>(level) : detail::init_log_level_from_env();
}
/// Overrides PRIMJIT_LOG for the rest of the process.
void set_log_level(LogLevel level);
/// Parses "off", "warning", "info", "debug" (any case; "" means off). Returns false for anything
/// else.
bool parse_log_level(std::string_view text, LogLevel* level);

/// Receives every emitted line (without the "[primjit info]" prefix). Calls are serialized.
using LogSink = std::function<void(LogLevel, std::string_view)>;
/// Installs a sink; an empty function restores the default (stderr).
void set_log_sink(LogSink sink);

inline bool log_enabled(LogLevel level) {
  return static_cast<int>(log_level()) >= static_cast<int>(level);
}

namespace detail {

class LogLine {
 public:
  explicit LogLine(LogLevel level) : level_(level) {}
  template <typename T>
  LogLine& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }
  LogLevel level() const { return level_; }
  std::string text() const { return stream_.str(); }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};

struct EmitLog {
  void operator&(const LogLine& line) const;
};

}  // namespace detail
}  // namespace primjit

#define PRIMJIT_DETAIL_LOG(level)                     \
  !::primjit::log_enabled(::primjit::LogLevel::level) \
      ? (void)0                                       \
      : ::primjit::detail::EmitLog() & ::primjit::detail::LogLine(::primjit::LogLevel::level)

#define PRIMJIT_LOG_WARNING PRIMJIT_DETAIL_LOG(kWarning)
#define PRIMJIT_LOG_INFO PRIMJIT_DETAIL_LOG(kInfo)
#define PRIMJIT_LOG_DEBUG PRIMJIT_DETAIL_LOG(kDebug)
