#include "jit/runtime/crypto.h"

#include "primjit/error.h"

#ifdef PRIMJIT_HAVE_SODIUM
#include <sodium.h>
#endif

namespace primjit::jit {

#ifdef PRIMJIT_HAVE_SODIUM

namespace {
void init_sodium() {
  static const int status = sodium_init();  // thread-safe, idempotent; < 0 on failure
  PRIMJIT_ICHECK(status >= 0) << "libsodium failed to initialize";
}
}  // namespace

bool mac_available(std::string*) { return true; }

std::string new_mac_key() {
  init_sodium();
  std::string key(kMacKeyBytes, '\0');
  randombytes_buf(key.data(), key.size());
  return key;
}

Mac compute_mac(std::string_view key, std::initializer_list<std::string_view> parts) {
  static_assert(kMacKeyBytes >= crypto_generichash_KEYBYTES_MIN &&
                kMacKeyBytes <= crypto_generichash_KEYBYTES_MAX &&
                kMacBytes >= crypto_generichash_BYTES_MIN);
  init_sodium();
  PRIMJIT_ICHECK(key.size() == kMacKeyBytes) << "MAC key of " << key.size() << " bytes";
  crypto_generichash_state state;
  crypto_generichash_init(&state, reinterpret_cast<const unsigned char*>(key.data()), key.size(),
                          kMacBytes);
  for (std::string_view part : parts) {
    crypto_generichash_update(&state, reinterpret_cast<const unsigned char*>(part.data()),
                              part.size());
  }
  Mac mac{};
  crypto_generichash_final(&state, mac.data(), mac.size());
  return mac;
}

bool mac_equal(const unsigned char* a, const unsigned char* b) {
  return crypto_verify_32(a, b) == 0;
}

namespace {
std::string concat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view p : parts) out.append(p);
  return out;
}
}  // namespace

void new_signing_keys(std::string* public_key, std::string* secret_key) {
  init_sodium();
  public_key->assign(kSignPublicBytes, '\0');
  secret_key->assign(kSignSecretBytes, '\0');
  crypto_sign_keypair(reinterpret_cast<unsigned char*>(public_key->data()),
                      reinterpret_cast<unsigned char*>(secret_key->data()));
}

std::string sign(std::string_view secret_key, std::initializer_list<std::string_view> parts) {
  init_sodium();
  PRIMJIT_ICHECK(secret_key.size() == kSignSecretBytes)
      << "signing key of " << secret_key.size() << " bytes";
  std::string message = concat(parts);
  std::string signature(kSignatureBytes, '\0');
  crypto_sign_detached(reinterpret_cast<unsigned char*>(signature.data()), nullptr,
                       reinterpret_cast<const unsigned char*>(message.data()), message.size(),
                       reinterpret_cast<const unsigned char*>(secret_key.data()));
  return signature;
}

bool verify_signature(std::string_view public_key, std::string_view signature,
                      std::initializer_list<std::string_view> parts) {
  init_sodium();
  if (public_key.size() != kSignPublicBytes || signature.size() != kSignatureBytes) return false;
  std::string message = concat(parts);
  return crypto_sign_verify_detached(
             reinterpret_cast<const unsigned char*>(signature.data()),
             reinterpret_cast<const unsigned char*>(message.data()), message.size(),
             reinterpret_cast<const unsigned char*>(public_key.data())) == 0;
}

#else  // no libsodium

bool mac_available(std::string* why) {
  *why =
      "this primjit was built without libsodium, which the disk cache needs to authenticate its "
      "entries; install libsodium-dev and rebuild primjit (tools/deps.sh does), or disable the "
      "cache with PRIMJIT_CACHE=0";
  return false;
}

std::string new_mac_key() {
  PRIMJIT_ICHECK(false) << "no MAC without libsodium";
  return "";
}

Mac compute_mac(std::string_view, std::initializer_list<std::string_view>) {
  PRIMJIT_ICHECK(false) << "no MAC without libsodium";
  return Mac{};
}

bool mac_equal(const unsigned char*, const unsigned char*) { return false; }

void new_signing_keys(std::string*, std::string*) {
  PRIMJIT_ICHECK(false) << "no signatures without libsodium";
}

std::string sign(std::string_view, std::initializer_list<std::string_view>) {
  PRIMJIT_ICHECK(false) << "no signatures without libsodium";
  return "";
}

bool verify_signature(std::string_view, std::string_view, std::initializer_list<std::string_view>) {
  return false;
}

#endif

}  // namespace primjit::jit
