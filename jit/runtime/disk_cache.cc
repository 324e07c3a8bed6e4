#include "jit/runtime/disk_cache.h"

#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

#include "jit/runtime/crypto.h"
#include "jit/runtime/environment.h"
#include "primjit/error.h"
#include "primjit/log.h"

namespace primjit::jit {
namespace {

constexpr char kMagic[8] = {'P', 'J', 'V', 'C', 'A', 'C', 'H', 'E'};
// Format 3: host objects read kernel handles from the kernel table passed as `self`; format 2
// objects kept them in module globals the runtime filled, which this runtime no longer does.
constexpr uint32_t kFormat = 3;
constexpr const char* kExtension = ".pjv";
// magic, format, reserved, key length, payload length; then the MAC of all of it, the key and
// the payload.
constexpr size_t kSealedHeaderBytes = 8 + 4 + 4 + 8 + 8;
constexpr size_t kHeaderBytes = kSealedHeaderBytes + kMacBytes;
// The sweep removes temporary files older than this: live writers finish within seconds.
constexpr int64_t kStaleTempNs = int64_t{600} * 1000000000;

// Little helpers for the payload: fixed-width integers and length-prefixed strings.
class Writer {
 public:
  void u32(uint32_t v) { raw(&v, sizeof(v)); }
  void u64(uint64_t v) { raw(&v, sizeof(v)); }
  void str(std::string_view s) {
    u64(s.size());
    out_.append(s.data(), s.size());
  }
  void raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool u32(uint32_t* v) { return raw(v, sizeof(*v)); }
  bool u64(uint64_t* v) { return raw(v, sizeof(*v)); }
  bool str(std::string* s) {
    uint64_t n = 0;
    if (!u64(&n) || n > in_.size() - pos_) return false;
    s->assign(in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  // A count of items that each take at least `min_bytes`: bounded by what is left.
  bool count(uint32_t* n, size_t min_bytes) {
    return u32(n) && static_cast<uint64_t>(*n) * min_bytes <= in_.size() - pos_;
  }
  bool done() const { return pos_ == in_.size(); }

 private:
  bool raw(void* p, size_t n) {
    if (in_.size() - pos_ < n) return false;
    std::memcpy(p, in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  std::string_view in_;
  size_t pos_ = 0;
};

std::string hex64(uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(v));
  return text;
}

// The first line where two key texts differ, for the report of a foreign entry.
std::string first_difference(std::string_view expected, std::string_view found) {
  size_t line_start = 0;
  for (size_t i = 0; i < std::min(expected.size(), found.size()); ++i) {
    if (expected[i] != found[i]) break;
    if (expected[i] == '\n') line_start = i + 1;
  }
  auto line = [&](std::string_view text) {
    if (line_start >= text.size()) return std::string("(end)");
    size_t end = text.find('\n', line_start);
    return std::string(text.substr(
        line_start, end == std::string_view::npos ? std::string_view::npos : end - line_start));
  };
  return "expected '" + line(expected) + "', found '" + line(found) + "'";
}

}  // namespace

std::string encode_variant(const CachedVariant& v) {
  Writer w;
  w.str(v.host.object);
  w.str(v.host.suffix);
  w.u32(static_cast<uint32_t>(v.host.functions.size()));
  for (const auto& [name, symbol] : v.host.functions) {
    w.str(name);
    w.str(symbol);
  }
  w.u32(static_cast<uint32_t>(v.host.launched_kernels.size()));
  for (const std::string& k : v.host.launched_kernels) w.str(k);
  w.u32(v.device.ptx ? 1 : 0);
  w.u32(static_cast<uint32_t>(v.device.arch));
  w.str(v.device.image);
  w.u32(static_cast<uint32_t>(v.device.kernels.size()));
  for (const DeviceBinary::Kernel& k : v.device.kernels) {
    w.str(k.name);
    w.u32(static_cast<uint32_t>(k.launch_params.size()));
    for (const std::string& p : k.launch_params) w.str(p);
    w.u32(static_cast<uint32_t>(k.param_bytes.size()));
    for (uint32_t bytes : k.param_bytes) w.u32(bytes);
  }
  return w.take();
}

bool decode_variant(std::string_view payload, CachedVariant* v, std::string* problem) {
  Reader r(payload);
  *v = CachedVariant{};
  uint32_t n = 0, ptx = 0, arch = 0;
  bool ok = r.str(&v->host.object) && r.str(&v->host.suffix) && r.count(&n, 16);
  for (uint32_t i = 0; ok && i < n; ++i) {
    std::string name, symbol;
    ok = r.str(&name) && r.str(&symbol);
    v->host.functions.emplace_back(std::move(name), std::move(symbol));
  }
  ok = ok && r.count(&n, 8);
  for (uint32_t i = 0; ok && i < n; ++i) {
    ok = r.str(&v->host.launched_kernels.emplace_back());
  }
  ok = ok && r.u32(&ptx) && r.u32(&arch) && r.str(&v->device.image) && r.count(&n, 12);
  v->device.ptx = ptx != 0;
  v->device.arch = static_cast<int>(arch);
  for (uint32_t i = 0; ok && i < n; ++i) {
    DeviceBinary::Kernel& k = v->device.kernels.emplace_back();
    uint32_t params = 0;
    ok = r.str(&k.name) && r.count(&params, 8);
    for (uint32_t j = 0; ok && j < params; ++j) ok = r.str(&k.launch_params.emplace_back());
    ok = ok && r.count(&params, 4);
    for (uint32_t j = 0; ok && j < params; ++j) ok = r.u32(&k.param_bytes.emplace_back());
  }
  if (!ok || !r.done() || v->host.object.empty() || v->host.suffix.empty()) {
    *problem = "its contents are malformed";
    return false;
  }
  return true;
}

namespace {

// The MAC key of a cache directory: read, or made on first use. Two processes making it at
// once agree on one: the key is linked into place only when the name is free, and the loser
// reads the winner's.
std::string open_mac_key(const PrivateDir& dir) {
  std::string why;
  PRIMJIT_USER_CHECK(mac_available(&why)) << why;
  for (int attempt = 0; attempt < 2; ++attempt) {
    PrivateDir::Read key = dir.read(DiskCache::kKeyFile, kMacKeyBytes, /*secret=*/true);
    if (key.status == PrivateDir::Status::kOk && key.bytes.size() == kMacKeyBytes) {
      return key.bytes;
    }
    std::string file = dir.path_of(DiskCache::kKeyFile);
    PRIMJIT_USER_CHECK(key.status == PrivateDir::Status::kMissing)
        << "refusing the disk cache in '" << dir.path() << "': its MAC key '" << file << "' "
        << (key.status == PrivateDir::Status::kOk
                ? "has " + std::to_string(key.bytes.size()) + " bytes, not " +
                      std::to_string(kMacKeyBytes)
                : key.problem)
        << "; delete it (primjit makes a new key and recompiles what the cache held), or "
           "disable the cache with PRIMJIT_CACHE=0";
    std::string problem;
    bool exists = false;
    if (dir.write(DiskCache::kKeyFile, new_mac_key(), &problem, /*replace=*/false, &exists)) {
      continue;  // read back what was linked
    }
    PRIMJIT_USER_CHECK(exists) << "cannot create the disk cache's MAC key: " << problem;
  }
  PRIMJIT_USER_CHECK(false) << "the disk cache's MAC key '" << dir.path_of(DiskCache::kKeyFile)
                            << "' keeps changing; is another program rewriting it?";
  return "";
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool is_cache_file(std::string_view name) {
  return DiskCache::is_entry_name(name) || PrivateDir::is_temp_name(name);
}

}  // namespace

DiskCache::DiskCache(std::string dir, uint64_t max_bytes)
    : dir_(dir), mac_key_(open_mac_key(dir_)), max_bytes_(max_bytes) {}

std::string DiskCache::default_dir() {
  if (std::string dir = env_or_empty("PRIMJIT_CACHE_DIR"); !dir.empty()) return dir;
  if (std::string xdg = env_or_empty("XDG_CACHE_HOME"); !xdg.empty()) return xdg + "/primjit";
  if (std::string home = env_or_empty("HOME"); !home.empty()) return home + "/.cache/primjit";
  return "";
}

uint64_t DiskCache::max_bytes_from_env(uint64_t fallback) {
  const char* env = std::getenv("PRIMJIT_CACHE_MAX_BYTES");
  if (env == nullptr || *env == 0) return fallback;
  std::string_view text = env;
  uint64_t value = 0;
  size_t i = 0;
  bool ok = !text.empty() && text[0] >= '0' && text[0] <= '9';
  for (; ok && i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    ok = value <= (UINT64_MAX - 9) / 10;
    value = value * 10 + static_cast<uint64_t>(text[i] - '0');
  }
  std::string_view suffix = text.substr(std::min(i, text.size()));
  int shift = 0;
  if (suffix == "K" || suffix == "KiB") shift = 10;
  if (suffix == "M" || suffix == "MiB") shift = 20;
  if (suffix == "G" || suffix == "GiB") shift = 30;
  if (suffix == "T" || suffix == "TiB") shift = 40;
  ok = ok && (suffix.empty() || shift != 0) && (value >> (64 - std::max(shift, 1))) == 0;
  PRIMJIT_USER_CHECK(ok) << "PRIMJIT_CACHE_MAX_BYTES='" << text
                         << "' is not a size: write a number of bytes, optionally with a K, M, "
                            "G or T suffix (binary multiples), e.g. 512M";
  return value << shift;
}

bool DiskCache::is_entry_name(std::string_view name) {
  std::string_view ext = kExtension;
  if (name.size() != 16 + ext.size() || !name.ends_with(ext)) return false;
  return std::all_of(name.begin(), name.begin() + 16,
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string DiskCache::file_of(const std::string& key) const {
  return hex64(hash_bytes(key)) + kExtension;
}

std::string DiskCache::path_of(const std::string& key) const { return dir_.path_of(file_of(key)); }

std::string DiskCache::seal(std::string_view key, std::string_view payload) const {
  Writer header;
  header.raw(kMagic, 8);
  header.u32(kFormat);
  header.u32(0);
  header.u64(key.size());
  header.u64(payload.size());
  std::string out = header.take();
  Mac mac = compute_mac(mac_key_, {out, key, payload});
  out.append(reinterpret_cast<const char*>(mac.data()), mac.size());
  out.reserve(out.size() + key.size() + payload.size());
  out.append(key);
  out.append(payload);
  return out;
}

bool DiskCache::unseal(std::string_view bytes, std::string_view* key, std::string_view* payload,
                       std::string* problem) const {
  if (bytes.size() < kHeaderBytes || std::memcmp(bytes.data(), kMagic, 8) != 0) {
    *problem = "is not a primjit cache file";
    return false;
  }
  uint32_t format = 0;
  uint64_t key_size = 0, payload_size = 0;
  std::memcpy(&format, bytes.data() + 8, 4);
  std::memcpy(&key_size, bytes.data() + 16, 8);
  std::memcpy(&payload_size, bytes.data() + 24, 8);
  if (format != kFormat) {
    *problem =
        "has format " + std::to_string(format) + ", this primjit writes " + std::to_string(kFormat);
    return false;
  }
  uint64_t body = bytes.size() - kHeaderBytes;
  if (key_size > body || payload_size != body - key_size) {
    *problem = "is truncated or has trailing bytes (" + std::to_string(bytes.size()) + " bytes)";
    return false;
  }
  *key = bytes.substr(kHeaderBytes, key_size);
  *payload = bytes.substr(kHeaderBytes + key_size);
  Mac mac = compute_mac(mac_key_, {bytes.substr(0, kSealedHeaderBytes), *key, *payload});
  if (!mac_equal(mac.data(),
                 reinterpret_cast<const unsigned char*>(bytes.data()) + kSealedHeaderBytes)) {
    *problem =
        "fails its MAC check (corrupt, or not written by you with this cache's key: never run)";
    return false;
  }
  return true;
}

DiskCache::Lookup DiskCache::load(const std::string& key) const {
  Lookup result;
  std::string name = file_of(key);
  PrivateDir::Read file =
      dir_.read(name, std::min(max_bytes_, kMaxEntryBytes), /*secret=*/false, /*touch=*/true);
  if (file.status == PrivateDir::Status::kMissing) return result;
  result.status = Status::kRejected;
  auto reject = [&](const std::string& why) {
    ++rejected_;
    result.problem = "disk cache entry '" + dir_.path_of(name) + "' " + why;
    return result;
  };
  if (file.status == PrivateDir::Status::kRefused) return reject(file.problem);
  std::string_view stored_key, payload;
  std::string problem;
  if (!unseal(file.bytes, &stored_key, &payload, &problem)) return reject(problem);
  if (stored_key != key) {
    return reject("was written for another key or version: " + first_difference(key, stored_key));
  }
  if (!decode_variant(payload, &result.variant, &problem)) return reject(problem);
  result.status = Status::kHit;
  return result;
}

bool DiskCache::store(const std::string& key, const CachedVariant& variant,
                      std::string* problem) const {
  std::string bytes = seal(key, encode_variant(variant));
  uint64_t limit = std::min(max_bytes_, kMaxEntryBytes);
  if (bytes.size() > limit) {
    *problem = "the variant's " + std::to_string(bytes.size()) +
               " bytes exceed the disk cache's limit of " + std::to_string(limit) +
               " bytes per entry (PRIMJIT_CACHE_MAX_BYTES)";
    return false;
  }
  std::string name = file_of(key);
  struct stat old {};
  int64_t replaced =
      ::fstatat(dir_.fd(), name.c_str(), &old, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(old.st_mode)
          ? old.st_size
          : 0;
  if (!dir_.write(name, bytes, problem)) return false;
  ++stores_;
  add_bytes(static_cast<int64_t>(bytes.size()) - replaced);
  return true;
}

void DiskCache::add_bytes(int64_t delta) const {
  if (total_.load() < 0) enforce_cap();  // first store: count once
  int64_t total = total_.fetch_add(delta) + delta;
  if (total > static_cast<int64_t>(max_bytes_)) enforce_cap();
}

// One scan of the directory: removes stale temporary files of dead writers, recounts the
// entries (other processes write too) and, over the cap, removes the least recently used
// down to 90 % of it, so the next scan is many stores away.
void DiskCache::enforce_cap() const {
  std::lock_guard<std::mutex> lock(scan_mutex_);
  ++scans_;
  int64_t now = now_ns();
  std::vector<PrivateDir::File> entries;
  uint64_t total = 0;
  for (PrivateDir::File& f : dir_.list(is_cache_file)) {
    if (!f.trusted) continue;  // not ours to count or delete
    if (PrivateDir::is_temp_name(f.name)) {
      if (now - f.mtime_ns > kStaleTempNs) dir_.remove(f.name);
      continue;
    }
    total += f.bytes;
    entries.push_back(std::move(f));
  }
  if (total > max_bytes_) {
    std::sort(entries.begin(), entries.end(),
              [](const PrivateDir::File& a, const PrivateDir::File& b) {
                return a.mtime_ns != b.mtime_ns ? a.mtime_ns < b.mtime_ns : a.name < b.name;
              });
    uint64_t target = max_bytes_ - max_bytes_ / 10;
    // The newest file (just written) stays even when it alone exceeds the target.
    for (size_t i = 0; i + 1 < entries.size() && total > target; ++i) {
      if (dir_.remove(entries[i].name)) {
        total -= entries[i].bytes;
        ++evictions_;
        PRIMJIT_LOG_INFO << "disk cache over " << max_bytes_ << " bytes: removed "
                         << dir_.path_of(entries[i].name);
      }
    }
  }
  total_.store(static_cast<int64_t>(total));
}

std::vector<DiskCache::Entry> DiskCache::entries(bool verify) const {
  std::vector<Entry> out;
  for (const PrivateDir::File& f : dir_.list(is_entry_name)) {
    Entry e{f.name, f.bytes, f.mtime_ns, "", ""};
    PrivateDir::Read file = dir_.read(f.name, std::min(max_bytes_, kMaxEntryBytes));
    std::string_view key, payload;
    if (file.status != PrivateDir::Status::kOk) {
      e.problem = file.status == PrivateDir::Status::kMissing ? "was removed" : file.problem;
    } else if (unseal(file.bytes, &key, &payload, &e.problem)) {
      e.key = std::string(key);
      CachedVariant v;
      if (verify && hex64(hash_bytes(e.key)) + kExtension != f.name) {
        e.problem = "is stored under another key's name";
      } else if (verify) {
        decode_variant(payload, &v, &e.problem);
      }
    }
    out.push_back(std::move(e));
  }
  return out;
}

DiskCache::Removed DiskCache::clear(std::optional<std::chrono::seconds> older_than) const {
  std::lock_guard<std::mutex> lock(scan_mutex_);
  Removed removed;
  int64_t cutoff =
      older_than ? now_ns() - std::chrono::nanoseconds(*older_than).count() : INT64_MAX;
  for (const PrivateDir::File& f : dir_.list(is_cache_file)) {
    if (!f.trusted || f.mtime_ns > cutoff) continue;
    if (dir_.remove(f.name)) {
      ++removed.files;
      removed.bytes += f.bytes;
    }
  }
  total_.store(-1);
  return removed;
}

namespace {

constexpr const char* kCounterNames[] = {"memory_hits", "disk_hits", "remote_hits", "compiles",
                                         "rejected",    "stores",    "evictions"};

uint64_t* counter_fields(DiskCache::Counters& c, size_t i) {
  uint64_t* fields[] = {&c.memory_hits, &c.disk_hits, &c.remote_hits, &c.compiles,
                        &c.rejected,    &c.stores,    &c.evictions};
  return fields[i];
}

DiskCache::Counters parse_counters(std::string_view text) {
  DiskCache::Counters c;
  std::istringstream in{std::string(text)};
  std::string name;
  uint64_t value = 0;
  while (in >> name >> value) {
    for (size_t i = 0; i < std::size(kCounterNames); ++i) {
      if (name == kCounterNames[i]) *counter_fields(c, i) = value;
    }
  }
  return c;
}

}  // namespace

void DiskCache::record(Counters c) const {
  c.rejected += rejected_.exchange(0);
  c.stores += stores_.exchange(0);
  c.evictions += evictions_.exchange(0);
  // Read, add and replace under an advisory lock on the key file, which every process of this
  // directory opens; the replacement is atomic, so a reader never sees half a file.
  int fd = ::openat(dir_.fd(), kKeyFile, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  if (::flock(fd, LOCK_EX) == 0) {
    Counters total = recorded();
    for (size_t i = 0; i < std::size(kCounterNames); ++i) {
      *counter_fields(total, i) += *counter_fields(c, i);
    }
    std::string text;
    for (size_t i = 0; i < std::size(kCounterNames); ++i) {
      text +=
          std::string(kCounterNames[i]) + " " + std::to_string(*counter_fields(total, i)) + "\n";
    }
    std::string problem;
    if (!dir_.write(kStatsFile, text, &problem)) {
      PRIMJIT_LOG_INFO << "disk cache counters not saved: " << problem;
    }
    ::flock(fd, LOCK_UN);
  }
  ::close(fd);
}

DiskCache::Counters DiskCache::recorded() const {
  PrivateDir::Read file = dir_.read(kStatsFile, 4096);
  return file.status == PrivateDir::Status::kOk ? parse_counters(file.bytes) : Counters{};
}

}  // namespace primjit::jit
