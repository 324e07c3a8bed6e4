#include "jit/runtime/cache_tiers.h"

#include <chrono>
#include <mutex>
#include <set>
#include <sstream>

#include "jit/cuda/driver.h"
#include "jit/cuda/nvrtc_compiler.h"
#include "jit/runtime/compile_variant.h"
#include "jit/runtime/environment.h"
#include "jit/runtime/kernel_state.h"
#include "primjit/error.h"
#include "primjit/ir/text.h"
#include "primjit/log.h"
#include "primjit/passes.h"

namespace primjit::jit {
namespace {

// Links and loads a cached image into `v`; false (and why) when it cannot be used.
bool load_image(Kernel::State& k, const CachedVariant& image, Variant& v, std::string* problem) {
  try {
    StageTimes ignored;  // the whole load counts as cache time
    v.device = load_device_binary(image.device, device_options(k, v), &ignored);
    v.host = std::make_unique<HostProgram>(k.jit->engine, image.host);
    v.entry = v.host->function(k.name);
    bind_kernels(v);
    v.host_code_bytes = image.host.object.size();
    v.device_code_bytes = image.device.image.size();
    return true;
  } catch (const Error& e) {
    *problem = e.what();
    v.host.reset();
    v.device.reset();
    v.entry = {};
    return false;
  }
}

}  // namespace

std::unique_ptr<DiskCache> open_disk_cache(const JitOptions& options) {
  std::string off = env_or_empty("PRIMJIT_CACHE");
  bool enabled = options.disk_cache == DiskCacheMode::kEnabled ||
                 (options.disk_cache == DiskCacheMode::kEnvironment && off != "0" && off != "off" &&
                  off != "false");
  if (enabled) {
    std::string dir = options.cache_dir.empty() ? DiskCache::default_dir() : options.cache_dir;
    try {
      uint64_t max_bytes = options.disk_cache_max_bytes != 0
                               ? options.disk_cache_max_bytes
                               : DiskCache::max_bytes_from_env(DiskCache::kDefaultMaxBytes);
      return std::make_unique<DiskCache>(dir, max_bytes);
    } catch (const Error& e) {
      if (options.disk_cache == DiskCacheMode::kEnabled) throw;
      // Once per process and problem: every Jit of a program would repeat it.
      static std::mutex mutex;
      static std::set<std::string> warned;
      std::lock_guard<std::mutex> lock(mutex);
      if (warned.insert(e.what()).second) {
        PRIMJIT_LOG_WARNING << e.what() << "; continuing without the disk cache";
      }
    }
  }
  return nullptr;
}

std::unique_ptr<RemoteCache> open_remote_cache(const JitOptions& options) {
  bool explicit_url = !options.remote_cache.empty();
  std::string url = explicit_url ? options.remote_cache : env_or_empty("PRIMJIT_CACHE_REMOTE");
  if (url.empty() || options.disk_cache == DiskCacheMode::kDisabled) return nullptr;
  try {
    RemoteOptions remote_options;
    std::string problem;
    PRIMJIT_USER_CHECK(parse_redis_url(url, &remote_options, &problem)) << problem;
    remote_options.budget = std::chrono::milliseconds(options.remote_budget_ms);
    std::string key_file = options.remote_key_file.empty() ? env_or_empty("PRIMJIT_CACHE_KEY_FILE")
                                                           : options.remote_key_file;
    PRIMJIT_USER_CHECK(!key_file.empty())
        << "the remote cache " << url
        << " needs the team's key (PRIMJIT_CACHE_KEY_FILE): its values are never trusted "
           "without it";
    return std::make_unique<RemoteCache>(remote_options, TeamKey::load(key_file));
  } catch (const Error& e) {
    if (explicit_url) throw;
    static std::once_flag once;
    std::call_once(
        once, [&] { PRIMJIT_LOG_WARNING << e.what() << "; continuing without the remote cache"; });
  }
  return nullptr;
}

std::string persistent_key(Kernel::State& k, const std::vector<int64_t>& key, int cuda_device) {
  if ((k.jit->disk == nullptr && k.jit->remote == nullptr) || k.target->kind == "emu") return "";
  std::call_once(k.disk_once, [&] {
    try {
      std::ostringstream out;
      out << k.jit->host_key << "target " << k.target.str() << "\nchecked_arithmetic "
          << k.options.checked_arithmetic << " fp_contract " << k.options.fp_contract << "\n";
      if (k.target->kind == "cuda") {
        CudaDriver* driver = CudaDriver::try_get();
        if (driver == nullptr || driver->device_count() == 0) return;
        NvrtcInfo nvrtc = nvrtc_info();
        out << "nvrtc " << nvrtc.major << "." << nvrtc.minor << " driver " << driver->version()
            << " fast_math " << k.options.fast_math
#ifndef NDEBUG
            << " line_info"
#endif
            << "\n";
      }
      if (k.target->kind == "cuda" && k.jit->options.ptxas_opt_level >= 0) {
        out << "ptxas O" << k.jit->options.ptxas_opt_level << "\n";
      }
      if (k.options.max_unroll != passes::kDefaultMaxUnroll) {
        out << "max_unroll " << k.options.max_unroll << "\n";
      }
      out << "function " << k.name << "\n" << print(k.module);
      k.disk_prefix = out.str();
    } catch (const Error& e) {
      PRIMJIT_LOG_INFO << "kernel '" << k.name << "' is not cached on disk: " << e.what();
    }
  });
  if (k.disk_prefix.empty()) return "";
  std::string text = k.disk_prefix;
  if (k.target->kind == "cuda") {
    // The architecture of the device this variant is for (each device its own image).
    try {
      text += "\ndevice sm_" + std::to_string(CudaDriver::get().device_info(cuda_device).arch());
    } catch (const Error& e) {
      PRIMJIT_LOG_INFO << "kernel '" << k.name << "' is not cached on disk: " << e.what();
      return "";
    }
  }
  text += "\nkey";
  for (int64_t v : key) text += " " + std::to_string(v);
  // The same key for people (primjit-cache ls): each tensor's dtype and shape.
  text += "\nargs" + key_args_text(k.params, key);
  return text + "\n";
}

DiskLoad load_from_disk(Kernel::State& k, const std::string& key, Variant& v, StageTimes* times) {
  if (k.jit->disk == nullptr) return DiskLoad::kOff;
  Clock::time_point start = Clock::now();
  DiskCache::Lookup found = k.jit->disk->load(key);
  if (found.status == DiskCache::Status::kMissing) return DiskLoad::kMissing;
  if (found.status == DiskCache::Status::kRejected) {
    PRIMJIT_LOG_WARNING << found.problem << "; compiling kernel '" << k.name
                        << "' again and replacing the entry";
    return DiskLoad::kMissing;
  }
  if (HostProgram::is_linked(k.jit->engine, found.variant.host.suffix)) {
    return DiskLoad::kInUse;
  }
  std::string problem;
  if (!load_image(k, found.variant, v, &problem)) {
    PRIMJIT_LOG_WARNING << "disk cache entry '" << k.jit->disk->path_of(key)
                        << "' cannot be loaded (" << problem << "); compiling kernel '" << k.name
                        << "' again";
    return DiskLoad::kMissing;
  }
  times->disk_ms += ms_since(start);
  return DiskLoad::kLoaded;
}

bool load_from_remote(Kernel::State& k, const std::string& key, Variant& v, StageTimes* times) {
  if (k.jit->remote == nullptr) return false;
  Clock::time_point start = Clock::now();
  RemoteCache::Lookup found = k.jit->remote->get(key);
  if (found.status == RemoteCache::Status::kRejected) {
    PRIMJIT_LOG_WARNING << found.problem << "; compiling kernel '" << k.name << "' locally";
  }
  if (found.status != RemoteCache::Status::kHit) return false;
  CachedVariant image;
  std::string problem;
  if (!decode_variant(found.payload, &image, &problem) ||
      HostProgram::is_linked(k.jit->engine, image.host.suffix) ||
      !load_image(k, image, v, &problem)) {
    if (!problem.empty()) {
      PRIMJIT_LOG_WARNING << "remote cache value for kernel '" << k.name << "' cannot be used ("
                          << problem << "); compiling it locally";
    }
    return false;
  }
  if (k.jit->disk != nullptr) k.jit->disk->store(key, image, &problem);
  times->disk_ms += ms_since(start);
  return true;
}

void store_in_tiers(Kernel::State& k, const std::string& key, const CachedVariant& image) {
  std::string problem;
  if (k.jit->disk != nullptr && !k.jit->disk->store(key, image, &problem)) {
    PRIMJIT_LOG_WARNING << problem << "; kernel '" << k.name
                        << "' works, but later processes will compile it again";
  }
  if (k.jit->remote != nullptr && k.jit->remote->can_write() &&
      !k.jit->remote->put(key, encode_variant(image), &problem)) {
    PRIMJIT_LOG_INFO << "kernel '" << k.name << "' not stored in the remote cache: " << problem;
  }
}

}  // namespace primjit::jit
