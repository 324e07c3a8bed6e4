// The remote tier of the compile cache: compiled variants in a Redis server shared by a fleet,
// behind memory and disk (lookup order memory -> disk -> remote -> compile).
//
// Trust model (docs/cache.md). Nothing from the server is trusted by itself: every value is
// signed (Ed25519) by a machine holding the team's secret key, and a reader verifies it with the
// public key before using it. Writing is a separate right: a team key file holding only the
// public key makes a read-only client (production machines), so a compromised reader cannot
// plant code for the fleet. The signature covers the variant's full key text (versions, build,
// target, CPU, function, argument key) and the payload; keys on the server are namespaced by
// primjit's version and the target, then a hash of that text.
//
// Faults never block or break a call: connecting and each command have a time budget (50 ms by
// default); a server that is down or fails is left alone for a while (one warning), and the
// caller compiles locally. Each thread takes its own connection from a pool, so a slow server
// does not serialize threads. Values larger than the cap are never read whole.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace primjit::jit {

/// The team's key file (PRIMJIT_CACHE_KEY_FILE): "primjit-cache-key 1", then "public <hex>" and,
/// for machines allowed to write, "secret <hex>".
class TeamKey {
 public:
  /// Reads `path`. Throws primjit::Error naming the problem when the file is missing,
  /// malformed, writable by others, not owned by the current user (or root), or holds a secret
  /// that others may read.
  static TeamKey load(const std::string& path);
  /// A new key pair, as the text of a writer's file and of a reader's (public only).
  static void generate(std::string* writer_text, std::string* reader_text);

  bool can_write() const { return !secret_.empty(); }
  const std::string& public_key() const { return public_; }
  const std::string& secret_key() const { return secret_; }

 private:
  std::string public_, secret_;
};

struct RemoteOptions {
  std::string host = "127.0.0.1";
  int port = 6379;
  int db = 0;
  std::chrono::milliseconds budget{50};      // per connect and per command
  std::chrono::milliseconds backoff{10000};  // how long a failed server is left alone
  uint64_t max_value_bytes = uint64_t{256} << 20;
};

/// Parses redis://host:port[/db]; false with the reason in `problem`.
bool parse_redis_url(const std::string& url, RemoteOptions* options, std::string* problem);

class RemoteCache {
 public:
  /// Throws primjit::Error when primjit was built without hiredis or libsodium.
  RemoteCache(RemoteOptions options, TeamKey key);
  ~RemoteCache();

  enum class Status { kHit, kMissing, kRejected, kUnavailable };
  struct Lookup {
    Status status = Status::kMissing;
    std::string payload;  // kHit: verified
    std::string problem;  // kRejected / kUnavailable
  };
  /// The payload stored for `key_text`, once its signature and key check out.
  Lookup get(const std::string& key_text);
  /// Signs and stores a payload; false (why in `problem`) when read-only or the server fails.
  bool put(const std::string& key_text, const std::string& payload, std::string* problem);

  bool can_write() const { return key_.can_write(); }
  /// The server's key for `key_text` (tests).
  std::string server_key(const std::string& key_text) const;
  /// The encoding of a signed value (tests: tampering).
  std::string seal(const std::string& key_text, const std::string& payload) const;

 private:
  struct Connection;
  std::unique_ptr<Connection> take(std::string* problem);
  void give_back(std::unique_ptr<Connection> c);
  void mark_down(const std::string& why);

  RemoteOptions options_;
  TeamKey key_;
  std::mutex mutex_;  // guards the pool and the down state
  std::vector<std::unique_ptr<Connection>> pool_;
  std::chrono::steady_clock::time_point down_until_{};
  bool warned_ = false;
};

}  // namespace primjit::jit
