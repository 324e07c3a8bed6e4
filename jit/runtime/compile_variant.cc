#include "jit/runtime/compile_variant.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "ir/dump_config.h"
#include "jit/runtime/cache_tiers.h"
#include "jit/runtime/call_arguments.h"
#include "jit/runtime/kernel_state.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"
#include "primjit/log.h"
#include "primjit/passes.h"

namespace primjit::jit {
namespace {

void add(StageTimes& to, const StageTimes& t) {
  to.passes_ms += t.passes_ms;
  to.host_ms += t.host_ms;
  to.device_codegen_ms += t.device_codegen_ms;
  to.device_compile_ms += t.device_compile_ms;
  to.load_ms += t.load_ms;
  to.disk_ms += t.disk_ms;
}

// Adds a made variant's times to its kernel's and its Jit's statistics, its code to the Jit's
// sizes, and logs it (at info) with `reason` and the time of each stage.
void finish(Kernel::State& k, const Variant& v, Source source, std::string_view reason,
            const StageTimes& t) {
  {
    std::lock_guard<std::mutex> lock(k.mutex);
    add(k.times, t);
  }
  {
    std::lock_guard<std::mutex> lock(k.jit->stats_mutex);
    add(k.jit->times, t);
    k.jit->host_code_bytes += v.host_code_bytes;
    k.jit->device_code_bytes += v.device_code_bytes;
  }
  if (!log_enabled(LogLevel::kInfo)) return;
  double total =
      t.passes_ms + t.host_ms + t.device_codegen_ms + t.device_compile_ms + t.load_ms + t.disk_ms;
  char stages[256];
  std::snprintf(stages, sizeof(stages),
                "passes %.3f, host codegen %.3f, device codegen %.3f, nvrtc %.3f, load %.3f, "
                "disk %.3f ms",
                t.passes_ms, t.host_ms, t.device_codegen_ms, t.device_compile_ms, t.load_ms,
                t.disk_ms);
  char total_text[32];
  std::snprintf(total_text, sizeof(total_text), "%.3f ms", total);
  const char* what = source == Source::kDisk     ? "loaded a variant from the disk cache"
                     : source == Source::kRemote ? "loaded a variant from the remote cache"
                                                 : "compiled a variant";
  PRIMJIT_LOG_INFO << "kernel '" << k.name << "': " << what << " (" << reason << ") in "
                   << total_text << " [" << stages << "]";
}

// PRIMJIT_DUMP (and PRIMJIT_DUMP_IR): what to dump of this variant, with `dir` its own
// directory, DIR/<kernel>.vN; nothing (an empty config) when nothing is dumped.
DumpConfig variant_dumps(Kernel::State& k) {
  DumpConfig dumps = dump_config_from_env();
  if (dumps.any()) {
    dumps.dir += "/" + k.name + ".v" + std::to_string(k.dump_count.fetch_add(1));
  }
  return dumps;
}

// Redirects parameter buffers to their restrided versions everywhere.
class BufferReplacer : public StmtExprMutator {
 public:
  std::unordered_map<const BufferNode*, Buffer> replace;
  Buffer mutate_buffer_def(const Buffer& buffer) override {
    auto it = replace.find(buffer.get());
    if (it == replace.end()) return StmtExprMutator::mutate_buffer_def(buffer);
    remap_buffer(buffer, it->second);
    return it->second;
  }
};

// The parameter buffers of strided or offset arguments declare what the call's key records of
// their layout (push_layout): strides as constants or variables (a unit inner stride stays 1,
// so the inner loop still vectorizes), and an element offset variable; the packed API binds
// the variables from the DLTensor. Compact arguments at byte_offset 0 keep their buffers.
PrimFunc relayout(const Kernel::State& k, std::span<const Arg> args, bool dynamic,
                  const DimSet& symbolic, const PrimFunc& func) {
  BufferReplacer replacer;
  for (size_t i = 0; i < args.size(); ++i) {
    const ParamInfo& p = k.params[i];
    if (!p.buffer.defined() || p.declared_layout) continue;
    const auto* t = static_cast<const DLTensor*>(args[i].value.v_ptr);
    bool symbolic_strides = dynamic;
    for (size_t d = 0; d < p.dims.size(); ++d) symbolic_strides |= symbolic.count({i, d}) > 0;
    KeyBuffer layout;
    push_layout(*t, symbolic_strides, &layout);
    const int64_t* entries = layout.data();
    if (entries[0] == 0) continue;
    PRIMJIT_ICHECK(p.no_relayout.empty()) << "a strided call of '" << k.name << "' was accepted";
    const Buffer& b = p.buffer;
    DataType index = b->shape.empty() ? DataType::Int(64) : b->shape[0].dtype();
    std::vector<Expr> strides;
    if (entries[0] & kLayoutStrided) {
      for (size_t d = 0; d < b->shape.size(); ++d) {
        int64_t v = entries[1 + d];
        strides.push_back(v == kSymbolic
                              ? Expr(Var::make(b->name + "_stride" + std::to_string(d), index))
                              : IntImm::make(index, v));
      }
    }
    Expr elem_offset = b->elem_offset;
    if (entries[0] & kLayoutOffset) elem_offset = Var::make(b->name + "_elem_offset", index);
    replacer.replace.emplace(
        b.get(), Buffer::make(b->data, b->dtype, b->shape, std::move(strides), elem_offset, b->name,
                              b->data_alignment, b->offset_factor));
  }
  return replacer.replace.empty() ? func : replacer.mutate_function(func);
}

// The facts a kBucketed variant's key records: each dimension variable of `dims` is a multiple
// of 16 (true) or not (false). Asserted at the top of the body (the key guarantees they hold),
// so the simplifier assumes them: VersionLoops then gives the nests over these dimensions
// loops whose trip counts are visibly multiples of 16 (n_16 * 16, which LLVM sees too; an
// assert alone left the remainder loops) and Simplify keeps only the version the facts allow.
PrimFunc assume_bucket_facts(const PrimFunc& func, const std::vector<std::pair<Expr, bool>>& dims) {
  std::vector<Stmt> body;
  for (const auto& [dim, multiple] : dims) {
    Expr sixteen = IntImm::make(dim.dtype(), 16);
    Expr zero = IntImm::make(dim.dtype(), 0);
    std::string name = dim.as<VarNode>()->name;
    Expr remainder = FloorMod::make(dim, sixteen);
    body.push_back(AssertStmt::make(
        multiple ? EQ::make(remainder, zero) : NE::make(remainder, zero),
        StringImm::make(name + (multiple ? " is" : " is not") +
                        " a multiple of 16 in this variant (its specialization key)")));
  }
  body.push_back(func->body);
  return func.with_body(SeqStmt::make(std::move(body)));
}

}  // namespace

IRModule reachable_functions(const IRModule& module, const std::string& entry) {
  // A module call names its callee; a packed call's string may be a name or a global symbol
  // (another function's symbol can equal a name: both are kept).
  std::unordered_multimap<std::string, std::string> by_text;  // name or global symbol -> name
  for (const auto& [gvar, func] : module->functions) {
    by_text.emplace(gvar->name, gvar->name);
    const std::string symbol = func->global_symbol();
    if (!symbol.empty() && symbol != gvar->name) by_text.emplace(symbol, gvar->name);
  }
  std::set<std::string> kept{entry};
  std::vector<std::string> work{entry};
  auto keep = [&](const std::string& name) {  // unknown names are the pipeline's to report
    if (module->contains(name) && kept.insert(name).second) work.push_back(name);
  };
  auto reach = [&](const std::string& text) {
    auto [from, to] = by_text.equal_range(text);
    for (auto it = from; it != to; ++it) keep(it->second);
  };
  while (!work.empty()) {
    const PrimFunc func = module->lookup(work.back());
    work.pop_back();
    post_order_visit(func->body, [&](const Ref<Object>& node) {
      if (const auto* call = node.as<Call>()) {
        if (call->callee.defined()) keep(call->callee->name);
      } else if (const auto* text = node.as<StringImm>()) {
        reach(text->value);  // a name a packed call looks up (kept even if it is not one)
      }
    });
  }
  if (kept.size() == module->functions.size()) return module;
  std::vector<std::pair<GlobalVar, PrimFunc>> functions;
  for (const auto& f : module->functions) {
    if (kept.count(f.first->name) != 0) functions.push_back(f);
  }
  return IRModule::make(std::move(functions));
}

void bind_kernels(Variant& v) {
  DeviceCode* device = v.device.get();
  v.host->bind_kernels([device](const std::string& symbol) -> KernelHandle* {
    if (device == nullptr) return nullptr;
    auto it = device->kernels.find(symbol);
    return it == device->kernels.end() ? nullptr : it->second.get();
  });
}

DeviceOptions device_options(const Kernel::State& k, const Variant& v) {
  return DeviceOptions{k.options.fast_math, k.options.max_unroll, v.cuda_device,
                       k.jit->options.ptxas_opt_level};
}

IRModule lower_variant(const Kernel::State& k, std::span<const Arg> args, bool dynamic,
                       const DimSet& symbolic, std::span<const int64_t> key,
                       const passes::RunOptions& run) {
  // kBucketed: a dimension above the bucket limit stays symbolic (as build_key keys it),
  // unless the key has no bucket (a promoted shape's exact variant: every extent in its key).
  DimSet kept = symbolic;
  std::vector<std::pair<Expr, bool>> bucket_facts;  // dimension, multiple of 16
  const int64_t bucket = bucket_limit_of(k.options);
  if (!dynamic && bucket >= 0 && std::any_of(key.begin(), key.end(), is_bucket)) {
    std::set<const VarNode*> asserted;
    for (size_t i = 0; i < args.size(); ++i) {
      const Buffer& b = k.params[i].buffer;
      if (!b.defined()) continue;
      const auto* t = static_cast<const DLTensor*>(args[i].value.v_ptr);
      for (size_t d = 0; d < b->shape.size(); ++d) {
        int64_t entry = bucket_entry(t->shape[d], bucket);
        if (symbolic.count({i, d}) || !is_bucket(entry)) continue;
        kept.insert({i, d});
        const auto* var = b->shape[d].as<VarNode>();
        if (var != nullptr && asserted.insert(var).second) {
          bucket_facts.emplace_back(b->shape[d], entry == kBucketMultiple16);
        }
      }
    }
  }
  PrimFunc func = relayout(k, args, dynamic, kept, k.func);
  if (!dynamic) {
    std::unordered_map<const VarNode*, Expr> values;
    for (size_t i = 0; i < args.size(); ++i) {
      const Buffer& b = k.params[i].buffer;
      if (!b.defined()) continue;
      const auto* t = static_cast<const DLTensor*>(args[i].value.v_ptr);
      for (size_t d = 0; d < b->shape.size(); ++d) {
        const auto* var = b->shape[d].as<VarNode>();
        if (var == nullptr || kept.count({i, d}) || values.count(var)) continue;
        values.emplace(var, IntImm::make(var->dtype, t->shape[d]));
      }
    }
    func = passes::specialize(func, values);
  }
  if (!bucket_facts.empty()) func = assume_bucket_facts(func, bucket_facts);
  passes::PipelineOptions pipeline;
  pipeline.checked_arithmetic = k.options.checked_arithmetic;
  pipeline.fp_contract = k.options.fp_contract;
  std::vector<std::string> names = passes::default_pipeline(pipeline);
  if (dynamic || !kept.empty()) {
    // Symbolic or bucketed dimensions: loop nests get fast paths for multiples of 16 (or of
    // their tiles), on the flattened accesses and before Simplify uses what each path knows.
    auto flatten = std::find(names.begin(), names.end(), "FlattenBuffer");
    PRIMJIT_ICHECK(flatten != names.end()) << "the default pipeline has no FlattenBuffer";
    names.insert(flatten + 1, "VersionLoops");
  }
  return passes::run_passes(k.module.with_function(k.name, func), names, run);
}

std::shared_ptr<Variant> compile_variant(Kernel::State& k, std::span<const Arg> args,
                                         std::vector<int64_t> key, bool dynamic,
                                         const DimSet& symbolic, std::string_view reason,
                                         Source* source) {
  auto variant = std::make_shared<Variant>();
  variant->key = std::move(key);
  variant->cuda_device = std::max(cuda_device_of(args), 0);
  StageTimes times;
  *source = Source::kCompiled;
  // Dumps come from compiling: with PRIMJIT_DUMP set, the persistent tiers are left alone
  // (neither read nor written).
  DumpConfig dumps = variant_dumps(k);
  if (dumps.any()) PRIMJIT_LOG_INFO << "kernel '" << k.name << "': dumping to " << dumps.dir;
  std::string cache_key = dumps.any() ? "" : persistent_key(k, variant->key, variant->cuda_device);
  DiskLoad disk =
      cache_key.empty() ? DiskLoad::kOff : load_from_disk(k, cache_key, *variant, &times);
  if (disk == DiskLoad::kLoaded) {
    *source = Source::kDisk;
    finish(k, *variant, *source, reason, times);
    return variant;
  }
  if (disk != DiskLoad::kInUse && !cache_key.empty() &&
      load_from_remote(k, cache_key, *variant, &times)) {
    *source = Source::kRemote;
    finish(k, *variant, *source, reason, times);
    return variant;
  }

  Clock::time_point start = Clock::now();
  passes::RunOptions run;
  if (dumps.ir) run.dump_dir = dumps.dir;
  IRModule lowered = lower_variant(k, args, dynamic, symbolic, variant->key, run);
  times.passes_ms = ms_since(start);

  if (k.target->kind == "emu") {
    start = Clock::now();
    variant->interpreter = std::make_unique<emu::Interpreter>(lowered);
    variant->function = k.name;
    times.load_ms = ms_since(start);
    finish(k, *variant, *source, reason, times);
    return variant;
  }
  // Device code (NVRTC, module load) and host code (LLVM, ORC) compile at the same time. A
  // plain thread (not a TBB task): a compile costs milliseconds, and ThreadSanitizer sees it.
  CachedVariant image;
  std::thread device_thread;
  std::exception_ptr device_error;
  StageTimes device_times;
  if (k.target->is_device()) {
    device_thread = std::thread([&] {
      try {
        const DeviceOptions options = device_options(k, *variant);
        image.device = compile_device_code(lowered, k.target, options, &device_times,
                                           dumps.any() ? &dumps : nullptr);
        variant->device = load_device_binary(image.device, options, &device_times);
      } catch (...) {
        device_error = std::current_exception();
      }
    });
  }
  std::exception_ptr host_error;
  try {
    start = Clock::now();
    CompileDumps host_dumps{.want_ir = dumps.llvm,
                            .want_optimized_ir = dumps.llvm_opt,
                            .want_assembly = dumps.assembly};
    // A bucketed variant's symbolic loops are not unrolled at run time (HostCodegenOptions).
    const bool bucketed = std::any_of(variant->key.begin(), variant->key.end(), is_bucket);
    image.host = compile_host(k.jit->engine, lowered,
                              {.max_unroll = k.options.max_unroll, .runtime_unroll = !bucketed},
                              &host_dumps);
    variant->host = std::make_unique<HostProgram>(k.jit->engine, image.host);
    variant->entry = variant->host->function(k.name);
    times.host_ms = ms_since(start);
    if (dumps.llvm) write_dump_file(dumps.dir, "host.ll", host_dumps.ir);
    if (dumps.llvm_opt) write_dump_file(dumps.dir, "host.opt.ll", host_dumps.optimized_ir);
    if (dumps.assembly) write_dump_file(dumps.dir, "host.s", host_dumps.assembly);
  } catch (...) {
    host_error = std::current_exception();
  }
  if (device_thread.joinable()) device_thread.join();
  if (device_error) std::rethrow_exception(device_error);
  if (host_error) std::rethrow_exception(host_error);
  times.device_codegen_ms = device_times.device_codegen_ms;
  times.device_compile_ms = device_times.device_compile_ms;
  times.load_ms = device_times.load_ms;
  bind_kernels(*variant);
  variant->host_code_bytes = image.host.object.size();
  variant->device_code_bytes = image.device.image.size();

  if (disk == DiskLoad::kMissing || (disk == DiskLoad::kOff && !cache_key.empty())) {
    start = Clock::now();
    store_in_tiers(k, cache_key, image);
    times.disk_ms = ms_since(start);
  }
  finish(k, *variant, *source, reason, times);
  return variant;
}

}  // namespace primjit::jit
