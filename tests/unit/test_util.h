// Helpers shared by the unit tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

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

}  // namespace primjit::test

/// Expects `statement` to throw a primjit::Error whose message contains `text`.
#define EXPECT_ERROR_CONTAINS(statement, text)                                           \
  do {                                                                                   \
    std::string primjit_message = ::primjit::test::error_of([&] { (void)(statement); }); \
    EXPECT_NE(primjit_message.find(text), std::string::npos)                             \
        << "message: '" << primjit_message << "'";                                       \
  } while (0)
