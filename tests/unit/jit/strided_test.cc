// Strided and offset DLPack tensors (what NumPy and PyTorch views hand over): transposes,
// slices at a byte offset, every other row, against a C++ reference on llvm and emu under every
// policy; the key tells compact from strided calls; layouts the code cannot index are refused
// before anything compiles; the overlap check looks at the elements of strided views.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "jit/runtime/argument_memory.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/tensor.h"
#include "tests/unit/jit/jit_test_util.h"
#include "tests/unit/test_util.h"

namespace primjit {
namespace {

// B = A * 2 + 1 over (m, n) float32 matrices.
PrimFunc affine_function() {
  return parse(R"(
@T.prim_func
def affine(a: T.handle, b: T.handle):
    T.func_attr({"target": T.target("llvm")})
    m = T.int32()
    n = T.int32()
    A = T.match_buffer(a, (m, n), "float32")
    B = T.match_buffer(b, (m, n), "float32")
    for i, j in T.grid(m, n):
        B[i, j] = A[i, j] * T.float32(2) + T.float32(1)
)")
      ->lookup("affine");
}

// A 2-D float32 view of `base`: shape, strides (elements) and offset (elements).
struct View {
  int64_t shape[2];
  int64_t strides[2];
  DLTensor dl;
  View(float* base, int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride,
       int64_t offset) {
    shape[0] = rows;
    shape[1] = cols;
    strides[0] = row_stride;
    strides[1] = col_stride;
    dl = DLTensor{
        base, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, shape, strides, static_cast<uint64_t>(offset * 4)};
  }
  float at(int64_t i, int64_t j) const {
    return static_cast<const float*>(dl.data)[dl.byte_offset / 4 + i * strides[0] + j * strides[1]];
  }
};

// Storage whose element k holds k (so a wrong index shows), and a zeroed output store.
struct Store {
  std::vector<float> in, out;
  explicit Store(size_t n) : in(n), out(n, -7.0f) { std::iota(in.begin(), in.end(), 0.0f); }
};

// Calls `k` on (a, b) and compares every element of b with the reference; the elements of
// `out` outside b must keep their fill.
void expect_affine(const Kernel& k, View& a, View& b, const std::vector<float>& out,
                   const std::string& what) {
  std::vector<float> before = out;
  k(&a.dl, &b.dl);
  std::vector<bool> inside(out.size(), false);
  for (int64_t i = 0; i < b.shape[0]; ++i) {
    for (int64_t j = 0; j < b.shape[1]; ++j) {
      ASSERT_EQ(b.at(i, j), a.at(i, j) * 2 + 1) << what << " at " << i << "," << j;
      inside[static_cast<size_t>(b.dl.byte_offset / 4 + i * b.strides[0] + j * b.strides[1])] =
          true;
    }
  }
  for (size_t e = 0; e < out.size(); ++e) {
    if (!inside[e]) {
      ASSERT_EQ(out[e], before[e]) << what << ": element " << e << " was written";
    }
  }
}

struct Case {
  Target target;
  Policy policy;
};

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const Target& t : {Target::llvm(), Target::emu()}) {
    for (Policy p : {Policy::kExact, Policy::kDynamic, Policy::kAuto}) cases.push_back({t, p});
  }
  return cases;
}

std::string name(const Case& c) {
  return c.target.str() + (c.policy == Policy::kExact     ? " exact"
                           : c.policy == Policy::kDynamic ? " dynamic"
                                                          : " auto");
}

