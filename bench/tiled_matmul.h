// bench_kernels' tiled GEMM, shared with bench_device_codegen: examples::matmul_relu's matmul
// for n x n float32 (n a multiple of 16): one 256-thread block per 16 x 16 tile of C, 16 x 16
// tiles of A and B staged through dynamic shared memory, one output per thread. The same
// tiling written by hand is bench/hand_kernels.cu's hand_tiled_matmul_<n>.
#pragma once

#include "primjit/builder.h"

namespace primjit::bench {

constexpr int kTile = 16;

inline PrimFunc tiled_matmul(int n) {
  namespace pb = primjit::builder;
  pb::FunctionBuilder f("tiled_matmul");
  pb::BufferRef A = f.arg_buffer("A", {n, n}), B = f.arg_buffer("B", {n, n});
  pb::BufferRef C = f.arg_buffer("C", {n, n});
  f.target(Target::cuda());
  const int tiles = n / kTile;
  pb::Var block = f.launch_thread("blockIdx.x", tiles * tiles);
  pb::Var tx = f.launch_thread("threadIdx.x", kTile * kTile);
  pb::BufferRef As = f.alloc_buffer("A_tile", {kTile, kTile}, pb::f32, "shared.dyn");
  pb::BufferRef Bs = f.alloc_buffer("B_tile", {kTile, kTile}, pb::f32, "shared.dyn");
  pb::BufferRef acc = f.alloc_buffer("acc", {1}, pb::f32, "local");
  pb::Var ty = f.bind("ty", tx / kTile), tz = f.bind("tz", tx % kTile);
  pb::Var row = f.bind("row", block / tiles * kTile + ty);
  pb::Var col = f.bind("col", block % tiles * kTile + tz);
  acc[0] = 0.0;
  f.for_("k0", tiles, [&](pb::Var k0) {
    As(ty, tz) = A(row, k0 * kTile + tz);
    Bs(ty, tz) = B(k0 * kTile + ty, col);
    f.sync_threads("shared.dyn");
    f.for_("k1", kTile, [&](pb::Var k1) { acc[0] += As(ty, k1) * Bs(k1, tz); });
    f.sync_threads("shared.dyn");
  });
  C(row, col) = acc[0];
  return f.finish();
}

}  // namespace primjit::bench
