// Every dtype computes exactly as the IR says: integer wraparound, truncating and flooring
// division, narrow floats rounded to nearest even through float32 (primjit/float_formats.h),
// vectors.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "primjit/float_formats.h"
#include "tests/unit/emu/emu_test_util.h"

namespace primjit::jit::emu {
namespace {

using test::parse_module;

TEST(EmuDtypes, IntegerArithmeticWrapsAround) {
  IRModule m = parse_module(R"(
@T.prim_func
def main(A: T.Buffer((4,), "int8"), U: T.Buffer((2,), "uint8"), K: T.Buffer((4,), "int32"), O: T.Buffer((10,), "int32")):
    O[0] = T.Cast("int32", A[0] + A[1])
    O[1] = T.Cast("int32", A[2] * A[3])
    O[2] = T.Cast("int32", A[0] - A[2] - A[2] - A[2])
    O[3] = T.Cast("int32", U[0] + U[1])
    O[4] = T.Cast("int32", U[1] - U[0])
    O[5] = K[0] + K[1]
    O[6] = T.Cast("int32", T.Cast("int8", K[2]))
    O[7] = T.Cast("int32", T.Cast("uint8", K[3]))
    O[8] = T.Cast("int32", -A[0] - A[3])
    O[9] = K[0] * K[0]
)");
  HostTensor A(DataType::Int(8), {4}), U(DataType::UInt(8), {2}), I(DataType::Int(32), {4});
  HostTensor O(DataType::Int(32), {10});
  A.set(0, 127);
  A.set(1, 1);
  A.set(2, 100);
  A.set(3, 3);
  U.set(0, 250);
  U.set(1, 10);
  I.set(0, 2147483647);
  I.set(1, 1);
  I.set(2, 300);
  I.set(3, -1);
  Interpreter(m).run("main", {A.dl(), U.dl(), I.dl(), O.dl()});
  EXPECT_EQ(O.get(0), -128);  // 127 + 1
  EXPECT_EQ(O.get(1), 44);    // 300 - 256
  EXPECT_EQ(O.get(2), static_cast<int8_t>(127 - 300));
  EXPECT_EQ(O.get(3), 4);   // 260 - 256
  EXPECT_EQ(O.get(4), 16);  // 10 - 250 + 256
  EXPECT_EQ(O.get(5), -2147483648.0);
  EXPECT_EQ(O.get(6), 44);   // int8(300)
  EXPECT_EQ(O.get(7), 255);  // uint8(-1)
  EXPECT_EQ(O.get(8), 126);  // -127 - 3 = -130 + 256
  EXPECT_EQ(O.get(9), 1);    // (2^31 - 1)^2 mod 2^32
}

TEST(EmuDtypes, FloorAndTruncDivisionOfNegatives) {
  IRModule m = parse_module(R"(
@T.prim_func
def main(A: T.Buffer((2,), "int32"), L: T.Buffer((2,), "int64"), O: T.Buffer((8,), "int32"), P: T.Buffer((4,), "int64")):
    O[0] = A[0] // A[1]
    O[1] = A[0] % A[1]
    O[2] = T.truncdiv(A[0], A[1])
    O[3] = T.truncmod(A[0], A[1])
    O[4] = T.min(A[0], A[1])
    O[5] = T.max(A[0], A[1])
    O[6] = A[0] // 4
    O[7] = A[0] % 4
    P[0] = L[0] // L[1]
    P[1] = L[0] % L[1]
    P[2] = T.truncdiv(L[0], L[1])
    P[3] = T.truncmod(L[0], L[1])
)");
  Interpreter interp(m);
  auto floordiv = [](int64_t a, int64_t b) {
    return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
  };
  auto floormod = [&](int64_t a, int64_t b) { return a - floordiv(a, b) * b; };
  int checked = 0;
  for (int a = -9; a <= 9; ++a) {
    for (int b : {-4, -3, -1, 1, 2, 3, 5}) {
      HostTensor A(DataType::Int(32), {2}), L(DataType::Int(64), {2});
      HostTensor O(DataType::Int(32), {8}), P(DataType::Int(64), {4});
      A.set(0, a);
      A.set(1, b);
      L.set(0, a * 1000003);
      L.set(1, b);
      interp.run("main", {A.dl(), L.dl(), O.dl(), P.dl()});
      SCOPED_TRACE(std::to_string(a) + " / " + std::to_string(b));
      EXPECT_EQ(O.get(0), floordiv(a, b));
      EXPECT_EQ(O.get(1), floormod(a, b));
      EXPECT_EQ(O.get(2), a / b);
      EXPECT_EQ(O.get(3), a % b);
      EXPECT_EQ(O.get(4), std::min(a, b));
      EXPECT_EQ(O.get(5), std::max(a, b));
      EXPECT_EQ(O.get(6), floordiv(a, 4));
      EXPECT_EQ(O.get(7), floormod(a, 4));
      const int64_t la = int64_t{a} * 1000003;
      EXPECT_EQ(P.get(0), floordiv(la, b));
      EXPECT_EQ(P.get(1), floormod(la, b));
      EXPECT_EQ(P.get(2), la / b);
      EXPECT_EQ(P.get(3), la % b);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 19 * 7);
  // -7 // 2 == -4 and -7 % 2 == 1 (expr.h's examples).
  HostTensor A(DataType::Int(32), {2}), L(DataType::Int(64), {2}), O(DataType::Int(32), {8}),
      P(DataType::Int(64), {4});
  A.set(0, -7);
  A.set(1, 2);
  L.set(1, 1);
  interp.run("main", {A.dl(), L.dl(), O.dl(), P.dl()});
  EXPECT_EQ(O.get(0), -4);
  EXPECT_EQ(O.get(1), 1);
  EXPECT_EQ(O.get(2), -3);
  EXPECT_EQ(O.get(3), -1);
}

// Values chosen to hit ties, subnormals, overflow and NaN in the narrow formats.
std::vector<float> tricky_floats() {
  // A signalling NaN: exponent all ones, quiet bit clear, payload 1.
  const float signalling_nan = std::bit_cast<float>(uint32_t{0x7F800001});
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.5f,
                          0.1f,
                          1.0f / 3.0f,
                          2049.0f,
                          2051.0f,
                          65504.0f,
                          65520.0f,
                          70000.0f,
                          1e-7f,
                          6e-8f,
                          3e-5f,
                          448.0f,
                          464.0f,
                          480.0f,
                          1000.0f,
                          57344.0f,
                          61440.0f,
                          1e6f,
                          -1e6f,
                          0.0009765625f,
                          1.00390625f,
                          1.01171875f,
                          3.140625f,
                          0.0078125f,
                          1e-3f,
                          1e-40f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(),
                          -std::numeric_limits<float>::quiet_NaN(),
                          signalling_nan};
  for (float base : {1.0f, 3.0f, 100.0f}) {
    for (int k = 0; k < 8; ++k) v.push_back(base + k * 0.0625f + 0.03125f);  // halfway points
  }
  return v;
}

struct NarrowCase {
  const char* dtype;
  DataType type;
  const fp::Format* format;
};

class EmuNarrowFloat : public ::testing::TestWithParam<NarrowCase> {};

TEST_P(EmuNarrowFloat, CastsRoundLikeFloatFormats) {
  const NarrowCase& c = GetParam();
  std::string text = R"(
@T.prim_func
def main(X: T.Buffer((N,), "float32"), Y: T.Buffer((N,), "DTYPE"), Z: T.Buffer((N,), "float32")):
    for i in range(N):
        Y[i] = T.Cast("DTYPE", X[i])
        Z[i] = T.Cast("float32", Y[i])
)";
  const std::vector<float> values = tricky_floats();
  const std::string n = std::to_string(values.size());
  for (size_t p; (p = text.find("DTYPE")) != std::string::npos;) text.replace(p, 5, c.dtype);
  for (size_t p; (p = text.find("N,")) != std::string::npos;) text.replace(p, 1, n);
  for (size_t p; (p = text.find("range(N)")) != std::string::npos;) text.replace(p + 6, 1, n);
  IRModule m = parse_module(text);
  HostTensor X(DataType::Float(32), {static_cast<int64_t>(values.size())});
  HostTensor Y(c.type, {static_cast<int64_t>(values.size())});
  HostTensor Z(DataType::Float(32), {static_cast<int64_t>(values.size())});
  // The inputs' bits as they are: converting through double would quiet the signalling NaN.
  std::memcpy(X.dl()->data, values.data(), values.size() * sizeof(float));
  Interpreter(m).run("main", {X.dl(), Y.dl(), Z.dl()});
  const int bytes = c.type.bits() / 8;
  const uint32_t sign_bit = 1u << (c.type.bits() - 1);
  int nans = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    SCOPED_TRACE(testing::Message() << values[i] << " (bits 0x" << std::hex
                                    << std::bit_cast<uint32_t>(values[i]) << ")");
    uint32_t stored = 0;
    std::memcpy(&stored, static_cast<uint8_t*>(Y.dl()->data) + i * bytes,
                static_cast<size_t>(bytes));
    EXPECT_EQ(stored, fp::encode(*c.format, values[i]));
    const float expected = fp::round_to(*c.format, values[i]);
    const float got = static_cast<float>(Z.get(static_cast<int64_t>(i)));
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(got));
      // Every NaN, signalling or quiet, becomes the format's canonical NaN with its sign kept.
      ASSERT_TRUE(std::isnan(values[i]));
      EXPECT_EQ(stored, (std::signbit(values[i]) ? sign_bit : 0u) | c.format->nan_bits);
      EXPECT_EQ(std::signbit(got), std::signbit(values[i]));
      ++nans;
    } else {
      EXPECT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(expected));
    }
  }
  EXPECT_EQ(nans, 3);  // the NaN inputs took the NaN branch
}

