// Keyed message authentication for what primjit stores and later runs (the disk cache's
// entries): BLAKE2b keyed with a 32-byte secret, through libsodium. Built without libsodium,
// mac_available() says so and nothing may be trusted.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace primjit::jit {

constexpr size_t kMacKeyBytes = 32;
constexpr size_t kMacBytes = 32;
using Mac = std::array<unsigned char, kMacBytes>;

/// True when primjit was built with libsodium; otherwise false and the reason in `*why`.
bool mac_available(std::string* why);
/// A new random secret key of kMacKeyBytes bytes. Requires mac_available().
std::string new_mac_key();
/// The MAC of the concatenation of `parts` under `key` (kMacKeyBytes long).
Mac compute_mac(std::string_view key, std::initializer_list<std::string_view> parts);
/// Compares two MACs in constant time.
bool mac_equal(const unsigned char* a, const unsigned char* b);

}  // namespace primjit::jit
