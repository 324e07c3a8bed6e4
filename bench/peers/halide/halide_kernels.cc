// Halide pipelines of the peer benchmark. Dimension 0 is innermost (Halide's convention), so
// a row-major n x n matrix M is M(column, row). Unscheduled variants keep Halide's defaults
// (serial, scalar); the others name the schedule the primjit text writes as loops.
#include "bench/peers/halide/halide_kernels.h"

#include <Halide.h>

#include <stdexcept>

#include "bench/peers/halide/reference.h"

namespace primjit::bench::peers {
namespace {

namespace hl = Halide;

constexpr int kLanes = 8;  // float32 lanes of a 256-bit vector

hl::Buffer<float> wrap(const float* data, int64_t extent0, int64_t extent1 = 0) {
  auto* p = const_cast<float*>(data);
  if (extent1 == 0) return hl::Buffer<float>(p, static_cast<int>(extent0));
  return hl::Buffer<float>(p, static_cast<int>(extent0), static_cast<int>(extent1));
}

std::function<void()> compiled(hl::Func out, hl::Buffer<float> out_buffer) {
  hl::Pipeline pipeline(out);
  pipeline.compile_jit(hl::get_jit_target_from_environment());
  return [pipeline, out_buffer]() mutable { pipeline.realize(out_buffer); };
}

std::function<void()> saxpy(bool scheduled, const Arrays& arrays) {
  hl::ImageParam a(hl::Float(32), 1, "a"), b(hl::Float(32), 1, "b");
  hl::Param<float> alpha("alpha");
  hl::Var x("x"), xo("xo"), xi("xi");
  hl::Func c("saxpy");
  c(x) = a(x) * alpha + b(x);
  if (scheduled) {
    c.split(x, xo, xi, static_cast<int>(kSaxpyChunk), hl::TailStrategy::GuardWithIf)
        .parallel(xo)
        .vectorize(xi, kLanes);
  }
  a.set(wrap(arrays.a, arrays.n));
  b.set(wrap(arrays.b, arrays.n));
  alpha.set(arrays.alpha);
  return compiled(c, wrap(arrays.out, arrays.n));
}

// variant: "naive" (i-j-k, k innermost), "ikj", "parallel" (ikj, rows over threads), "tiled".
std::function<void()> matmul(const std::string& variant, const Arrays& arrays) {
  const int n = static_cast<int>(arrays.n);
  hl::ImageParam a(hl::Float(32), 2, "a"), b(hl::Float(32), 2, "b");
  hl::Var i("i"), j("j");
  hl::RDom k(0, n, "k");
  hl::Func prod("prod");
  prod(j, i) = 0.0f;
  prod(j, i) += a(k, i) * b(j, k);
  hl::Func c("matmul");
  if (variant == "naive") {
    c = prod;
    c.update().reorder(k.x, j, i);
  } else if (variant == "ikj" || variant == "parallel") {
    c = prod;
    c.vectorize(j, kLanes);
    c.update().reorder(j, k.x, i).vectorize(j, kLanes);
    if (variant == "parallel") {
      c.parallel(i);
      c.update().parallel(i);
    }
  } else {  // tiled: 4 x 16 tiles of C, each accumulated in registers over all of k
    c(j, i) = prod(j, i);
    hl::Var jo("jo"), io("io"), ji("ji"), ii("ii");
    c.tile(j, i, jo, io, ji, ii, static_cast<int>(kTileCols), static_cast<int>(kTileRows))
        .vectorize(ji, kLanes)
        .unroll(ii)
        .parallel(io);
    prod.compute_at(c, jo).vectorize(j, kLanes).unroll(i);
    prod.update().reorder(j, i, k.x).vectorize(j, kLanes).unroll(i);
  }
  a.set(wrap(arrays.a, n, n));
  b.set(wrap(arrays.b, n, n));
  return compiled(c, wrap(arrays.out, n, n));
}

// Per row: the maximum, e = exp(x - max), its sum, e / sum. Scheduled: rows over threads,
// e and the output vectorized, the max and sum reductions split into vector lanes (rfactor).
std::function<void()> softmax(bool scheduled, const Arrays& arrays) {
  const int rows = static_cast<int>(arrays.rows), cols = static_cast<int>(arrays.cols);
  hl::ImageParam x(hl::Float(32), 2, "x");
  hl::Var col("col"), row("row"), lane("lane");
  hl::RDom r(0, cols, "r");
  hl::Func mx("mx"), e("e"), s("s"), y("softmax");
  mx(row) = x(0, row);
  mx(row) = hl::max(mx(row), x(r, row));
  e(col, row) = hl::exp(x(col, row) - mx(row));
  s(row) = 0.0f;
  s(row) += e(r, row);
  y(col, row) = e(col, row) / s(row);
  mx.compute_at(y, row);
  e.compute_at(y, row);
  s.compute_at(y, row);
  if (scheduled) {
    y.parallel(row).vectorize(col, kLanes);
    e.vectorize(col, kLanes);
    for (hl::Func* reduction : {&mx, &s}) {
      hl::RVar outer("outer"), inner("inner");
      hl::Func lanes = reduction->update().split(r.x, outer, inner, kLanes).rfactor(inner, lane);
      lanes.compute_at(y, row).vectorize(lane);
      lanes.update().vectorize(lane);
    }
  }
  x.set(wrap(arrays.a, cols, rows));
  return compiled(y, wrap(arrays.out, cols, rows));
}

}  // namespace

std::function<void()> halide_runner(const std::string& kernel, const Arrays& arrays) {
  if (kernel == "saxpy_naive") return saxpy(false, arrays);
  if (kernel == "saxpy_scheduled") return saxpy(true, arrays);
  if (kernel == "matmul_naive") return matmul("naive", arrays);
  if (kernel == "matmul_ikj") return matmul("ikj", arrays);
  if (kernel == "matmul_parallel") return matmul("parallel", arrays);
  if (kernel == "matmul_tiled") return matmul("tiled", arrays);
  if (kernel == "softmax_plain") return softmax(false, arrays);
  if (kernel == "softmax_scheduled") return softmax(true, arrays);
  throw std::invalid_argument("no Halide pipeline for kernel '" + kernel + "'");
}

std::string halide_description() {
  return "Halide JIT target " + hl::get_jit_target_from_environment().to_string();
}

}  // namespace primjit::bench::peers