TEST(StridedTensors, TransposesSlicesAndEveryOtherRowMatchTheReference) {
  for (const Case& c : all_cases()) {
    Jit jit;
    Kernel k = jit.kernel(affine_function(), {.target = c.target, .policy = c.policy});
    Store s(8 * 10);
    // A transpose: the (10, 8) matrix read as (8, 10) with strides (1, 10).
    View at(s.in.data(), 8, 10, 1, 8, 0);
    View b(s.out.data(), 8, 10, 10, 1, 0);
    expect_affine(k, at, b, s.out, name(c) + " transpose");
    // Slices at an offset, in and out: rows 2..5, columns 3..8 of (8, 10) matrices.
    View in_slice(s.in.data(), 4, 6, 10, 1, 2 * 10 + 3);
    View out_slice(s.out.data(), 4, 6, 10, 1, 1 * 10 + 4);
    expect_affine(k, in_slice, out_slice, s.out, name(c) + " slices");
    // Every other row, into a compact output at an offset (compact, but not at the start).
    View even_rows(s.in.data(), 4, 10, 20, 1, 0);
    View tail(s.out.data(), 4, 10, 10, 1, 40);
    expect_affine(k, even_rows, tail, s.out, name(c) + " every other row");
    // Every other column of the slice (inner stride 2).
    View odd_columns(s.in.data(), 8, 5, 10, 2, 1);
    View dense(s.out.data(), 8, 5, 5, 1, 0);
    expect_affine(k, odd_columns, dense, s.out, name(c) + " every other column");
    // A column of the matrix as an (8, 1) view: any stride in the unit dimension.
    View column(s.in.data(), 8, 1, 10, 12345, 7);
    View one(s.out.data(), 8, 1, 1, 1, 0);
    expect_affine(k, column, one, s.out, name(c) + " column");
    // And the compact call still computes the same.
    View whole_in(s.in.data(), 8, 10, 10, 1, 0), whole_out(s.out.data(), 8, 10, 10, 1, 0);
    expect_affine(k, whole_in, whole_out, s.out, name(c) + " compact");
  }
}

TEST(StridedTensors, TheKeyTellsCompactFromStridedCalls) {
  for (const Case& c : all_cases()) {
    Jit jit;
    Kernel k = jit.kernel(affine_function(), {.target = c.target, .policy = c.policy});
    Store s(16 * 16);
    View compact_in(s.in.data(), 4, 4, 4, 1, 0), compact_out(s.out.data(), 4, 4, 4, 1, 0);
    expect_affine(k, compact_in, compact_out, s.out, name(c) + " compact");
    EXPECT_EQ(k.stats().misses, 1u) << name(c);
    // The same shapes as a strided view: a variant of its own, not the compact one.
    View rows(s.in.data(), 4, 4, 16, 1, 0), out(s.out.data(), 4, 4, 4, 1, 100);
    expect_affine(k, rows, out, s.out, name(c) + " strided");
    EXPECT_EQ(k.stats().misses, 2u) << name(c);
    // Again, and the compact call again: both found.
    expect_affine(k, rows, out, s.out, name(c) + " strided again");
    expect_affine(k, compact_in, compact_out, s.out, name(c) + " compact again");
    EXPECT_EQ(k.stats().misses, 2u) << name(c);
    // Other row strides: compiled in under exact and auto (new variant), symbolic under
    // dynamic (with the unit inner stride kept as a fact).
    View other(s.in.data(), 4, 4, 9, 1, 0);
    expect_affine(k, other, out, s.out, name(c) + " other strides");
    EXPECT_EQ(k.stats().misses, c.policy == Policy::kDynamic ? 2u : 3u) << name(c);
    // A transpose has no unit inner stride: a new variant under every policy.
    View transposed(s.in.data(), 4, 4, 1, 4, 0);
    expect_affine(k, transposed, out, s.out, name(c) + " transposed");
    EXPECT_EQ(k.stats().misses, c.policy == Policy::kDynamic ? 3u : 4u) << name(c);
    std::vector<std::string> reasons = k.stats().reasons;
    ASSERT_FALSE(reasons.empty());
    EXPECT_NE(reasons.back().find("A layout: strides"), std::string::npos) << reasons.back();
  }
}

