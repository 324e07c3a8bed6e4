// <primjit/primjit.h> alone gives an application everything it needs, here the 16-bit floating
// value types (primjit::float16, primjit::bfloat16) next to the builder. Nothing else included.
#include <gtest/gtest.h>
#include <primjit/primjit.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace {

TEST(UmbrellaHeader, Float16ValuesConvertWithTheDtypesRounding) {
  primjit::float16 h(1.5f);
  EXPECT_EQ(h.bits(), 0x3E00);
  EXPECT_EQ(static_cast<float>(h), 1.5f);
  EXPECT_EQ(static_cast<float>(primjit::float16(0.1f)), 0.0999755859375f);  // nearest binary16
  EXPECT_TRUE(std::isinf(static_cast<float>(primjit::float16(70000.0f))));  // IEEE overflow
  EXPECT_EQ(static_cast<float>(primjit::float16::from_bits(0x0001)), std::ldexp(1.0f, -24));
  EXPECT_EQ(primjit::float16().bits(), 0);
}

TEST(UmbrellaHeader, BFloat16ValuesAreTheHighHalfOfAFloat) {
  primjit::bfloat16 b(1.0f);
  EXPECT_EQ(b.bits(), 0x3F80);
  EXPECT_EQ(static_cast<float>(primjit::bfloat16(3.14159f)), 3.140625f);  // rounded down
  EXPECT_EQ(primjit::bfloat16(1.00390625f).bits(), 0x3F80);               // a tie: to even
  EXPECT_TRUE(std::isnan(static_cast<float>(primjit::bfloat16(NAN))));
}

// A tensor of dtype float16 holds 2-byte bit patterns: its storage reads as an array of values.
TEST(UmbrellaHeader, ValueTypesHaveTheLayoutOfTheirDtype) {
  static_assert(sizeof(primjit::float16) * 8 == primjit::builder::f16.bits());
  static_assert(sizeof(primjit::bfloat16) * 8 == primjit::builder::bf16.bits());
  static_assert(std::is_trivially_copyable_v<primjit::float16>);
  // Explicit both ways: a float16 never silently becomes a float (or a bool) argument.
  static_assert(!std::is_convertible_v<primjit::float16, float>);
  static_assert(!std::is_convertible_v<float, primjit::float16>);
  const uint16_t storage[2] = {0x3C00, 0xC000};
  primjit::float16 values[2];
  std::memcpy(values, storage, sizeof storage);
  EXPECT_EQ(static_cast<float>(values[0]), 1.0f);
  EXPECT_EQ(static_cast<float>(values[1]), -2.0f);
}

}  // namespace
