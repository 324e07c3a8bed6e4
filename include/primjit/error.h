// Errors raised by primjit.
//
// Two kinds, and only two:
//   primjit::Error          something the user can act on: bad IR, bad API use, bad arguments,
//                           a toolchain or driver failure. The message says what is wrong and
//                           how to fix it.
//   primjit::InternalError  a broken invariant inside primjit, i.e. a bug. The message names the
//                           failed check and its source location.
// The library never aborts or exits; every failure reaches the caller as one of these.
//
//   PRIMJIT_USER_CHECK(n > 0) << "buffer '" << name << "' needs a positive extent, got " << n;
//   PRIMJIT_ICHECK(node.defined()) << "mutator returned an undefined node";
//
// The message after `<<` is built only when the check fails.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace primjit {

/// A failure the user can act on. Derived errors (ParseError, ...) refine it.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A bug in primjit: an internal invariant did not hold.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

namespace detail {

/// Collects the streamed message of a failed check. Only constructed on failure.
class CheckMessage {
 public:
  CheckMessage(const char* file, int line, const char* condition)
      : file_(file), line_(line), condition_(condition) {}

  template <typename T>
  CheckMessage& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

  const char* file() const { return file_; }
  int line() const { return line_; }
  const char* condition() const { return condition_; }
  std::string text() const { return stream_.str(); }

 private:
  const char* file_;
  int line_;
  const char* condition_;
  std::ostringstream stream_;
};

// `Thrower & message` has lower precedence than `<<`, so the whole streamed message is built
// before the throw. Out of line to keep the failure path away from hot code.
struct ThrowUserError {
  [[noreturn]] void operator&(const CheckMessage& message) const;
};
struct ThrowInternalError {
  [[noreturn]] void operator&(const CheckMessage& message) const;
};

}  // namespace detail
}  // namespace primjit

#define PRIMJIT_DETAIL_CHECK(thrower, cond)    \
  __builtin_expect(static_cast<bool>(cond), 1) \
      ? (void)0                                \
      : ::primjit::detail::thrower() & ::primjit::detail::CheckMessage(__FILE__, __LINE__, #cond)

/// Throws primjit::Error with the streamed message when `cond` is false.
#define PRIMJIT_USER_CHECK(cond) PRIMJIT_DETAIL_CHECK(ThrowUserError, cond)
/// Throws primjit::InternalError (a primjit bug) when `cond` is false.
#define PRIMJIT_ICHECK(cond) PRIMJIT_DETAIL_CHECK(ThrowInternalError, cond)
/// Unconditional forms, for the end of a switch or a failed lookup.
#define PRIMJIT_USER_ERROR() \
  ::primjit::detail::ThrowUserError() & ::primjit::detail::CheckMessage(__FILE__, __LINE__, "")
#define PRIMJIT_INTERNAL_ERROR() \
  ::primjit::detail::ThrowInternalError() & ::primjit::detail::CheckMessage(__FILE__, __LINE__, "")
