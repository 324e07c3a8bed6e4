// Hash mixing for hashes that must give the same value in every build and on every machine
// (structural hashes, cache keys, specialization keys). One place for the constants, so that
// every hash in the tree mixes the same way. Private to the primjit sources (not installed).
#pragma once

#include <cstdint>
#include <cstring>
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

/// A 64-bit hash of `bytes` (cache file names, remote keys: the values are part of the on-disk
/// and on-server formats, never change them). Each step is a bijection of the state for a given
/// word, so a changed word always changes the result; the length is folded in first. Then a
/// final avalanche (murmur3's).
inline uint64_t hash_bytes(std::string_view bytes, uint64_t seed = 0) {
  uint64_t h = seed ^ (bytes.size() * 0xC2B2AE3D27D4EB4Full);
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, bytes.data() + i, 8);
    h = (h ^ w) * kGoldenRatio;
    h = (h << 31) | (h >> 33);
  }
  uint64_t tail = 0;
  std::memcpy(&tail, bytes.data() + i, bytes.size() - i);
  h = (h ^ tail) * kGoldenRatio;
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  h *= 0xC4CEB9FE1A85EC53ull;
  h ^= h >> 33;
  return h;
}

}  // namespace primjit::hashing
