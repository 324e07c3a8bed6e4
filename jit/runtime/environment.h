// Reading the process environment.
#pragma once

#include <cstdlib>
#include <string>

namespace primjit::jit {

/// The value of environment variable `name`, empty when unset.
inline std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

}  // namespace primjit::jit
