#include "jit/runtime/remote_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "jit/runtime/crypto.h"
#include "jit/runtime/disk_cache.h"
#include "primjit/error.h"
#include "primjit/log.h"
#include "primjit/version.h"

#ifdef PRIMJIT_HAVE_HIREDIS
#include <hiredis/hiredis.h>
#endif

namespace primjit::jit {
namespace {

constexpr char kMagic[4] = {'P', 'J', 'R', 'V'};
constexpr uint32_t kFormat = 1;
constexpr size_t kHeaderBytes = 4 + 4 + 8 + 8;  // magic, format, key length, payload length

std::string to_hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

bool from_hex(std::string_view hex, std::string* out) {
  if (hex.size() % 2 != 0) return false;
  out->clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    int v = 0;
    for (char c : hex.substr(i, 2)) {
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) return false;
      v = v * 16 + d;
    }
    out->push_back(static_cast<char>(v));
  }
  return true;
}

std::string header(uint64_t key_size, uint64_t payload_size) {
  std::string h(kMagic, 4);
  h.append(reinterpret_cast<const char*>(&kFormat), 4);
  h.append(reinterpret_cast<const char*>(&key_size), 8);
  h.append(reinterpret_cast<const char*>(&payload_size), 8);
  return h;
}

}  // namespace

// --- the team key ------------------------------------------------------------------------------

TeamKey TeamKey::load(const std::string& path) {
  std::string why;
  PRIMJIT_USER_CHECK(mac_available(&why)) << why;
  const char* fix =
      "; make one with `primjit-cache keygen FILE` and point PRIMJIT_CACHE_KEY_FILE at it";
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  PRIMJIT_USER_CHECK(fd >= 0) << "cannot read the remote cache key '" << path << "' ("
                              << std::strerror(errno) << ")" << fix;
  struct stat st {};
  std::string text;
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= 4096;
  if (ok) {
    text.resize(static_cast<size_t>(st.st_size));
    ok = ::read(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  }
  ::close(fd);
  PRIMJIT_USER_CHECK(ok) << "the remote cache key '" << path << "' is not a small regular file"
                         << fix;
  PRIMJIT_USER_CHECK(st.st_uid == ::geteuid() || st.st_uid == 0)
      << "refusing the remote cache key '" << path << "': it is owned by uid " << st.st_uid
      << ", neither you nor root";
  PRIMJIT_USER_CHECK((st.st_mode & 022) == 0)
      << "refusing the remote cache key '" << path
      << "': it is writable by group or others; chmod go-w it";
  TeamKey key;
  std::istringstream in(text);
  std::string tag, value, magic, version;
  in >> magic >> version;
  PRIMJIT_USER_CHECK(magic == "primjit-cache-key" && version == "1")
      << "the remote cache key '" << path << "' is not a primjit cache key file" << fix;
  while (in >> tag >> value) {
    std::string* slot = tag == "public" ? &key.public_ : tag == "secret" ? &key.secret_ : nullptr;
    PRIMJIT_USER_CHECK(slot != nullptr && from_hex(value, slot))
        << "the remote cache key '" << path << "' has a malformed line '" << tag << " ...'" << fix;
  }
  PRIMJIT_USER_CHECK(key.public_.size() == kSignPublicBytes &&
                     (key.secret_.empty() || key.secret_.size() == kSignSecretBytes))
      << "the remote cache key '" << path << "' has keys of the wrong length" << fix;
  PRIMJIT_USER_CHECK(key.secret_.empty() || (st.st_mode & 077) == 0)
      << "refusing the remote cache key '" << path
      << "': it holds the secret (write) key and is readable by others; chmod 600 it";
  return key;
}

void TeamKey::generate(std::string* writer_text, std::string* reader_text) {
  std::string why;
  PRIMJIT_USER_CHECK(mac_available(&why)) << why;
  std::string pub, sec;
  new_signing_keys(&pub, &sec);
  *reader_text = "primjit-cache-key 1\npublic " + to_hex(pub) + "\n";
  *writer_text = *reader_text + "secret " + to_hex(sec) + "\n";
}

bool parse_redis_url(const std::string& url, RemoteOptions* options, std::string* problem) {
  const std::string scheme = "redis://";
  auto fail = [&](const std::string& why) {
    *problem = "PRIMJIT_CACHE_REMOTE='" + url + "': " + why +
               "; write redis://host:port or redis://host:port/db";
    return false;
  };
  if (url.rfind(scheme, 0) != 0) return fail("not a redis:// address");
  std::string rest = url.substr(scheme.size());
  size_t slash = rest.find('/');
  std::string hostport = rest.substr(0, slash);
  if (slash != std::string::npos) {
    std::string db = rest.substr(slash + 1);
    if (db.empty() || db.size() > 3 || db.find_first_not_of("0123456789") != std::string::npos) {
      return fail("the database must be a small number");
    }
    options->db = std::stoi(db);
  }
  size_t colon = hostport.rfind(':');
  std::string port = colon == std::string::npos ? "6379" : hostport.substr(colon + 1);
  options->host = hostport.substr(0, colon);
  if (options->host.empty()) return fail("no host");
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) == 0 ||
      std::stoi(port) > 65535) {
    return fail("the port must be a number from 1 to 65535");
  }
  options->port = std::stoi(port);
  return true;
}