// Under auto, a tensor's strides follow its dimensions: compiled in while they are, symbolic
// (the unit inner stride kept) once one of its dimensions is.
TEST(StridedTensors, AutoMakesStridesSymbolicWithTheirTensorsDimensions) {
  for (const Target& target : {Target::llvm(), Target::emu()}) {
    Jit jit;
    Kernel k = jit.kernel(affine_function(),
                          {.target = target, .policy = Policy::kAuto, .auto_threshold = 2});
    Store s(64 * 8);
    uint64_t misses = 0;
    for (int64_t rows : {2, 3, 4, 5, 6}) {
      View a(s.in.data(), rows, 4, 8 + rows, 1, 1), b(s.out.data(), rows, 4, 4, 1, 0);
      expect_affine(k, a, b, s.out, target.str() + " rows " + std::to_string(rows));
      misses = k.stats().misses;
    }
    // Two exact variants, then m symbolic: one variant with symbolic strides for A.
    EXPECT_EQ(misses, 3u) << target.str();
    View other(s.in.data(), 7, 4, 30, 1, 2), b(s.out.data(), 7, 4, 4, 1, 0);
    expect_affine(k, other, b, s.out, target.str() + " other strides");
    EXPECT_EQ(k.stats().misses, 3u) << target.str();
  }
}

