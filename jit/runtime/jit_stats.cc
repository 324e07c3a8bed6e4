// Jit::stats and its JSON form: the Jit's own sums (compile times, code sizes, the counters of
// kernels that are gone) plus the counters of its live kernels.
#include <cstdio>
#include <mutex>
#include <string>

#include "jit/runtime/kernel_state.h"
#include "primjit/jit.h"

namespace primjit {
namespace {

std::string ms_text(double ms) {
  char text[48];
  std::snprintf(text, sizeof(text), "%.3f", ms);
  return text;
}

}  // namespace

JitStats Jit::stats() const {
  State& jit = *state_;
  JitStats s;
  std::lock_guard<std::mutex> lock(jit.stats_mutex);
  s.compiles = jit.compiles;
  s.memory_hits = jit.memory_hits;
  s.disk_hits = jit.disk_hits;
  s.remote_hits = jit.remote_hits;
  s.tiered_hits = jit.tiered_hits;
  s.switch_overs = jit.switch_overs;
  // A live kernel adds its counters to the Jit's under stats_mutex as it leaves the set.
  for (const Kernel::State* k : jit.live_kernels) {
    s.compiles += k->misses;
    s.memory_hits += k->hits + k->recent.fast_hits();
    s.disk_hits += k->disk_hits;
    s.remote_hits += k->remote_hits;
    s.tiered_hits += k->tiered_hits;
    s.switch_overs += k->switch_overs;
  }
  s.compile = jit.times;
  s.host_code_bytes = jit.host_code_bytes;
  s.device_code_bytes = jit.device_code_bytes;
  return s;
}

std::string to_json(const JitStats& s) {
  const StageTimes& t = s.compile;
  double total =
      t.passes_ms + t.host_ms + t.device_codegen_ms + t.device_compile_ms + t.load_ms + t.disk_ms;
  std::string out = "{\"compiles\":" + std::to_string(s.compiles);
  out += ",\"hits\":{\"memory\":" + std::to_string(s.memory_hits) +
         ",\"disk\":" + std::to_string(s.disk_hits) +
         ",\"remote\":" + std::to_string(s.remote_hits) +
         ",\"tiered\":" + std::to_string(s.tiered_hits) + "}";
  out += ",\"switch_overs\":" + std::to_string(s.switch_overs);
  out += ",\"compile_ms\":{\"passes\":" + ms_text(t.passes_ms) +
         ",\"host_codegen\":" + ms_text(t.host_ms) +
         ",\"device_codegen\":" + ms_text(t.device_codegen_ms) +
         ",\"nvrtc\":" + ms_text(t.device_compile_ms) + ",\"load\":" + ms_text(t.load_ms) +
         ",\"disk\":" + ms_text(t.disk_ms) + ",\"total\":" + ms_text(total) + "}";
  out += ",\"code_bytes\":{\"host\":" + std::to_string(s.host_code_bytes) +
         ",\"device\":" + std::to_string(s.device_code_bytes) +
         ",\"total\":" + std::to_string(s.host_code_bytes + s.device_code_bytes) + "}}";
  return out;
}

}  // namespace primjit