TEST_P(EmuNarrowFloat, ArithmeticRoundsEachResultThroughFloat32) {
  const NarrowCase& c = GetParam();
  std::string text = R"(
@T.prim_func
def main(A: T.Buffer((64,), "DTYPE"), B: T.Buffer((64,), "DTYPE"), C: T.Buffer((64,), "DTYPE"), D: T.Buffer((64,), "DTYPE")):
    for i in range(64):
        C[i] = A[i] + B[i]
        D[i] = A[i] * B[i] - A[i] / B[i]
)";
  for (size_t p; (p = text.find("DTYPE")) != std::string::npos;) text.replace(p, 5, c.dtype);
  IRModule m = parse_module(text);
  HostTensor A(c.type, {64}), B(c.type, {64}), C(c.type, {64}), D(c.type, {64});
  for (int i = 0; i < 64; ++i) {
    A.set(i, 1.0 + i * 37.25);
    B.set(i, 0.375 + i * 0.8125);
  }
  Interpreter(m).run("main", {A.dl(), B.dl(), C.dl(), D.dl()});
  auto r = [&](float x) { return fp::round_to(*c.format, x); };
  int inexact = 0;
  for (int i = 0; i < 64; ++i) {
    const float a = static_cast<float>(A.get(i)), b = static_cast<float>(B.get(i));
    EXPECT_EQ(static_cast<float>(C.get(i)), r(a + b)) << i;
    EXPECT_EQ(static_cast<float>(D.get(i)), r(r(a * b) - r(a / b))) << i;
    inexact += r(a + b) != a + b;
  }
  EXPECT_GT(inexact, 0);  // the rounding was exercised
}

