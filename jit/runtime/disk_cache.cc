#include "jit/runtime/disk_cache.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

#include "primjit/error.h"
#include "primjit/log.h"

namespace primjit::jit {
namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'P', 'J', 'V', 'C', 'A', 'C', 'H', 'E'};
constexpr uint32_t kFormat = 1;
constexpr const char* kExtension = ".pjv";
// magic, format, reserved, key length, payload length, checksum
constexpr size_t kHeaderBytes = 8 + 4 + 4 + 8 + 8 + 8;

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

bool read_file(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  if (size < 0) return false;
  out->resize(static_cast<size_t>(size));
  in.seekg(0, std::ios::beg);
  in.read(out->data(), size);
  return static_cast<bool>(in);
}

}  // namespace

uint64_t hash_bytes(std::string_view bytes, uint64_t seed) {
  // Each step is a bijection of the state for a given word, so a changed word always changes
  // the result; lengths are checked separately. Then a final avalanche.
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t h = seed ^ (bytes.size() * 0xC2B2AE3D27D4EB4Full);
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, bytes.data() + i, 8);
    h = (h ^ w) * kMul;
    h = (h << 31) | (h >> 33);
  }
  uint64_t tail = 0;
  std::memcpy(&tail, bytes.data() + i, bytes.size() - i);
  h = (h ^ tail) * kMul;
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  h *= 0xC4CEB9FE1A85EC53ull;
  h ^= h >> 33;
  return h;
}

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
  }
  if (!ok || !r.done() || v->host.object.empty() || v->host.suffix.empty()) {
    *problem = "its contents are malformed";
    return false;
  }
  return true;
}

DiskCache::DiskCache(std::string dir, uint64_t max_bytes)
    : dir_(std::move(dir)), max_bytes_(max_bytes) {
  PRIMJIT_USER_CHECK(!dir_.empty())
      << "the disk cache needs a directory: set PRIMJIT_CACHE_DIR (or HOME), or disable it with "
         "PRIMJIT_CACHE=0";
  std::error_code ec;
  fs::create_directories(dir_, ec);
  PRIMJIT_USER_CHECK(!ec && fs::is_directory(dir_, ec))
      << "cannot create the disk cache directory '" << dir_ << "' (" << ec.message()
      << "); set PRIMJIT_CACHE_DIR to a writable directory, or disable the cache with "
         "PRIMJIT_CACHE=0";
}

std::string DiskCache::default_dir() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v != nullptr ? v : "";
  };
  if (std::string dir = env("PRIMJIT_CACHE_DIR"); !dir.empty()) return dir;
  if (std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty()) return xdg + "/primjit";
  if (std::string home = env("HOME"); !home.empty()) return home + "/.cache/primjit";
  return "";
}

std::string DiskCache::path_of(const std::string& key) const {
  return dir_ + "/" + hex64(hash_bytes(key)) + kExtension;
}

DiskCache::Lookup DiskCache::load(const std::string& key) const {
  Lookup result;
  std::string path = path_of(key);
  std::string bytes;
  if (!read_file(path, &bytes)) return result;  // kMissing
  result.status = Status::kRejected;
  auto reject = [&](std::string why) {
    result.problem = "disk cache entry '" + path + "' " + why;
    return result;
  };
  if (bytes.size() < kHeaderBytes || std::memcmp(bytes.data(), kMagic, 8) != 0) {
    return reject("is not a primjit cache file");
  }
  uint32_t format = 0;
  uint64_t key_size = 0, payload_size = 0, checksum = 0;
  std::memcpy(&format, bytes.data() + 8, 4);
  std::memcpy(&key_size, bytes.data() + 16, 8);
  std::memcpy(&payload_size, bytes.data() + 24, 8);
  std::memcpy(&checksum, bytes.data() + 32, 8);
  if (format != kFormat) {
    return reject("has format " + std::to_string(format) + ", this primjit writes " +
                  std::to_string(kFormat));
  }
  uint64_t body = bytes.size() - kHeaderBytes;
  if (key_size > body || payload_size != body - key_size) {
    return reject("is truncated or has trailing bytes (" + std::to_string(bytes.size()) +
                  " bytes)");
  }
  std::string_view stored_key(bytes.data() + kHeaderBytes, key_size);
  std::string_view payload(bytes.data() + kHeaderBytes + key_size, payload_size);
  if (hash_bytes(payload, hash_bytes(stored_key)) != checksum) {
    return reject("fails its checksum (corrupt)");
  }
  if (stored_key != key) {
    return reject("was written for another key or version: " + first_difference(key, stored_key));
  }
  std::string problem;
  if (!decode_variant(payload, &result.variant, &problem)) return reject(problem);
  result.status = Status::kHit;
  std::error_code ec;
  fs::last_write_time(path, fs::file_time_type::clock::now(), ec);  // age for the size cap
  return result;
}

bool DiskCache::store(const std::string& key, const CachedVariant& variant,
                      std::string* problem) const {
  std::string payload = encode_variant(variant);
  Writer header;
  header.raw(kMagic, 8);
  header.u32(kFormat);
  header.u32(0);
  header.u64(key.size());
  header.u64(payload.size());
  header.u64(hash_bytes(payload, hash_bytes(key)));
  std::string head = header.take();

  static std::atomic<uint64_t> counter{0};
  static const uint64_t nonce = std::random_device{}();
  std::string path = path_of(key);
  std::string temp = path + "." + std::to_string(::getpid()) + "." + hex64(nonce) + "." +
                     std::to_string(counter.fetch_add(1)) + ".tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(head.data(), static_cast<std::streamsize>(head.size()));
    out.write(key.data(), static_cast<std::streamsize>(key.size()));
    out.write(payload.data(), static_cast<std::streamsize>(payload.size()));
    out.close();
    if (!out) {
      std::error_code ec;
      fs::remove(temp, ec);
      *problem = "cannot write the disk cache file '" + temp + "'";
      return false;
    }
  }
  std::error_code ec;
  fs::rename(temp, path, ec);  // atomic: readers see the old file or the new one
  if (ec) {
    fs::remove(temp, ec);
    *problem = "cannot rename '" + temp + "' to '" + path + "': " + ec.message();
    return false;
  }
  enforce_cap();
  return true;
}

void DiskCache::enforce_cap() const {
  struct File {
    fs::path path;
    uint64_t size;
    fs::file_time_type time;
  };
  std::vector<File> files;
  uint64_t total = 0;
  std::error_code ec;
  auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    std::error_code e;
    auto time = fs::last_write_time(p, e);
    if (e) continue;
    if (p.extension() == ".tmp") {
      // A writer that died before its rename; live writers finish within seconds.
      if (now - time > std::chrono::minutes(10)) fs::remove(p, e);
      continue;
    }
    if (p.extension() != kExtension) continue;
    uint64_t size = fs::file_size(p, e);
    if (e) continue;
    files.push_back({p, size, time});
    total += size;
  }
  if (total <= max_bytes_) return;
  std::sort(files.begin(), files.end(),
            [](const File& a, const File& b) { return a.time < b.time; });
  // The newest file (just written) stays even when it alone exceeds the cap.
  for (size_t i = 0; i + 1 < files.size() && total > max_bytes_; ++i) {
    std::error_code e;
    if (fs::remove(files[i].path, e)) {
      total -= files[i].size;
      PRIMJIT_LOG_INFO << "disk cache over " << max_bytes_ << " bytes: removed "
                       << files[i].path.string();
    }
  }
}

}  // namespace primjit::jit
