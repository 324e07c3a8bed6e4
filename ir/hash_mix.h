// Hash mixing for hashes that must give the same value in every build and on every machine
// (structural hashes, cache keys, specialization keys). One place for the constants, so that
// every hash in the tree mixes the same way. Private to the primjit sources (not installed).
#pragma once

#include <cstdint>
#include <string_view>

namespace primjit::hashing {

/// 2^64 divided by the golden ratio: spreads consecutive values over the whole word.
inline constexpr uint64_t kGoldenRatio = 0x9e3779b97f4a7c15ULL;

/// Folds `value` into the running hash `seed` (the classic golden-ratio combine). Order
/// matters: combine(combine(s, a), b) differs from combine(combine(s, b), a).
inline uint64_t combine(uint64_t seed, uint64_t value) {
  return seed ^ (value + kGoldenRatio + (seed << 6) + (seed >> 2));
}

/// splitmix64's finalizer: a bijection of 64-bit words with good avalanche.
inline uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

/// FNV-1a over the bytes of `text`.
inline uint64_t fnv1a(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace primjit::hashing
