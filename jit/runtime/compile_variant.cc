#include "jit/runtime/compile_variant.h"

#include <chrono>
#include <cstdlib>
#include <exception>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>

#include "jit/runtime/cache_tiers.h"
#include "jit/runtime/kernel_state.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"
#include "primjit/passes.h"

namespace primjit::jit {
namespace {

void add_times(Kernel::State& k, const StageTimes& t) {
  std::lock_guard<std::mutex> lock(k.mutex);
  k.times.passes_ms += t.passes_ms;
  k.times.host_ms += t.host_ms;
  k.times.device_codegen_ms += t.device_codegen_ms;
  k.times.device_compile_ms += t.device_compile_ms;
  k.times.load_ms += t.load_ms;
  k.times.disk_ms += t.disk_ms;
}

// PRIMJIT_DUMP_IR=DIR: each variant's passes go to DIR/<kernel>.vN/NN_<pass>.tir.
passes::RunOptions dump_options(Kernel::State& k) {
  passes::RunOptions options;
  if (const char* dir = std::getenv("PRIMJIT_DUMP_IR"); dir != nullptr && *dir != 0) {
    options.dump_dir =
        std::string(dir) + "/" + k.name + ".v" + std::to_string(k.dump_count.fetch_add(1));
  }
  return options;
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

// The facts a kBucketed variant's key records: each dimension variable in `dims` is a multiple
// of 16. Asserted at the top of the body, so the simplifier assumes them for the loops (and
// the tiled and vectorized paths drop their remainders); the key guarantees they hold.
PrimFunc assume_multiples_of_16(const PrimFunc& func, const std::vector<Expr>& dims) {
  std::vector<Stmt> body;
  for (const Expr& dim : dims) {
    Expr sixteen = IntImm::make(dim.dtype(), 16);
    Expr zero = IntImm::make(dim.dtype(), 0);
    std::string name = dim.as<VarNode>()->name;
    body.push_back(AssertStmt::make(
        EQ::make(FloorMod::make(dim, sixteen), zero),
        StringImm::make(name + " is a multiple of 16 in this variant (its specialization key)")));
  }
  body.push_back(func->body);
  return func.with_body(SeqStmt::make(std::move(body)));
}

}  // namespace

void bind_kernels(Variant& v) {
  DeviceCode* device = v.device.get();
  v.host->bind_kernels([device](const std::string& symbol) -> KernelHandle* {
    if (device == nullptr) return nullptr;
    auto it = device->kernels.find(symbol);
    return it == device->kernels.end() ? nullptr : it->second.get();
  });
}

DeviceOptions device_options(const Kernel::State& k) {
  return DeviceOptions{k.options.fast_math, k.options.cuda_stream, k.options.max_unroll};
}

IRModule lower_variant(const Kernel::State& k, std::span<const Arg> args, bool dynamic,
                       const DimSet& symbolic, const passes::RunOptions& run) {
  // kBucketed: a dimension above the bucket limit stays symbolic (as build_key keys it).
  DimSet kept = symbolic;
  std::vector<Expr> multiples_of_16;
  const int64_t bucket = bucket_limit_of(k.options);
  if (!dynamic && bucket >= 0) {
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
        if (entry == kBucketMultiple16 && var != nullptr && asserted.insert(var).second) {
          multiples_of_16.push_back(b->shape[d]);
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
  if (!multiples_of_16.empty()) func = assume_multiples_of_16(func, multiples_of_16);
  passes::PipelineOptions pipeline;
  pipeline.checked_arithmetic = k.options.checked_arithmetic;
  pipeline.fp_contract = k.options.fp_contract;
  return passes::run_passes(k.module.with_function(k.name, func),
                            passes::default_pipeline(pipeline), run);
}

std::shared_ptr<Variant> compile_variant(Kernel::State& k, std::span<const Arg> args,
                                         std::vector<int64_t> key, bool dynamic,
                                         const DimSet& symbolic, Source* source) {
  auto variant = std::make_shared<Variant>();
  variant->key = std::move(key);
  StageTimes times;
  *source = Source::kCompiled;
  std::string cache_key = persistent_key(k, variant->key);
  DiskLoad disk =
      cache_key.empty() ? DiskLoad::kOff : load_from_disk(k, cache_key, *variant, &times);
  if (disk == DiskLoad::kLoaded) {
    *source = Source::kDisk;
    add_times(k, times);
    return variant;
  }
  if (disk != DiskLoad::kInUse && !cache_key.empty() &&
      load_from_remote(k, cache_key, *variant, &times)) {
    *source = Source::kRemote;
    add_times(k, times);
    return variant;
  }

  Clock::time_point start = Clock::now();
  IRModule lowered = lower_variant(k, args, dynamic, symbolic, dump_options(k));
  times.passes_ms = ms_since(start);

  if (k.target->kind == "emu") {
    start = Clock::now();
    variant->interpreter = std::make_unique<emu::Interpreter>(lowered);
    variant->function = k.name;
    times.load_ms = ms_since(start);
    add_times(k, times);
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
        image.device = compile_device_code(lowered, k.target, device_options(k), &device_times);
        variant->device = load_device_binary(image.device, device_options(k), &device_times);
      } catch (...) {
        device_error = std::current_exception();
      }
    });
  }
  std::exception_ptr host_error;
  try {
    start = Clock::now();
    image.host = compile_host(k.jit->engine, lowered, {k.options.max_unroll});
    variant->host = std::make_unique<HostProgram>(k.jit->engine, image.host);
    variant->entry = variant->host->function(k.name);
    times.host_ms = ms_since(start);
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

  if (disk == DiskLoad::kMissing || (disk == DiskLoad::kOff && !cache_key.empty())) {
    start = Clock::now();
    store_in_tiers(k, cache_key, image);
    times.disk_ms = ms_since(start);
  }
  add_times(k, times);
  return variant;
}

}  // namespace primjit::jit
