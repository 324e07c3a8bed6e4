#include "primjit/dlpack.h"

#include <gtest/gtest.h>

#include <vector>

namespace primjit {
namespace {

DLTensor make_tensor(std::vector<int64_t>& shape, int64_t* strides, DLDataType dtype,
                     DLDevice device = {kDLCPU, 0}) {
  DLTensor t{};
  t.data = nullptr;
  t.device = device;
  t.ndim = static_cast<int32_t>(shape.size());
  t.dtype = dtype;
  t.shape = shape.data();
  t.strides = strides;
  return t;
}

TEST(DLPack, DtypeNames) {
  EXPECT_EQ(dtype_name({kDLFloat, 32, 1}), "float32");
  EXPECT_EQ(dtype_name({kDLFloat, 16, 4}), "float16x4");
  EXPECT_EQ(dtype_name({kDLBfloat, 16, 1}), "bfloat16");
  EXPECT_EQ(dtype_name({kDLInt, 8, 1}), "int8");
  EXPECT_EQ(dtype_name({kDLUInt, 64, 1}), "uint64");
  EXPECT_EQ(dtype_name({kDLUInt, 1, 1}), "bool");
  EXPECT_EQ(dtype_name({kDLOpaqueHandle, 64, 1}), "handle");
}

TEST(DLPack, ElementsAndDescription) {
  std::vector<int64_t> shape = {2, 3};
  DLTensor t = make_tensor(shape, nullptr, {kDLFloat, 32, 1});
  EXPECT_EQ(num_elements(t), 6);
  EXPECT_EQ(describe(t), "float32[2, 3] on cpu");
  std::vector<int64_t> scalar_shape;
  DLTensor s = make_tensor(scalar_shape, nullptr, {kDLInt, 32, 1}, {kDLCUDA, 1});
  EXPECT_EQ(num_elements(s), 1);
  EXPECT_EQ(describe(s), "int32[] on cuda:1");
}

TEST(DLPack, Compactness) {
  std::vector<int64_t> shape = {4, 5};
  std::vector<int64_t> row_major = {5, 1};
  std::vector<int64_t> column_major = {1, 4};
  EXPECT_TRUE(is_compact(make_tensor(shape, nullptr, {kDLFloat, 32, 1})));
  EXPECT_TRUE(is_compact(make_tensor(shape, row_major.data(), {kDLFloat, 32, 1})));
  EXPECT_FALSE(is_compact(make_tensor(shape, column_major.data(), {kDLFloat, 32, 1})));
  std::vector<int64_t> unit_shape = {1, 5};
  std::vector<int64_t> odd_unit_stride = {99, 1};
  EXPECT_TRUE(is_compact(make_tensor(unit_shape, odd_unit_stride.data(), {kDLFloat, 32, 1})));
}

}  // namespace
}  // namespace primjit