// --- the cache ---------------------------------------------------------------------------------

#ifdef PRIMJIT_HAVE_HIREDIS

struct RemoteCache::Connection {
  redisContext* context = nullptr;
  ~Connection() {
    if (context != nullptr) redisFree(context);
  }
};

namespace {
timeval to_timeval(std::chrono::milliseconds ms) {
  return timeval{static_cast<time_t>(ms.count() / 1000),
                 static_cast<suseconds_t>((ms.count() % 1000) * 1000)};
}
struct Reply {
  redisReply* reply;
  ~Reply() {
    if (reply != nullptr) freeReplyObject(reply);
  }
};
}  // namespace

RemoteCache::RemoteCache(RemoteOptions options, TeamKey key)
    : options_(std::move(options)), key_(std::move(key)) {}

RemoteCache::~RemoteCache() = default;

std::unique_ptr<RemoteCache::Connection> RemoteCache::take(std::string* problem) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (std::chrono::steady_clock::now() < down_until_) {
      *problem = "the remote cache is unavailable for now";
      return nullptr;
    }
    if (!pool_.empty()) {
      std::unique_ptr<Connection> c = std::move(pool_.back());
      pool_.pop_back();
      return c;
    }
  }
  auto c = std::make_unique<Connection>();
  c->context =
      redisConnectWithTimeout(options_.host.c_str(), options_.port, to_timeval(options_.budget));
  if (c->context == nullptr || c->context->err != 0) {
    *problem = std::string("cannot connect to ") + options_.host + ":" +
               std::to_string(options_.port) + " (" +
               (c->context != nullptr ? c->context->errstr : "out of memory") + ")";
    mark_down(*problem);
    return nullptr;
  }
  redisSetTimeout(c->context, to_timeval(options_.budget));
  if (options_.db != 0) {
    Reply r{static_cast<redisReply*>(redisCommand(c->context, "SELECT %d", options_.db))};
    if (r.reply == nullptr || r.reply->type == REDIS_REPLY_ERROR) {
      *problem = "cannot select database " + std::to_string(options_.db);
      mark_down(*problem);
      return nullptr;
    }
  }
  return c;
}

void RemoteCache::give_back(std::unique_ptr<Connection> c) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (pool_.size() < 16) pool_.push_back(std::move(c));
}

void RemoteCache::mark_down(const std::string& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  down_until_ = std::chrono::steady_clock::now() + options_.backoff;
  pool_.clear();
  if (!warned_) {
    warned_ = true;
    PRIMJIT_LOG_WARNING << "remote cache redis://" << options_.host << ":" << options_.port
                        << " failed (" << why << "); compiling locally, retrying every "
                        << options_.backoff.count() / 1000 << " s";
  }
}

std::string RemoteCache::server_key(const std::string& key_text) const {
  char hash[40];
  std::snprintf(hash, sizeof(hash), "%016llx%016llx",
                static_cast<unsigned long long>(hash_bytes(key_text, 1)),
                static_cast<unsigned long long>(hash_bytes(key_text, 2)));
  // Namespaced by primjit's version and the target's kind (the key text's "target" line).
  std::string target = "unknown";
  if (size_t at = key_text.find("\ntarget T.target(\""); at != std::string::npos) {
    size_t begin = at + 18, end = key_text.find('"', begin);
    if (end != std::string::npos) target = key_text.substr(begin, end - begin);
  }
  return std::string("primjit:") + version() + ":" + target + ":" + hash;
}

std::string RemoteCache::seal(const std::string& key_text, const std::string& payload) const {
  std::string h = header(key_text.size(), payload.size());
  return h + sign(key_.secret_key(), {h, key_text, payload}) + key_text + payload;
}

