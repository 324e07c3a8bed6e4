// Example kernels written with the C++ builder. The example programs print them; the tests
// compare each with the same function written in the text format.
#pragma once

#include "primjit/builder.h"

namespace primjit::examples {

namespace pb = primjit::builder;

/// C[i] = A[i] + B[i] on the CPU: one parallel loop.
inline PrimFunc vector_add_cpu() {
  pb::FunctionBuilder f("vector_add_cpu");
  pb::Var n = f.dim("n");
  pb::BufferRef A = f.arg_buffer("A", {n}), B = f.arg_buffer("B", {n}), C = f.arg_buffer("C", {n});
  f.target(Target::llvm());
  f.parallel("i", n, [&](pb::Var i) { C[i] = A[i] + B[i]; });
  return f.finish();
}

/// C[i] = A[i] + B[i] on the GPU: 256 threads per block, a guard for the ragged last block.
inline PrimFunc vector_add_cuda() {
  pb::FunctionBuilder f("vector_add_cuda");
  pb::Var n = f.dim("n");
  pb::BufferRef A = f.arg_buffer("A", {n}), B = f.arg_buffer("B", {n}), C = f.arg_buffer("C", {n});
  f.target(Target::cuda());
  pb::Var bx = f.launch_thread("blockIdx.x", pb::ceildiv(n, 256));
  pb::Var tx = f.launch_thread("threadIdx.x", 256);
  pb::Var i = f.bind("i", bx * 256 + tx);
  f.if_then(i < n, [&] { C[i] = A[i] + B[i]; });
  return f.finish();
}

/// C = A @ B with A: M x K, B: K x N, all sizes symbolic (multiples of 16): 16 x 16 tiles
/// staged through dynamic shared memory, one block per tile, one thread per output element
/// (the JIT demo's matmul).
inline PrimFunc tiled_matmul() {
  pb::FunctionBuilder f("tiled_matmul");
  pb::Var M = f.dim("M"), N = f.dim("N"), K = f.dim("K");
  pb::BufferRef A = f.arg_buffer("A", {M, K}), B = f.arg_buffer("B", {K, N});
  pb::BufferRef C = f.arg_buffer("C", {M, N});
  f.target(Target::cuda());
  pb::Var by = f.launch_thread("blockIdx.y", M / 16);
  pb::Var bx = f.launch_thread("blockIdx.x", N / 16);
  pb::Var tx = f.launch_thread("threadIdx.x", 256);
  pb::BufferRef As = f.alloc_buffer("A_tile", {16, 16}, pb::f32, "shared.dyn");
  pb::BufferRef Bs = f.alloc_buffer("B_tile", {16, 16}, pb::f32, "shared.dyn");
  pb::BufferRef acc = f.alloc_buffer("acc", {1}, pb::f32, "local");
  pb::Var ty = f.bind("ty", tx / 16), tz = f.bind("tz", tx % 16);
  pb::Var row = f.bind("row", by * 16 + ty), col = f.bind("col", bx * 16 + tz);
  acc[0] = 0.0;
  f.for_("k0", K / 16, [&](pb::Var k0) {
    As(ty, tz) = A(row, k0 * 16 + tz);
    Bs(ty, tz) = B(k0 * 16 + ty, col);
    f.sync_threads("shared.dyn");
    f.for_("k1", 16, [&](pb::Var k1) { acc[0] += As(ty, k1) * Bs(k1, tz); });
    f.sync_threads("shared.dyn");
  });
  C(row, col) = acc[0];
  return f.finish();
}

/// Y = softmax(X) along rows of 256 elements: one block per row, one thread per element, a
/// shared-memory tree reduction (with barriers) for the row maximum and the row sum.
inline PrimFunc row_softmax() {
  pb::FunctionBuilder f("row_softmax");
  pb::Var m = f.dim("m");
  pb::BufferRef X = f.arg_buffer("X", {m, 256}), Y = f.arg_buffer("Y", {m, 256});
  f.target(Target::cuda());
  pb::Var row = f.launch_thread("blockIdx.x", m);
  pb::Var tx = f.launch_thread("threadIdx.x", 256);
  pb::BufferRef red = f.alloc_buffer("red", {256}, pb::f32, "shared");
  auto reduce = [&](auto combine) {  // red[0] = combine over red[0..255]
    for (int stride = 128; stride > 0; stride /= 2) {
      f.if_then(tx < stride, [&] { red[tx] = combine(red[tx], red[tx + stride]); });
      f.sync_threads();
    }
  };
  red[tx] = X(row, tx);
  f.sync_threads();
  reduce([](pb::Expr a, pb::Expr b) { return pb::max(a, b); });
  pb::Var row_max = f.bind("row_max", red[0]);
  f.sync_threads();
  pb::Var e = f.bind("e", pb::exp(X(row, tx) - row_max));
  red[tx] = e;
  f.sync_threads();
  reduce([](pb::Expr a, pb::Expr b) { return a + b; });
  Y(row, tx) = e / red[0];
  return f.finish();
}

/// D = relu(A @ B) for 128x128 matrices in two sibling kernel launches in one function:
/// a tiled matmul staging 16x16 tiles of A and B through dynamic shared memory, then an
/// elementwise ReLU that stages its block through dynamic shared memory as well.
inline PrimFunc matmul_relu() {
  pb::FunctionBuilder f("matmul_relu");
  pb::BufferRef A = f.arg_buffer("A", {128, 128}), B = f.arg_buffer("B", {128, 128});
  pb::BufferRef C = f.arg_buffer("C", {128, 128}), D = f.arg_buffer("D", {128, 128});
  f.target(Target::cuda());
  f.launch_thread("blockIdx.x", 64, [&](pb::Var block) {  // 8 x 8 tiles of 16 x 16
    pb::Var tx = f.launch_thread("threadIdx.x", 256);
    pb::BufferRef As = f.alloc_buffer("A_tile", {16, 16}, pb::f32, "shared.dyn");
    pb::BufferRef Bs = f.alloc_buffer("B_tile", {16, 16}, pb::f32, "shared.dyn");
    pb::BufferRef acc = f.alloc_buffer("acc", {1}, pb::f32, "local");
    pb::Var ty = f.bind("ty", tx / 16), tz = f.bind("tz", tx % 16);
    pb::Var row = f.bind("row", block / 8 * 16 + ty), col = f.bind("col", block % 8 * 16 + tz);
    acc[0] = 0.0;
    f.for_("k0", 8, [&](pb::Var k0) {
      As(ty, tz) = A(row, k0 * 16 + tz);
      Bs(ty, tz) = B(k0 * 16 + ty, col);
      f.sync_threads("shared.dyn");
      f.for_("k1", 16, [&](pb::Var k1) { acc[0] += As(ty, k1) * Bs(k1, tz); });
      f.sync_threads("shared.dyn");
    });
    C(row, col) = acc[0];
  });
  f.launch_thread("blockIdx.x", 64, [&](pb::Var block) {
    pb::Var tx = f.launch_thread("threadIdx.x", 256);
    pb::BufferRef T = f.alloc_buffer("staged", {256}, pb::f32, "shared.dyn");
    pb::Var e = f.bind("e", block * 256 + tx);
    T[tx] = C(e / 128, e % 128);
    f.sync_threads("shared.dyn");
    D(e / 128, e % 128) = pb::max(T[tx], 0.0);
  });
  return f.finish();
}

}  // namespace primjit::examples
