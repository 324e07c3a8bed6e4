// Hash mixing shared by the structural hash (structural.h) and the hash tables of passes: one
// combining step and one finalizer, so that every hash in the library mixes the same way.
#pragma once

#include <cstdint>

namespace primjit {

/// The splitmix64 finalizer: a bijection on 64-bit values with good avalanche.
inline uint64_t hash_mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

/// `seed` with `value` folded in (order matters): the running state of a sequence's hash.
inline uint64_t hash_combine(uint64_t seed, uint64_t value) {
  return hash_mix64(seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2)));
}

}  // namespace primjit