TEST(StridedTensors, UnsupportedLayoutsAreRefusedBeforeAnyCompile) {
  for (const Case& c : all_cases()) {
    Jit jit;
    Kernel k = jit.kernel(affine_function(), {.target = c.target, .policy = c.policy});
    Store s(100);
    View out(s.out.data(), 4, 4, 4, 1, 0);
    View reversed(s.in.data(), 4, 4, -4, 1, 12);
    EXPECT_ERROR_CONTAINS(k(&reversed.dl, &out.dl),
                          "argument #0 ('A') of 'affine': stride -4 of dimension 0 is negative");
    // A broadcast (stride 0) may be read, not written.
    View broadcast(s.in.data(), 4, 4, 0, 1, 0);
    EXPECT_ERROR_CONTAINS(k(&out.dl, &broadcast.dl),
                          "argument #1 ('B') of 'affine': its strides make different elements "
                          "share memory");
    View overlapping_rows(s.out.data(), 4, 4, 2, 1, 0);
    EXPECT_ERROR_CONTAINS(k(&out.dl, &overlapping_rows.dl), "share memory");
    // A byte offset that is not a whole number of elements.
    View odd(s.in.data(), 4, 4, 4, 1, 0);
    odd.dl.byte_offset = 6;
    EXPECT_ERROR_CONTAINS(k(&odd.dl, &out.dl),
                          "argument #0 ('A') of 'affine': byte_offset 6 is not a whole number");
    // Elements past what the int32 index reaches (never touched: refused first).
    View far(s.in.data(), 4, 4, 4, 1, 0);
    far.dl.byte_offset = uint64_t{1} << 33;
    EXPECT_ERROR_CONTAINS(k(&far.dl, &out.dl),
                          "argument #0 ('A') of 'affine': its elements lie up to 2147483663 "
                          "elements past its data pointer");
    View far_rows(s.in.data(), 4, 4, int64_t{1} << 30, 1, 0);
    EXPECT_ERROR_CONTAINS(k(&far_rows.dl, &out.dl), "more than the index dtype int32");
    EXPECT_EQ(k.stats().misses, 0u) << name(c);
    // The broadcast as the input is fine.
    View dense(s.out.data(), 4, 4, 4, 1, 20);
    expect_affine(k, broadcast, dense, s.out, name(c) + " broadcast input");
  }
  // A function that reaches A's data through another buffer cannot index a strided A.
  PrimFunc flat = parse(R"(
@T.prim_func
def flat_copy(a: T.handle, b: T.handle):
    T.func_attr({"target": T.target("llvm")})
    A = T.match_buffer(a, (4, 4), "float32")
    B = T.match_buffer(b, (16,), "float32")
    A_flat = T.decl_buffer((16,), "float32", data=A.data)
    for i in range(16):
        B[i] = A_flat[i]
)")
                      ->lookup("flat_copy");
  for (const Case& c : all_cases()) {
    Jit jit;
    Kernel k = jit.kernel(flat, {.target = c.target, .policy = c.policy});
    std::vector<float> in(64, 1.0f), out(16);
    View rows(in.data(), 4, 4, 8, 1, 0);
    int64_t n = 16;
    DLTensor b{out.data(), {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, &n, nullptr, 0};
    EXPECT_ERROR_CONTAINS(k(&rows.dl, &b), "argument #0 ('A') of 'flat_copy' is a strided view");
    EXPECT_ERROR_CONTAINS(k(&rows.dl, &b), "it declares buffer 'A_flat' over A.data");
    View offset(in.data(), 4, 4, 4, 1, 4);
    EXPECT_ERROR_CONTAINS(k(&offset.dl, &b), "is an offset view");
    EXPECT_EQ(k.stats().misses, 0u) << name(c);
    View compact(in.data(), 4, 4, 4, 1, 0);
    k(&compact.dl, &b);
    EXPECT_EQ(out[15], 1.0f);
  }
}

TEST(StridedTensors, OverlapLooksAtTheElementsOfStridedViews) {
  for (const Case& c : all_cases()) {
    Jit jit;
    Kernel k = jit.kernel(affine_function(), {.target = c.target, .policy = c.policy});
    // Columns 0..3 and 4..7 of one (4, 8) matrix: their byte ranges interleave, their
    // elements do not.
    std::vector<float> m(32);
    std::iota(m.begin(), m.end(), 0.0f);
    View left(m.data(), 4, 4, 8, 1, 0), right(m.data(), 4, 4, 8, 1, 4);
    expect_affine(k, left, right, m, name(c) + " column halves");
    // Columns 1..4 and 4..7 share column 4.
    View shifted(m.data(), 4, 4, 8, 1, 1);
    EXPECT_ERROR_CONTAINS(k(&shifted.dl, &right.dl),
                          "argument #0 ('A') and argument #1 ('B') of 'affine' overlap");
    // Even and odd elements of a row, as (4, 4) views with strides (8, 2).
    View even(m.data(), 4, 4, 8, 2, 0), odd(m.data(), 4, 4, 8, 2, 1);
    expect_affine(k, even, odd, m, name(c) + " even and odd");
    View odd_too(m.data(), 4, 4, 8, 2, 3);  // elements 3, 5, 7, ...: shares with odd
    EXPECT_ERROR_CONTAINS(k(&odd.dl, &odd_too.dl), "overlap in memory");
  }
}

TEST(StridedTensors, SharedElementsSearch) {
  std::vector<float> m(64);
  auto view = [&](int64_t rows, int64_t cols, int64_t rs, int64_t cs, int64_t off) {
    return View(m.data(), rows, cols, rs, cs, off);
  };
  auto share = [](const View& a, const View& b) { return jit::may_share_elements(a.dl, b.dl); };
  EXPECT_FALSE(share(view(4, 4, 8, 1, 0), view(4, 4, 8, 1, 4)));
  EXPECT_TRUE(share(view(4, 5, 8, 1, 0), view(4, 4, 8, 1, 4)));
  EXPECT_FALSE(share(view(4, 4, 8, 2, 0), view(4, 4, 8, 2, 1)));
  EXPECT_TRUE(share(view(4, 4, 8, 2, 1), view(4, 4, 8, 2, 3)));
  // A transpose against the matrix it transposes: the diagonal is common.
  EXPECT_TRUE(share(view(4, 4, 4, 1, 0), view(4, 4, 1, 4, 0)));
  // Rows 0, 2 against rows 1, 3 of a (4, 8) matrix.
  EXPECT_FALSE(share(view(2, 8, 16, 1, 0), view(2, 8, 16, 1, 8)));
  // Different element sizes: the byte ranges decide (conservatively true).
  View a = view(4, 4, 8, 1, 0), b = view(4, 4, 8, 1, 4);
  b.dl.dtype = {kDLFloat, 64, 1};
  EXPECT_TRUE(share(a, b));
}

// On the GPU: every other row, a transpose and a slice at a 64-byte offset of one device
// matrix, against the reference; an offset the code's vector loads cannot take is refused.
TEST(StridedTensors, CudaViewsMatchTheReference) {
  if (!test::have_gpu()) GTEST_SKIP() << "no CUDA driver or device";
  PrimFunc f = parse(R"(
@T.prim_func
def affine_cuda(a: T.handle, b: T.handle):
    T.func_attr({"target": T.target("cuda", arch="sm_90", host="llvm")})
    m = T.int32()
    A = T.match_buffer(a, (m, 32), "float32")
    B = T.match_buffer(b, (m, 32), "float32")
    bx = T.launch_thread("blockIdx.x", m)
    tx = T.launch_thread("threadIdx.x", 32)
    B[bx, tx] = A[bx, tx] * T.float32(2) + T.float32(1)
)")
                   ->lookup("affine_cuda");
  Tensor host = Tensor::zeros({64, 64}, DataType::Float(32));
  std::iota(host.data<float>(), host.data<float>() + 64 * 64, 0.0f);
  Tensor x = host.to(test::kGpu);
  for (Policy policy : {Policy::kExact, Policy::kDynamic}) {
    Jit jit;
    Kernel k = jit.kernel(f, {.target = Target::cuda(), .policy = policy});
    struct Layout {
      const char* what;
      int64_t strides[2];
      int64_t offset;
    };
    for (const Layout& l : {Layout{"every other row", {128, 1}, 0}, Layout{"transpose", {1, 64}, 0},
                            Layout{"slice at 64 bytes", {64, 1}, 16}}) {
      int64_t shape[2] = {32, 32};
      int64_t strides[2] = {l.strides[0], l.strides[1]};
      DLTensor a{x.dl()->data,
                 test::kGpu,
                 2,
                 {kDLFloat, 32, 1},
                 shape,
                 strides,
                 static_cast<uint64_t>(l.offset * 4)};
      Tensor out = Tensor::zeros({32, 32}, DataType::Float(32), test::kGpu);
      k(&a, out);
      Tensor b = out.to(test::kCpu);
      for (int64_t i = 0; i < 32; ++i) {
        for (int64_t j = 0; j < 32; ++j) {
          float in = host.data<float>()[l.offset + i * strides[0] + j * strides[1]];
          ASSERT_EQ(b.data<float>()[i * 32 + j], in * 2 + 1) << l.what << " " << i << "," << j;
        }
      }
    }
    uint64_t compiled = k.stats().misses;
    int64_t shape[2] = {32, 32}, strides[2] = {64, 1};
    DLTensor odd{x.dl()->data, test::kGpu, 2, {kDLFloat, 32, 1}, shape, strides, 4};
    Tensor out = Tensor::zeros({32, 32}, DataType::Float(32), test::kGpu);
    EXPECT_ERROR_CONTAINS(k(&odd, out), "argument #0 ('A') of 'affine_cuda': its data");
    EXPECT_ERROR_CONTAINS(k(&odd, out), "is not aligned to 64 bytes");
    EXPECT_EQ(k.stats().misses, compiled);
  }
}

}  // namespace
}  // namespace primjit

