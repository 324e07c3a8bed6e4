#include "primjit/error.h"

#include <gtest/gtest.h>

#include <string>

namespace primjit {
namespace {

int checked_extent(int n) {
  PRIMJIT_USER_CHECK(n > 0) << "extent must be positive, got " << n;
  return n;
}

TEST(Error, UserCheckPassesThrough) { EXPECT_EQ(checked_extent(7), 7); }

TEST(Error, UserCheckThrowsErrorWithStreamedMessage) {
  try {
    checked_extent(-2);
    FAIL() << "expected primjit::Error";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "extent must be positive, got -2");
  }
}

TEST(Error, ErrorIsARuntimeError) { EXPECT_THROW(checked_extent(0), std::runtime_error); }

TEST(Error, UserCheckWithoutMessageNamesTheCondition) {
  int x = 3;
  try {
    PRIMJIT_USER_CHECK(x == 4);
    FAIL() << "expected primjit::Error";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "requirement `x == 4` does not hold");
  }
}

TEST(Error, InternalCheckNamesLocationAndCondition) {
  try {
    PRIMJIT_ICHECK(1 + 1 == 3) << "arithmetic broke";
    FAIL() << "expected primjit::InternalError";
  } catch (const InternalError& error) {
    std::string text = error.what();
    EXPECT_NE(text.find("error_test.cc:"), std::string::npos) << text;
    EXPECT_NE(text.find("check `1 + 1 == 3` failed: arithmetic broke"), std::string::npos) << text;
    EXPECT_NE(text.find("bug in primjit"), std::string::npos) << text;
  }
}

TEST(Error, InternalErrorIsNotAUserError) {
  bool caught_as_user_error = false;
  try {
    PRIMJIT_ICHECK(false);
  } catch (const Error&) {
    caught_as_user_error = true;
  } catch (const InternalError&) {
  }
  EXPECT_FALSE(caught_as_user_error);
}

TEST(Error, MessageIsBuiltOnlyOnFailure) {
  int evaluations = 0;
  auto costly = [&] {
    ++evaluations;
    return std::string("details");
  };
  PRIMJIT_USER_CHECK(true) << costly();
  PRIMJIT_ICHECK(true) << costly();
  EXPECT_EQ(evaluations, 0);
  EXPECT_THROW(PRIMJIT_USER_CHECK(false) << costly(), Error);
  EXPECT_EQ(evaluations, 1);
}

TEST(Error, ChecksAreSingleStatementsInsideIfElse) {
  // The macros are expressions: they must not capture a following `else`.
  int branch = 0;
  if (branch == 0)
    PRIMJIT_USER_CHECK(true) << "unused";
  else
    branch = 2;
  EXPECT_EQ(branch, 0);
}

TEST(Error, UnconditionalForms) {
  EXPECT_THROW(PRIMJIT_USER_ERROR() << "bad", Error);
  EXPECT_THROW(PRIMJIT_INTERNAL_ERROR() << "bad", InternalError);
}

}  // namespace
}  // namespace primjit
