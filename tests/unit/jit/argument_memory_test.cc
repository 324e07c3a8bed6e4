// Call-time checks of the memory of tensor arguments (docs/semantics.md, "Arguments"): data
// aligned as the compiled code assumes, and no overlap between two tensors one of which the
// function may write. Both on the first call and on cached calls (the fast path), on llvm and
// emu; cuda's 64-byte rule is checked before the driver is needed, so it runs without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/tensor.h"
#include "tests/unit/jit/jit_test_util.h"
#include "tests/unit/test_util.h"

namespace primjit {
namespace {

using test::scale_function;

// A 1-D float32 view of `n` elements starting `offset_bytes` into `base` (its data pointer:
// the buffers here declare no element offset, so byte_offset must be 0).
DLTensor view(void* base, int64_t* n, int64_t offset_bytes, DLDevice device = {kDLCPU, 0}) {
  return DLTensor{
      static_cast<char*>(base) + offset_bytes, device, 1, {kDLFloat, 32, 1}, n, nullptr, 0};
}

const Target kCpuTargets[] = {Target::llvm(), Target::emu()};

TEST(ArgumentMemory, TensorsAre64ByteAligned) {
  for (int64_t n : {1, 3, 17, 1000}) {
    Tensor t = Tensor::zeros({n}, DataType::Int(8));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.dl()->data) % kTensorAlignment, 0u) << n;
    EXPECT_EQ(t.data<int8_t>()[n - 1], 0);  // zero-filled
  }
}

TEST(ArgumentMemory, OverlappingArgumentsOneWrittenAreAnErrorNamingBoth) {
  for (const Target& target : kCpuTargets) {
    Jit jit;
    Kernel k = jit.kernel(scale_function(), {.target = target});
    Tensor x = Tensor::zeros({8}, DataType::Float(32));
    EXPECT_ERROR_CONTAINS(k(x, x, 2.0f),
                          "argument #0 ('A') and argument #1 ('B') of 'scale' overlap in memory");
    EXPECT_ERROR_CONTAINS(k(x, x, 2.0f), "'scale' may write argument #1 ('B')");
    EXPECT_EQ(k.stats().misses, 0u) << target.str();  // nothing compiled for a bad call

    // Views into one allocation: overlapping by one element is refused, adjacent ones are fine.
    std::vector<float> buffer(32, 1.0f);
    int64_t n = 8;
    DLTensor a = view(buffer.data(), &n, 0), b = view(buffer.data(), &n, 7 * 4);
    EXPECT_ERROR_CONTAINS(k(&a, &b, 2.0f), "overlap in memory");
    DLTensor c = view(buffer.data(), &n, 8 * 4);
    k(&a, &c, 3.0f);
    EXPECT_EQ(buffer[8], 3.0f) << target.str();
    // A cached call (the fast path) checks as much.
    EXPECT_ERROR_CONTAINS(k(&a, &b, 2.0f), "overlap in memory");
    EXPECT_ERROR_CONTAINS(k(&b, &b, 2.0f), "overlap in memory");
    k(&a, &c, 4.0f);
    EXPECT_EQ(buffer[15], 4.0f) << target.str();
  }
}

TEST(ArgumentMemory, OverlappingArgumentsThatAreOnlyReadAreAccepted) {
  for (const Target& target : kCpuTargets) {
    Jit jit;
    Kernel k = jit.kernel(parse(test::kVectorAddText)->lookup("vadd"), {.target = target});
    Tensor x = Tensor::zeros({4}, DataType::Float(32)), y = Tensor::zeros({4}, DataType::Float(32));
    for (int i = 0; i < 4; ++i) x.data<float>()[i] = static_cast<float>(i);
    k(x, x, y);  // A and B alias; neither is written
    for (int i = 0; i < 4; ++i) EXPECT_EQ(y.data<float>()[i], 2.0f * i) << target.str();
    EXPECT_ERROR_CONTAINS(k(x, y, x), "argument #0 ('A') and argument #2 ('C') of 'vadd'");
    // Empty tensors occupy no bytes: they overlap nothing.
    int64_t zero = 0;
    float one[1] = {0};
    DLTensor e = view(one, &zero, 0);
    k(&e, &e, &e);
  }
}