namespace primjit {
namespace {

// A buffer that declares its own strides is checked like any other view: its compiled code
// binds the strides, but only the call can see that a written view's elements share memory.
TEST(StridedTensors, DeclaredStridesOfAWrittenBufferMustKeepElementsDistinct) {
  Jit jit;
  Kernel k = jit.kernel(parse(R"(
@T.prim_func
def fill(b: T.handle):
    T.func_attr({"target": T.target("llvm")})
    m = T.int32()
    n = T.int32()
    s0 = T.int32()
    B = T.match_buffer(b, (m, n), "float32", strides=(s0, 1))
    for i, j in T.grid(m, n):
        B[i, j] = T.Cast("float32", i * n + j)
)")
                            ->lookup("fill"),
                        {.target = Target::llvm()});
  Store s(100);
  View broadcast(s.out.data(), 4, 4, 0, 1, 0);
  EXPECT_ERROR_CONTAINS(k(&broadcast.dl), "its strides make different elements share memory");
  View reversed(s.out.data(), 4, 4, -4, 1, 12);
  EXPECT_ERROR_CONTAINS(k(&reversed.dl), "stride -4 of dimension 0 is negative");
  EXPECT_EQ(k.stats().misses, 0u);         // refused before anything compiled
  View rows(s.out.data(), 4, 4, 8, 1, 0);  // every other row: fine
  k(&rows.dl);
  EXPECT_EQ(s.out[8 + 3], 7.0f);
}

}  // namespace
}  // namespace primjit