RemoteCache::Lookup RemoteCache::get(const std::string& key_text) {
  Lookup result;
  std::unique_ptr<Connection> c = take(&result.problem);
  if (c == nullptr) {
    result.status = Status::kUnavailable;
    return result;
  }
  std::string key = server_key(key_text);
  // At most one byte more than the cap comes back: an oversized value is never read whole.
  uint64_t limit = options_.max_value_bytes;
  Reply r{
      static_cast<redisReply*>(redisCommand(c->context, "GETRANGE %b 0 %llu", key.data(),
                                            key.size(), static_cast<unsigned long long>(limit)))};
  if (r.reply == nullptr) {
    result.status = Status::kUnavailable;
    result.problem = std::string("the server did not answer (") + c->context->errstr + ")";
    mark_down(result.problem);
    return result;
  }
  give_back(std::move(c));
  if (r.reply->type != REDIS_REPLY_STRING || r.reply->len == 0) return result;  // kMissing
  std::string_view value(r.reply->str, r.reply->len);
  result.status = Status::kRejected;
  auto reject = [&](const std::string& why) {
    result.problem = "remote cache value '" + key + "' " + why;
    return result;
  };
  if (value.size() > limit) {
    return reject("is larger than the limit of " + std::to_string(limit) + " bytes");
  }
  if (value.size() < kHeaderBytes + kSignatureBytes || std::memcmp(value.data(), kMagic, 4) != 0) {
    return reject("is not a primjit value");
  }
  uint64_t key_size = 0, payload_size = 0;
  std::memcpy(&key_size, value.data() + 8, 8);
  std::memcpy(&payload_size, value.data() + 16, 8);
  uint64_t body = value.size() - kHeaderBytes - kSignatureBytes;
  if (key_size > body || payload_size != body - key_size) return reject("is truncated");
  std::string_view h = value.substr(0, kHeaderBytes);
  std::string_view signature = value.substr(kHeaderBytes, kSignatureBytes);
  std::string_view stored_key = value.substr(kHeaderBytes + kSignatureBytes, key_size);
  std::string_view payload = value.substr(kHeaderBytes + kSignatureBytes + key_size);
  if (!verify_signature(key_.public_key(), signature, {h, stored_key, payload})) {
    return reject("fails its signature check (not written with the team's key: never run)");
  }
  if (stored_key != key_text) return reject("was written for another variant");
  result.status = Status::kHit;
  result.payload = std::string(payload);
  return result;
}

bool RemoteCache::put(const std::string& key_text, const std::string& payload,
                      std::string* problem) {
  if (!can_write()) {
    *problem = "this machine's team key is read-only";
    return false;
  }
  std::string value = seal(key_text, payload);
  if (value.size() > options_.max_value_bytes) {
    *problem = "the value's " + std::to_string(value.size()) + " bytes exceed the limit";
    return false;
  }
  std::unique_ptr<Connection> c = take(problem);
  if (c == nullptr) return false;
  std::string key = server_key(key_text);
  Reply r{static_cast<redisReply*>(
      redisCommand(c->context, "SET %b %b", key.data(), key.size(), value.data(), value.size()))};
  if (r.reply == nullptr) {
    *problem = std::string("the server did not answer (") + c->context->errstr + ")";
    mark_down(*problem);
    return false;
  }
  give_back(std::move(c));
  if (r.reply->type == REDIS_REPLY_ERROR) {
    *problem = std::string("the server refused the value (") + r.reply->str + ")";
    return false;
  }
  return true;
}

#else  // no hiredis

struct RemoteCache::Connection {};

RemoteCache::RemoteCache(RemoteOptions, TeamKey) {
  PRIMJIT_USER_ERROR() << "this primjit was built without hiredis, so it has no remote cache; "
                          "install libhiredis-dev and rebuild (tools/deps.sh does), or unset "
                          "PRIMJIT_CACHE_REMOTE";
}
RemoteCache::~RemoteCache() = default;
RemoteCache::Lookup RemoteCache::get(const std::string&) { return {}; }
bool RemoteCache::put(const std::string&, const std::string&, std::string*) { return false; }
std::string RemoteCache::server_key(const std::string&) const { return ""; }
std::string RemoteCache::seal(const std::string&, const std::string&) const { return ""; }
std::unique_ptr<RemoteCache::Connection> RemoteCache::take(std::string*) { return nullptr; }
void RemoteCache::give_back(std::unique_ptr<Connection>) {}
void RemoteCache::mark_down(const std::string&) {}

#endif

}  // namespace primjit::jit
