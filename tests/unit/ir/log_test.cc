#include "primjit/log.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace primjit {
namespace {

class LogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = log_level();
    set_log_sink([this](LogLevel level, std::string_view text) {
      lines_.emplace_back(level, std::string(text));
    });
  }
  void TearDown() override {
    set_log_sink(nullptr);
    set_log_level(saved_);
  }
  LogLevel saved_ = LogLevel::kOff;
  std::vector<std::pair<LogLevel, std::string>> lines_;
};

TEST_F(LogTest, ParsesTheDocumentedLevels) {
  LogLevel level = LogLevel::kDebug;
  ASSERT_TRUE(parse_log_level("off", &level));
  EXPECT_EQ(level, LogLevel::kOff);
  ASSERT_TRUE(parse_log_level("warning", &level));
  EXPECT_EQ(level, LogLevel::kWarning);
  ASSERT_TRUE(parse_log_level("INFO", &level));
  EXPECT_EQ(level, LogLevel::kInfo);
  ASSERT_TRUE(parse_log_level("debug", &level));
  EXPECT_EQ(level, LogLevel::kDebug);
  ASSERT_TRUE(parse_log_level("", &level));
  EXPECT_EQ(level, LogLevel::kOff);
  EXPECT_FALSE(parse_log_level("verbose", &level));
}

TEST_F(LogTest, OffEmitsNothingAndBuildsNoMessage) {
  set_log_level(LogLevel::kOff);
  int evaluations = 0;
  auto costly = [&] {
    ++evaluations;
    return 1;
  };
  PRIMJIT_LOG_INFO << "hidden " << costly();
  PRIMJIT_LOG_DEBUG << "hidden " << costly();
  EXPECT_TRUE(lines_.empty());
  EXPECT_EQ(evaluations, 0);
}

TEST_F(LogTest, InfoEmitsInfoButNotDebug) {
  set_log_level(LogLevel::kInfo);
  PRIMJIT_LOG_INFO << "compiled " << 3 << " kernels";
  PRIMJIT_LOG_DEBUG << "detail";
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0].first, LogLevel::kInfo);
  EXPECT_EQ(lines_[0].second, "compiled 3 kernels");
}

TEST_F(LogTest, DebugEmitsBoth) {
  set_log_level(LogLevel::kDebug);
  PRIMJIT_LOG_INFO << "a";
  PRIMJIT_LOG_DEBUG << "b";
  ASSERT_EQ(lines_.size(), 2u);
  EXPECT_EQ(lines_[1].first, LogLevel::kDebug);
  EXPECT_EQ(lines_[1].second, "b");
}

// PRIMJIT_LOG is read from the environment the first time the level is needed.
TEST(LogEnvironment, LevelComesFromPrimjitLog) {
  EXPECT_EXIT(
      {
        setenv("PRIMJIT_LOG", "debug", 1);
        detail::g_log_level.store(-1);
        std::_Exit(log_level() == LogLevel::kDebug ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(LogEnvironment, WarningsAreOnByDefault) {
  EXPECT_EXIT(
      {
        unsetenv("PRIMJIT_LOG");
        detail::g_log_level.store(-1);
        std::_Exit(log_level() == LogLevel::kWarning ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(LogEnvironment, BadValueWarnsAndStaysOff) {
  EXPECT_EXIT(
      {
        setenv("PRIMJIT_LOG", "loud", 1);
        detail::g_log_level.store(-1);
        std::_Exit(log_level() == LogLevel::kOff ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "PRIMJIT_LOG='loud' is not one of off, warning, info, debug");
}

TEST(LogEnvironment, DefaultSinkWritesPrefixedLinesToStderr) {
  EXPECT_EXIT(
      {
        set_log_level(LogLevel::kInfo);
        PRIMJIT_LOG_INFO << "hello " << 42;
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "\\[primjit info\\] hello 42");
}

}  // namespace
}  // namespace primjit
