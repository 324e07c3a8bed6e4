// The CPU matmul that bench_policy and bench_tiered call with many shapes: C = A @ B on float32,
// rows in parallel, every dimension symbolic (M, N, K), so each policy decides what to specialize.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "primjit/tensor.h"

namespace primjit::bench {

// `def <name>(a, b, c)` with C = A @ B's float32 buffers, M x K by K x N, every dimension
// symbolic; the loops (`body`) follow.
inline std::string matmul_function(const std::string& name, const std::string& body) {
  return "@T.prim_func\ndef " + name + R"((a: T.handle, b: T.handle, c: T.handle):
    T.func_attr({"target": T.target("llvm")})
    M = T.int32()
    N = T.int32()
    K = T.int32()
    A = T.match_buffer(a, (M, K), "float32")
    B = T.match_buffer(b, (K, N), "float32")
    C = T.match_buffer(c, (M, N), "float32")
)" + body;
}

// The same product in 32 x 32 tiles of C with guards for partial tiles, the way a schedule
// tiles a matmul whose sizes are not known: exact variants fold the guards of whole tiles;
// kDynamic's variant folds them only on its fast path (VersionLoops, M and N multiples of 32).
// The tile rows in parallel or serial.
inline std::string tiled_matmul_text(bool parallel) {
  return matmul_function(
      "tiled_matmul",
      std::string("    for io in ") + (parallel ? "T.parallel" : "range") + R"(((M + 31) // 32):
        for jo in range((N + 31) // 32):
            for ii in range(32):
                for ji in range(32):
                    if io * 32 + ii < M and jo * 32 + ji < N:
                        C[io * 32 + ii, jo * 32 + ji] = T.float32(0)
            for k in range(K):
                for ii in range(32):
                    for ji in range(32):
                        if io * 32 + ii < M and jo * 32 + ji < N:
                            C[io * 32 + ii, jo * 32 + ji] = C[io * 32 + ii, jo * 32 + ji] + A[io * 32 + ii, k] * B[k, jo * 32 + ji]
)");
}

// Rows in parallel, a row of C zeroed and then accumulated over k.
inline std::string parallel_matmul_text() {
  return matmul_function("matmul", R"(    for i in T.parallel(M):
        for j in range(N):
            C[i, j] = T.float32(0)
        for k in range(K):
            for j in range(N):
                C[i, j] = C[i, j] + A[i, k] * B[k, j]
)");
}

/// The 20 square sizes the benchmarks call it with: 16 multiples of 16 (48 .. 288) and 4 others.
inline std::vector<int64_t> matmul_sizes() {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < 16; ++i) out.push_back(48 + 16 * i);
  for (int64_t n : {100, 150, 201, 257}) out.push_back(n);
  return out;
}

/// n x n operands of all ones and twos; right() checks every element of C is 2n.
struct MatmulOperands {
  Tensor a, b, c;
  explicit MatmulOperands(int64_t n)
      : a(Tensor::zeros({n, n}, DataType::Float(32))),
        b(Tensor::zeros({n, n}, DataType::Float(32))),
        c(Tensor::zeros({n, n}, DataType::Float(32))) {
    for (int64_t i = 0; i < n * n; ++i) {
      a.data<float>()[i] = 1.0f;
      b.data<float>()[i] = 2.0f;
    }
  }
  bool right() const {
    int64_t n = a.dl()->shape[0];
    for (int64_t i = 0; i < n * n; ++i) {
      if (c.data<float>()[i] != 2.0f * static_cast<float>(n)) return false;
    }
    return true;
  }
};

}  // namespace primjit::bench
