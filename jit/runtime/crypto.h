// Authentication of what primjit stores and later runs, through libsodium: a keyed MAC
// (BLAKE2b with a 32-byte secret) for the disk cache's entries, which only their owner writes
// and reads, and Ed25519 signatures for the remote cache's, which writers sign with a secret key
// and every reader verifies with the public one. Built without libsodium, mac_available() says
// so and nothing may be trusted.
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

constexpr size_t kSignPublicBytes = 32;
constexpr size_t kSignSecretBytes = 64;
constexpr size_t kSignatureBytes = 64;
/// A new Ed25519 key pair. Requires mac_available().
void new_signing_keys(std::string* public_key, std::string* secret_key);
/// The detached signature of the concatenation of `parts` under `secret_key`.
std::string sign(std::string_view secret_key, std::initializer_list<std::string_view> parts);
/// True when `signature` signs the concatenation of `parts` under `public_key`.
bool verify_signature(std::string_view public_key, std::string_view signature,
                      std::initializer_list<std::string_view> parts);

}  // namespace primjit::jit