INSTANTIATE_TEST_SUITE_P(
    Formats, EmuNarrowFloat,
    ::testing::Values(NarrowCase{"float16", DataType::Float(16), &fp::kFloat16},
                      NarrowCase{"bfloat16", DataType::BFloat16(), &fp::kBFloat16},
                      NarrowCase{"float8_e4m3fn", DataType::Float8E4M3FN(), &fp::kFloat8E4M3FN},
                      NarrowCase{"float8_e5m2", DataType::Float8E5M2(), &fp::kFloat8E5M2}),
    [](const ::testing::TestParamInfo<NarrowCase>& info) { return std::string(info.param.dtype); });

TEST(EmuDtypes, Float32ArithmeticIsSinglePrecision) {
  IRModule m = parse_module(R"(
@T.prim_func
def main(A: T.Buffer((3,), "float32"), D: T.Buffer((3,), "float64")):
    A[2] = A[0] + A[1]
    D[2] = D[0] + D[1]
)");
  HostTensor A(DataType::Float(32), {3}), D(DataType::Float(64), {3});
  A.set(0, 16777216.0);  // 2^24: adding 1 is lost in float32
  A.set(1, 1.0);
  D.set(0, 16777216.0);
  D.set(1, 1.0);
  Interpreter(m).run("main", {A.dl(), D.dl()});
  EXPECT_EQ(A.get(2), 16777216.0);
  EXPECT_EQ(D.get(2), 16777217.0);
}

