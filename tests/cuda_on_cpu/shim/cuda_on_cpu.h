// The CUDA of primjit's generated kernels as host C++, so that the generated source runs on the
// CPU (tests/cuda_on_cpu/): force-included before the source, with -DPRIMJIT_CUDA_ON_CPU.
//
// - threadIdx, blockIdx, blockDim, gridDim read the running thread's PrimjitCpuThread, which
//   the harness points primjit_cpu_thread at before it resumes the thread (a fiber).
// - __syncthreads() / __syncwarp() wait at the harness's barrier; __trap() ends the launch.
// - __shared__ arrays are static: the blocks of a launch run one after another on one OS
//   thread, so each block has the storage to itself. The dynamic shared memory
//   (PRIMJIT_CPU_DYN_SHARED, which the printer emits under PRIMJIT_CUDA_ON_CPU in place of
//   `extern __shared__`) is the harness's per-block buffer.
// - half, __nv_bfloat16, __nv_fp8_e4m3 and __nv_fp8_e5m2 hold their bits; every conversion
//   from float rounds to nearest even, float16 and bfloat16 overflow to infinity, the float8
//   types saturate to their largest finite value (infinities included; the CUDA headers'
//   __NV_SATFINITE). Their arithmetic computes in float and rounds the result, as the CUDA
//   headers' operators give it. This conversion code is written independently of primjit's
//   own (primjit/float_formats.h), so that the two check each other.
// - Math: the C library's float and double functions (those the op table names), plus the
//   CUDA-only ones the printer uses (rsqrtf, __int_as_float, ...).
// The generator emits no warp shuffles, votes or atomics; none are defined here.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "cuda_on_cpu_thread.h"

extern "C" {
// The running thread; set by the harness (dlsym) before each resume.
__attribute__((visibility("default"))) PrimjitCpuThread* primjit_cpu_thread = nullptr;
}

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static

#define threadIdx (primjit_cpu_thread->thread_idx)
#define blockIdx (primjit_cpu_thread->block_idx)
#define blockDim (primjit_cpu_thread->block_dim)
#define gridDim (primjit_cpu_thread->grid_dim)

#define PRIMJIT_CPU_DYN_SHARED(type, name) \
  type* const name = reinterpret_cast<type*>(primjit_cpu_thread->dyn_shared)

inline void __syncthreads() { primjit_cpu_thread->sync(0); }
inline void __syncwarp(unsigned int = 0xffffffffu) { primjit_cpu_thread->sync(1); }
inline void __trap() { primjit_cpu_thread->trap(); }

// --- integers and bits ----------------------------------------------------------------------

inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned int min(unsigned int a, unsigned int b) { return a < b ? a : b; }
inline unsigned int max(unsigned int a, unsigned int b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline long min(long a, long b) { return a < b ? a : b; }
inline long max(long a, long b) { return a > b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
inline unsigned long min(unsigned long a, unsigned long b) { return a < b ? a : b; }
inline unsigned long max(unsigned long a, unsigned long b) { return a > b ? a : b; }

inline float __int_as_float(int bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline int __float_as_int(float f) {
  int bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}
inline double __longlong_as_double(long long bits) {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}
inline long long __double_as_longlong(double d) {
  long long bits;
  std::memcpy(&bits, &d, sizeof bits);
  return bits;
}

// --- math -----------------------------------------------------------------------------------

using std::isfinite;
using std::isinf;
using std::isnan;
using std::signbit;
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float exp10f(float x) { return std::pow(10.0f, x); }
inline double exp10(double x) { return std::pow(10.0, x); }

// --- narrow floating types ------------------------------------------------------------------

namespace primjit_cpu {

// A binary format with 1 sign, `e` exponent and `m` mantissa bits (implicit leading one).
struct Narrow {
  int e, m;
  bool has_inf;    // all-ones exponent: infinity and NaN (IEEE); else only all-ones is NaN
  bool satfinite;  // out of range (infinity included) gives the largest finite value
  uint32_t nan;    // canonical NaN (positive)
  uint32_t max;    // largest finite value (positive)
};

inline constexpr Narrow kHalf{5, 10, true, false, 0x7fff, 0x7bff};
inline constexpr Narrow kBf16{8, 7, true, false, 0x7fff, 0x7f7f};
inline constexpr Narrow kE4M3{4, 3, false, true, 0x7f, 0x7e};
inline constexpr Narrow kE5M2{5, 2, true, true, 0x7f, 0x7b};

inline float decode(const Narrow& f, uint32_t bits) {
  const uint32_t sign = bits >> (f.e + f.m) & 1;
  const uint32_t mag = bits & ((1u << (f.e + f.m)) - 1);
  const uint32_t exp = mag >> f.m;
  const uint32_t man = mag & ((1u << f.m) - 1);
  const int bias = (1 << (f.e - 1)) - 1;
  double v;
  if (f.has_inf && exp == (1u << f.e) - 1) {
    v = man == 0 ? INFINITY : NAN;
  } else if (!f.has_inf && mag == (1u << (f.e + f.m)) - 1) {
    v = NAN;
  } else if (exp == 0) {
    v = std::ldexp(static_cast<double>(man), 1 - bias - f.m);
  } else {
    v = std::ldexp(static_cast<double>(man | (1u << f.m)), static_cast<int>(exp) - bias - f.m);
  }
  return static_cast<float>(sign ? -v : v);
}

inline uint32_t encode(const Narrow& f, float x) {
  const uint32_t sign = std::signbit(x) ? 1u << (f.e + f.m) : 0u;
  if (std::isnan(x)) return sign | f.nan;
  const uint32_t inf = ((1u << f.e) - 1) << f.m;
  const uint32_t overflow = f.satfinite || !f.has_inf ? f.max : inf;
  double v = std::fabs(static_cast<double>(x));
  if (std::isinf(v)) return sign | overflow;
  if (v == 0) return sign;
  const int bias = (1 << (f.e - 1)) - 1;
  int exp = std::ilogb(v);
  if (exp < 1 - bias) exp = 1 - bias;  // subnormal
  // Units of the last place at this exponent; nearbyint rounds ties to even.
  double units = std::nearbyint(std::ldexp(v, f.m - exp));
  if (units >= std::ldexp(1.0, f.m + 1)) {  // rounded up to the next power of two
    units /= 2;
    ++exp;
  }
  uint32_t bits;
  if (units < std::ldexp(1.0, f.m)) {
    bits = static_cast<uint32_t>(units);  // subnormal (or zero)
  } else {
    if (exp + bias >= (1 << f.e)) return sign | overflow;
    bits =
        (static_cast<uint32_t>(exp + bias) << f.m) | (static_cast<uint32_t>(units) - (1u << f.m));
  }
  if (bits > f.max) return sign | overflow;
  return sign | bits;
}

// A narrow floating value: its bits; arithmetic in float, rounded back.
template <const Narrow& F, typename Bits, typename Tag>
struct Float {
  Bits bits;
  Float() = default;
  Float(float v) : bits(static_cast<Bits>(encode(F, v))) {}      // NOLINT
  Float(double v) : Float(static_cast<float>(v)) {}              // NOLINT
  Float(int v) : Float(static_cast<float>(v)) {}                 // NOLINT
  Float(unsigned int v) : Float(static_cast<float>(v)) {}        // NOLINT
  Float(long long v) : Float(static_cast<float>(v)) {}           // NOLINT
  Float(unsigned long long v) : Float(static_cast<float>(v)) {}  // NOLINT
  operator float() const { return decode(F, bits); }             // NOLINT
  static Float from_bits(Bits b) {
    Float r;
    r.bits = b;
    return r;
  }
};

struct HalfTag {};
struct Bf16Tag {};
struct E4M3Tag {};
struct E5M2Tag {};

}  // namespace primjit_cpu

using half = primjit_cpu::Float<primjit_cpu::kHalf, uint16_t, primjit_cpu::HalfTag>;
using __half = half;
using __nv_bfloat16 = primjit_cpu::Float<primjit_cpu::kBf16, uint16_t, primjit_cpu::Bf16Tag>;
using __nv_fp8_e4m3 = primjit_cpu::Float<primjit_cpu::kE4M3, uint8_t, primjit_cpu::E4M3Tag>;
using __nv_fp8_e5m2 = primjit_cpu::Float<primjit_cpu::kE5M2, uint8_t, primjit_cpu::E5M2Tag>;

// half and bfloat16 have operators (computed in float, rounded once); float8 has none.
#define PRIMJIT_CPU_OPERATORS(T)                                    \
  inline T operator+(T a, T b) { return T(float(a) + float(b)); }   \
  inline T operator-(T a, T b) { return T(float(a) - float(b)); }   \
  inline T operator*(T a, T b) { return T(float(a) * float(b)); }   \
  inline T operator/(T a, T b) { return T(float(a) / float(b)); }   \
  inline T operator-(T a) { return T::from_bits(a.bits ^ 0x8000); } \
  inline T& operator+=(T& a, T b) { return a = a + b; }             \
  inline T& operator-=(T& a, T b) { return a = a - b; }             \
  inline T& operator*=(T& a, T b) { return a = a * b; }             \
  inline T& operator/=(T& a, T b) { return a = a / b; }             \
  inline bool operator<(T a, T b) { return float(a) < float(b); }   \
  inline bool operator>(T a, T b) { return float(a) > float(b); }   \
  inline bool operator<=(T a, T b) { return float(a) <= float(b); } \
  inline bool operator>=(T a, T b) { return float(a) >= float(b); } \
  inline bool operator==(T a, T b) { return float(a) == float(b); } \
  inline bool operator!=(T a, T b) { return float(a) != float(b); }
PRIMJIT_CPU_OPERATORS(half)
PRIMJIT_CPU_OPERATORS(__nv_bfloat16)
#undef PRIMJIT_CPU_OPERATORS

inline float __half2float(half h) { return float(h); }
inline half __float2half_rn(float f) { return half(f); }
inline half __float2half(float f) { return half(f); }
inline float __bfloat162float(__nv_bfloat16 h) { return float(h); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline bool __hisnan(half a) { return std::isnan(float(a)); }
inline bool __hisnan(__nv_bfloat16 a) { return std::isnan(float(a)); }

// __hmin/__hmax: a NaN operand gives the other operand (both NaN: NaN); -0 < +0.
template <typename T>
inline T primjit_cpu_hminmax(T a, T b, bool is_min) {
  const float x = float(a), y = float(b);
  if (std::isnan(x)) return std::isnan(y) ? T(NAN) : b;
  if (std::isnan(y)) return a;
  if (x == y && x == 0) return (std::signbit(x) == is_min) ? a : b;
  return (is_min ? x < y : x > y) ? a : b;
}
inline half __hmin(half a, half b) { return primjit_cpu_hminmax(a, b, true); }
inline half __hmax(half a, half b) { return primjit_cpu_hminmax(a, b, false); }
inline __nv_bfloat16 __hmin(__nv_bfloat16 a, __nv_bfloat16 b) {
  return primjit_cpu_hminmax(a, b, true);
}
inline __nv_bfloat16 __hmax(__nv_bfloat16 a, __nv_bfloat16 b) {
  return primjit_cpu_hminmax(a, b, false);
}

// --- vector types ---------------------------------------------------------------------------

#define PRIMJIT_CPU_VEC2(name, T)      \
  struct alignas(2 * sizeof(T)) name { \
    T x, y;                            \
  };                                   \
  inline name make_##name(T x, T y) { return name{x, y}; }
#define PRIMJIT_CPU_VEC4(name, T)      \
  struct alignas(4 * sizeof(T)) name { \
    T x, y, z, w;                      \
  };                                   \
  inline name make_##name(T x, T y, T z, T w) { return name{x, y, z, w}; }
PRIMJIT_CPU_VEC2(float2, float)
PRIMJIT_CPU_VEC4(float4, float)
PRIMJIT_CPU_VEC2(double2, double)
PRIMJIT_CPU_VEC2(int2, int)
PRIMJIT_CPU_VEC4(int4, int)
PRIMJIT_CPU_VEC2(uint2, unsigned int)
PRIMJIT_CPU_VEC4(uint4, unsigned int)
PRIMJIT_CPU_VEC2(short2, short)
PRIMJIT_CPU_VEC4(short4, short)
PRIMJIT_CPU_VEC2(ushort2, unsigned short)
PRIMJIT_CPU_VEC4(ushort4, unsigned short)
PRIMJIT_CPU_VEC4(char4, signed char)
PRIMJIT_CPU_VEC4(uchar4, unsigned char)
PRIMJIT_CPU_VEC2(longlong2, long long)
PRIMJIT_CPU_VEC2(ulonglong2, unsigned long long)
PRIMJIT_CPU_VEC2(half2, half)
PRIMJIT_CPU_VEC2(nv_bfloat162, __nv_bfloat16)
#undef PRIMJIT_CPU_VEC2
#undef PRIMJIT_CPU_VEC4
inline nv_bfloat162 make_bfloat162(__nv_bfloat16 x, __nv_bfloat16 y) { return {x, y}; }

// --- kernel entry points --------------------------------------------------------------------

namespace primjit_cpu {

// A launch argument: a pointer to a value of the parameter's C type (cuLaunchKernel's ABI).
struct Arg {
  void* p;
  template <typename T>
  operator T() const {  // NOLINT
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
};

}  // namespace primjit_cpu
