#include "primjit/log.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace primjit {
namespace detail {

std::atomic<int> g_log_level{-1};

namespace {

std::mutex& sink_mutex() {
  static std::mutex mutex;
  return mutex;
}

LogSink& sink() {
  static LogSink instance;
  return instance;
}

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kOff:
      return "off";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kDebug:
      return "debug";
  }
  return "?";
}

}  // namespace

LogLevel init_log_level_from_env() {
  LogLevel level = LogLevel::kWarning;
  const char* env = std::getenv("PRIMJIT_LOG");
  if (env != nullptr && !parse_log_level(env, &level)) {
    // Reading the environment must never throw (it happens inside unrelated calls), so a bad
    // value is reported once on stderr and logging stays off.
    std::fprintf(
        stderr,
        "[primjit] PRIMJIT_LOG='%s' is not one of off, warning, info, debug; logging stays off\n",
        env);
    level = LogLevel::kOff;
  }
  int expected = -1;
  // A concurrent set_log_level() wins over the environment.
  if (!g_log_level.compare_exchange_strong(expected, static_cast<int>(level))) {
    return static_cast<LogLevel>(expected);
  }
  return level;
}

void EmitLog::operator&(const LogLine& line) const {
  std::string text = line.text();
  std::lock_guard<std::mutex> lock(sink_mutex());
  if (sink()) {
    sink()(line.level(), text);
    return;
  }
  std::fprintf(stderr, "[primjit %s] %s\n", level_name(line.level()), text.c_str());
}

}  // namespace detail

void set_log_level(LogLevel level) {
  detail::g_log_level.store(static_cast<int>(level), std::memory_order_relaxed);
}

bool parse_log_level(std::string_view text, LogLevel* level) {
  std::string lower;
  for (char c : text) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (lower.empty() || lower == "off" || lower == "0") {
    *level = LogLevel::kOff;
  } else if (lower == "warning" || lower == "warn") {
    *level = LogLevel::kWarning;
  } else if (lower == "info" || lower == "1") {
    *level = LogLevel::kInfo;
  } else if (lower == "debug" || lower == "2") {
    *level = LogLevel::kDebug;
  } else {
    return false;
  }
  return true;
}

void set_log_sink(LogSink new_sink) {
  std::lock_guard<std::mutex> lock(detail::sink_mutex());
  detail::sink() = std::move(new_sink);
}

}  // namespace primjit
