// A function with many parameters, for the tests and the benchmark of code size and compile
// time against the number of parameters.
#pragma once

#include <cstdint>
#include <string>

namespace primjit::test {

/// f(a0, ..., a<n-1>) in the text format: n float32 vectors of one length m,
/// A0[i] = A<n-1>[i] + 1.
inline std::string many_params(int64_t n) {
  std::string params, buffers;
  for (int64_t k = 0; k < n; ++k) {
    std::string i = std::to_string(k);
    params += (k ? ", a" : "a") + i + ": T.handle";
    buffers += "    A" + i + " = T.match_buffer(a" + i + ", (m,), \"float32\")\n";
  }
  return "@T.prim_func\ndef f(" + params +
         "):\n    T.func_attr({\"target\": T.target(\"llvm\")})\n    m = T.int64()\n" + buffers +
         "    for i in range(m):\n        A0[i] = A" + std::to_string(n - 1) +
         "[i] + T.float32(1)\n";
}

}  // namespace primjit::test