TEST(EmuDtypes, VectorsRampsBroadcastsAndReinterpret) {
  IRModule m = parse_module(R"(
@T.prim_func
def main(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"), H: T.Buffer((4,), "float16"), K: T.Buffer((2,), "int32"), M: T.Buffer((8,), "int32")):
    x4: T.float32x4 = A[T.Ramp(0, 4, 4)] * T.Broadcast(T.float32(2), 4)
    B[T.Ramp(0, 1, 4)] = x4
    mask: T.boolx4 = T.Ramp(0, 1, 4) < T.Broadcast(2, 4)
    B[T.Ramp(4, 1, 4)] = T.Select(mask, x4, T.Broadcast(T.float32(-1), 4))
    B[T.Ramp(8, 2, 4)] = A[T.Ramp(12, -1, 4)] + A[T.Ramp(0, 1, 4)]
    K[T.Ramp(0, 1, 2)] = T.reinterpret("int32x2", H[T.Ramp(0, 1, 4)])
    M[T.Ramp(0, 1, 8)] = T.Ramp(-4, 3, 8) // T.Broadcast(2, 8)
)");
  HostTensor A(DataType::Float(32), {16}), B(DataType::Float(32), {16}),
      H(DataType::Float(16), {4});
  HostTensor I(DataType::Int(32), {2}), M(DataType::Int(32), {8});
  for (int i = 0; i < 16; ++i) A.set(i, i + 0.5);
  for (int i = 0; i < 16; ++i) B.set(i, 100);
  for (int i = 0; i < 4; ++i) H.set(i, 1.0 + i);
  Interpreter(m).run("main", {A.dl(), B.dl(), H.dl(), I.dl(), M.dl()});
  for (int l = 0; l < 4; ++l) EXPECT_EQ(B.get(l), (4 * l + 0.5) * 2) << l;
  for (int l = 0; l < 4; ++l) EXPECT_EQ(B.get(4 + l), l < 2 ? (4 * l + 0.5) * 2 : -1) << l;
  for (int l = 0; l < 4; ++l) EXPECT_EQ(B.get(8 + 2 * l), (12 - l + 0.5) + (l + 0.5)) << l;
  EXPECT_EQ(B.get(9), 100);  // untouched between the strided lanes
  // float16 1.0 = 0x3C00, 2.0 = 0x4000, little endian pairs.
  EXPECT_EQ(static_cast<uint32_t>(static_cast<int64_t>(I.get(0))), 0x40003C00u);
  EXPECT_EQ(static_cast<uint32_t>(static_cast<int64_t>(I.get(1))), 0x44004200u);
  for (int l = 0; l < 8; ++l) {
    const int v = -4 + 3 * l;
    EXPECT_EQ(M.get(l), v / 2 - ((v % 2 != 0) && v < 0)) << l;
  }
}

TEST(EmuDtypes, MathAndBitBuiltins) {
  IRModule m = parse_module(R"(
@T.prim_func
def main(F: T.Buffer((8,), "float32"), K: T.Buffer((6,), "int32"), U: T.Buffer((2,), "uint32")):
    F[1] = T.exp(F[0])
    F[2] = T.sqrt(F[0])
    F[3] = T.call_extern("float32", "powf", F[0], T.float32(3))
    L = T.alloc_buffer((1,), "float32", scope="local")
    F[4] = T.if_then_else(F[0] > T.float32(0), F[0], L[0])
    F[5] = T.Cast("float32", T.Cast("int32", F[0] * T.float32(-2.75)))
    K[1] = T.shift_left(K[0], 4)
    K[2] = T.shift_right(K[0] * -1, 1)
    K[3] = T.bitwise_xor(K[0], 255)
    K[4] = T.bitwise_not(K[0])
    U[1] = T.shift_right(U[0], 1)
)");
  HostTensor F(DataType::Float(32), {8}), I(DataType::Int(32), {6}), U(DataType::UInt(32), {2});
  F.set(0, 1.7);
  I.set(0, 37);
  U.set(0, 4294967295.0);
  // L[0] is never written: if_then_else evaluates only the chosen branch, so no error.
  Interpreter(m).run("main", {F.dl(), I.dl(), U.dl()});
  const float x = static_cast<float>(F.get(0));
  EXPECT_EQ(static_cast<float>(F.get(1)), std::exp(x));
  EXPECT_EQ(static_cast<float>(F.get(2)), std::sqrt(x));
  EXPECT_EQ(static_cast<float>(F.get(3)), std::pow(x, 3.0f));
  EXPECT_EQ(static_cast<float>(F.get(4)), x);
  EXPECT_EQ(F.get(5), static_cast<int>(x * -2.75f));  // toward zero
  EXPECT_EQ(I.get(1), 37 << 4);
  EXPECT_EQ(I.get(2), -37 >> 1);  // arithmetic shift
  EXPECT_EQ(I.get(3), 37 ^ 255);
  EXPECT_EQ(I.get(4), ~37);
  EXPECT_EQ(U.get(1), 2147483647.0);  // logical shift
}

}  // namespace
}  // namespace primjit::jit::emu