TEST(ArgumentMemory, AnEmptyTensorOverlapsNothing) {
  // B is written; A has its own length and may be empty, pointing into B's bytes.
  PrimFunc f = parse(R"(
@T.prim_func
def fill(a: T.handle, b: T.handle):
    T.func_attr({"target": T.target("llvm")})
    m = T.int32()
    n = T.int32()
    A = T.match_buffer(a, (m,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    for i in range(n):
        B[i] = T.float32(m)
)")
                   ->lookup("fill");
  for (const Target& target : kCpuTargets) {
    Jit jit;
    Kernel k = jit.kernel(f, {.target = target});
    std::vector<float> buffer(16, 0.0f);
    int64_t zero = 0, eight = 8, two = 2;
    DLTensor empty = view(buffer.data(), &zero, 4 * 4), out = view(buffer.data(), &eight, 0);
    for (int call = 0; call < 2; ++call) {  // the first call, then a cached one
      k(&empty, &out);
      EXPECT_EQ(buffer[7], 0.0f) << target.str();
    }
    DLTensor inside = view(buffer.data(), &two, 4 * 4);
    EXPECT_ERROR_CONTAINS(k(&inside, &out), "overlap in memory");
  }
}

TEST(ArgumentMemory, MisalignedDataIsAnErrorNamingTheArgumentAndAlignment) {
  for (const Target& target : kCpuTargets) {
    Jit jit;
    Kernel k = jit.kernel(scale_function(), {.target = target});
    alignas(64) static float storage[2][32];
    int64_t n = 8;
    auto* bytes = reinterpret_cast<char*>(storage[0]);
    DLTensor odd{bytes + 2, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, &n, nullptr, 0};
    DLTensor out = view(storage[1], &n, 0);
    EXPECT_ERROR_CONTAINS(k(&odd, &out, 2.0f),
                          "argument #0 ('A') of 'scale': its data (data + byte_offset = 0x");
    EXPECT_ERROR_CONTAINS(k(&odd, &out, 2.0f), "is not aligned to 4 bytes, which code for target " +
                                                   target->kind + " assumes (the element size)");
    // Element-aligned views are fine, others are not, also when the call is cached.
    DLTensor in = view(storage[0], &n, 4);
    k(&in, &out, 2.0f);
    DLTensor shifted = view(storage[1], &n, 6);
    EXPECT_ERROR_CONTAINS(k(&in, &shifted, 2.0f),
                          "argument #1 ('B') of 'scale': its data (data + byte_offset = 0x");
  }
}

TEST(ArgumentMemory, CudaCodeAssumesTheBufferDataAlignment) {
  // The arrays are never dereferenced: the check comes before the driver is needed.
  alignas(64) static float storage[2][32];
  int64_t n = 8;
  Jit jit;
  Kernel k = jit.kernel(scale_function(), {.target = Target::cuda("sm_90")});
  DLTensor a = view(storage[0], &n, 16, {kDLCUDA, 0}), b = view(storage[1], &n, 0, {kDLCUDA, 0});
  EXPECT_ERROR_CONTAINS(k(&a, &b, 1.0f),
                        "argument #0 ('A') of 'scale': its data (data + byte_offset = 0x");
  EXPECT_ERROR_CONTAINS(k(&a, &b, 1.0f), "is not aligned to 64 bytes, which code for target cuda");
  EXPECT_ERROR_CONTAINS(k(&a, &b, 1.0f), "(the buffer's data_alignment, for vector loads)");
  EXPECT_EQ(k.stats().misses, 0u);
}

}  // namespace
}  // namespace primjit
