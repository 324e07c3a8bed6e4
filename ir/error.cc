#include "primjit/error.h"

#include <string>

namespace primjit::detail {
namespace {

std::string location(const CheckMessage& message) {
  return std::string(message.file()) + ":" + std::to_string(message.line());
}

}  // namespace

void ThrowUserError::operator&(const CheckMessage& message) const {
  std::string text = message.text();
  if (text.empty()) {
    // A check without an explanation still says which requirement failed.
    text = std::string("requirement `") + message.condition() + "` does not hold";
  }
  throw Error(text);
}

void ThrowInternalError::operator&(const CheckMessage& message) const {
  std::string text = "primjit internal error at " + location(message);
  if (*message.condition() != '\0')
    text += ": check `" + std::string(message.condition()) + "` failed";
  std::string detail = message.text();
  if (!detail.empty()) text += ": " + detail;
  text += ". This is a bug in primjit; please report it with the input that triggered it.";
  throw InternalError(text);
}

}  // namespace primjit::detail
