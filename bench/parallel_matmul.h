// The CPU matmul that bench_policy and bench_tiered call with many shapes: C = A @ B on float32,
// rows in parallel, every dimension symbolic (M, N, K), so each policy decides what to specialize.
#pragma once

namespace primjit::bench {

inline constexpr const char* kParallelMatmul = R"(
@T.prim_func
def matmul(a: T.handle, b: T.handle, c: T.handle):
    T.func_attr({"target": T.target("llvm")})
    M = T.int32()
    N = T.int32()
    K = T.int32()
    A = T.match_buffer(a, (M, K), "float32")
    B = T.match_buffer(b, (K, N), "float32")
    C = T.match_buffer(c, (M, N), "float32")
    for i in T.parallel(M):
        for j in range(N):
            C[i, j] = T.float32(0)
        for k in range(K):
            for j in range(N):
                C[i, j] = C[i, j] + A[i, k] * B[k, j]
)";

}  // namespace primjit::bench
