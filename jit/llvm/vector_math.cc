#include "jit/llvm/vector_math.h"

#include <dlfcn.h>

#include <llvm/Analysis/VectorUtils.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/VFABIDemangler.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/Transforms/Utils/ModuleUtils.h>

#include "jit/llvm/inline_math.h"
#include "primjit/error.h"

namespace primjit::jit {
namespace {

// The ops libmvec computes, with the largest error of its float64 variants that we measured
// against long double libm (AVX2, 4 lanes; 2 million random and range-sampled arguments per
// function, tests/unit/jit/vector_math_test.cc checks the bounds we rely on). A float64 op
// uses the vector variant when this plus half an ulp (the distance of the exact result from
// the exactly rounded one) is within the op's max_ulp; float32 always does (see the header).
const OpMap<double>& vector_math_table() {
  static const OpMap<double> table = [] {
    OpMap<double> m("host code generation's vector math");
    m.set("exp", 2.70)
        .set("exp2", 1.62)
        .set("exp10", 1.0)
        .set("log", 1.35)
        .set("log2", 1.44)
        .set("log10", 1.08)
        .set("log1p", 1.55)
        .set("tanh", 2.11)
        .set("erf", 2.29)
        .set("sin", 2.93)
        .set("cos", 3.34)
        .set("tan", 3.19)
        .set("pow", 1.0);
    return m;
  }();
  return table;
}

// The vector function ABI variant the host runs: its ISA letter and float64 lanes.
struct VectorIsa {
  char letter = 'b';
  int f64_lanes = 2;
};

const VectorIsa& host_isa() {
  static const VectorIsa isa = [] {
    if (host_cpu_has("avx2")) return VectorIsa{'d', 4};
    if (host_cpu_has("avx")) return VectorIsa{'c', 4};
    return VectorIsa{'b', 2};
  }();
  return isa;
}

llvm::Type* double_like(llvm::Type* t) {
  return t->getWithNewType(llvm::Type::getDoubleTy(t->getContext()));
}

std::string scalar_name(const std::string& libm, llvm::Type* element) {
  return element->isFloatTy() ? libm + "f" : libm;
}

void set_pure(llvm::Function* f) {
  f->setDoesNotAccessMemory();
  f->setDoesNotThrow();
  f->setWillReturn();
  f->setNoSync();
  f->setDoesNotFreeMemory();
}

// The host's float64 variant of `libm` in the vector function ABI: `_ZGVdN4v_exp`.
std::string variant_name(const std::string& libm, int arity) {
  const VectorIsa& isa = host_isa();
  return std::string("_ZGV") + isa.letter + "N" + std::to_string(isa.f64_lanes) +
         std::string(static_cast<size_t>(arity), 'v') + "_" + libm;
}

// Whether this process can link that variant: x86-64 with a libmvec that has it (glibc 2.22
// brought libmvec, 2.35 tanh, erf, log1p and others). Without it the op stays a scalar libm
// call, even in vectorized loops, rather than failing to link.
bool variant_available(const std::string& libm, int arity) {
#if defined(__x86_64__)
  static void* const library = dlopen(kVectorMathLibrary, RTLD_NOW | RTLD_LOCAL);
  return library != nullptr && dlsym(library, variant_name(libm, arity).c_str()) != nullptr;
#else
  (void)libm;
  (void)arity;
  return false;
#endif
}

// The body of a float64 helper of an op computed inline for a range of arguments
// (has_ranged_math): the inline form on every lane, and where a lane is out of its range
// (rare: |x| beyond 2^20, infinities, NaN), the scalar libm function on each lane of the
// vector instead.
void ranged_helper_body(llvm::Function* f, const OpNode& op, const std::string& libm, int lanes) {
  llvm::Module& m = *f->getParent();
  llvm::LLVMContext& ctx = m.getContext();
  llvm::Type* element = llvm::Type::getDoubleTy(ctx);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", f));
  llvm::Value* x = f->getArg(0);
  llvm::Value* in_range = nullptr;
  llvm::Value* fast = emit_ranged_math(b, op, x, &in_range);
  llvm::BasicBlock* entry = b.GetInsertBlock();
  llvm::BasicBlock* slow = llvm::BasicBlock::Create(ctx, "out_of_range", f);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, "done", f);
  b.CreateCondBr(b.CreateAndReduce(in_range), done, slow);
  b.SetInsertPoint(slow);
  llvm::FunctionCallee scalar =
      m.getOrInsertFunction(libm, llvm::FunctionType::get(element, {element}, false));
  llvm::Value* mixed = fast;
  for (int i = 0; i < lanes; ++i) {
    llvm::CallInst* call = b.CreateCall(scalar, {b.CreateExtractElement(x, b.getInt32(i))});
    call->setDoesNotAccessMemory();  // as every libm call: errno is not observed
    call->setDoesNotThrow();
    call->addFnAttr(llvm::Attribute::WillReturn);
    llvm::Value* lane = b.CreateSelect(b.CreateExtractElement(in_range, b.getInt32(i)),
                                       b.CreateExtractElement(fast, b.getInt32(i)), call);
    mixed = b.CreateInsertElement(mixed, lane, b.getInt32(i));
  }
  b.CreateBr(done);
  b.SetInsertPoint(done);
  llvm::PHINode* result = b.CreatePHI(fast->getType(), 2);
  result->addIncoming(fast, entry);
  result->addIncoming(mixed, slow);
  b.CreateRet(result);
}

// `internal <lanes x T> @primjit_vmath_<scalar name>_<lanes>.<module>(<lanes x T> ...)`: the
// host's float64 variant applied chunk by chunk (the last chunk padded with zeros), float32
// extended before and rounded after. Like every other name of a host module, it carries the
// module's per-image name: a module compiled in two parts (split_glue) exports the helpers
// that both parts call, and two images' helpers must not meet in one JIT session. Float64 ops
// with a ranged inline form compute it instead (ranged_helper_body).
llvm::Function* vector_helper(llvm::Module& m, const OpNode& op, const std::string& libm, int arity,
                              llvm::Type* element, int lanes) {
  std::string name = "primjit_vmath_" + scalar_name(libm, element) + "_" + std::to_string(lanes) +
                     "." + m.getModuleIdentifier();
  if (llvm::Function* f = m.getFunction(name)) return f;
  llvm::LLVMContext& ctx = m.getContext();
  auto* vt = llvm::FixedVectorType::get(element, lanes);
  std::vector<llvm::Type*> params(static_cast<size_t>(arity), vt);
  llvm::Function* f = llvm::Function::Create(llvm::FunctionType::get(vt, params, false),
                                             llvm::GlobalValue::InternalLinkage, name, m);
  set_pure(f);
  if (element->isDoubleTy() && has_ranged_math(op, 64)) {
    ranged_helper_body(f, op, libm, lanes);
    return f;
  }
  const int width = host_isa().f64_lanes;
  auto* chunk_type = llvm::FixedVectorType::get(llvm::Type::getDoubleTy(ctx), width);
  const std::string variant = variant_name(libm, arity);
  std::vector<llvm::Type*> chunk_params(static_cast<size_t>(arity), chunk_type);
  llvm::FunctionCallee callee =
      m.getOrInsertFunction(variant, llvm::FunctionType::get(chunk_type, chunk_params, false));
  set_pure(llvm::cast<llvm::Function>(callee.getCallee()));

  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", f));
  std::vector<llvm::Value*> wide;
  for (llvm::Argument& a : f->args()) {
    wide.push_back(element->isFloatTy() ? b.CreateFPExt(&a, double_like(vt)) : &a);
  }
  llvm::Value* zero = llvm::Constant::getNullValue(double_like(vt));
  std::vector<llvm::Value*> chunks;
  for (int begin = 0; begin < lanes; begin += width) {
    std::vector<int> mask;
    for (int i = 0; i < width; ++i) mask.push_back(begin + i < lanes ? begin + i : lanes);
    std::vector<llvm::Value*> chunk_args;
    for (llvm::Value* w : wide) chunk_args.push_back(b.CreateShuffleVector(w, zero, mask));
    llvm::CallInst* call = b.CreateCall(callee, chunk_args);
    call->setDoesNotAccessMemory();
    call->setDoesNotThrow();
    chunks.push_back(call);
  }
  llvm::Value* all = llvm::concatenateVectors(b, chunks);
  std::vector<int> first(static_cast<size_t>(lanes));
  for (int i = 0; i < lanes; ++i) first[static_cast<size_t>(i)] = i;
  llvm::Value* result = b.CreateShuffleVector(all, first);
  if (element->isFloatTy()) result = b.CreateFPTrunc(result, vt);
  b.CreateRet(result);
  return f;
}

// The loop vectorizer's widths: vectors of 128 to 512 bits.
std::vector<int> variant_lanes(llvm::Type* element) {
  if (element->isFloatTy()) return {4, 8, 16};
  return {2, 4, 8};
}

}  // namespace

bool host_cpu_has(const char* feature) {
  static const llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  auto it = features.find(feature);
  return it != features.end() && it->second;
}

bool has_vector_math(const OpNode& op, int element_bits) {
  if (has_inline_math(op, element_bits) || has_ranged_math(op, element_bits)) return true;
  const double* f64_ulp = vector_math_table().find(&op);
  if (f64_ulp == nullptr || !variant_available(op.libm, op.num_args)) return false;
  if (element_bits == 32) return true;
  return element_bits == 64 && *f64_ulp + 0.5 <= op.max_ulp;
}

llvm::Value* emit_math_call(llvm::IRBuilderBase& b, const OpNode& op, const std::string& libm,
                            const std::vector<llvm::Value*>& args) {
  llvm::Module& m = *b.GetInsertBlock()->getModule();
  llvm::Type* type = args[0]->getType();
  llvm::Type* element = type->getScalarType();
  PRIMJIT_ICHECK(element->isFloatTy() || element->isDoubleTy())
      << "vector math: T." << op.name << " on a type other than float32/float64";
  if (has_inline_math(op, static_cast<int>(element->getPrimitiveSizeInBits()))) {
    return emit_inline_math(b, op, args[0]);
  }
  const bool vector = has_vector_math(op, static_cast<int>(element->getPrimitiveSizeInBits()));
  const int arity = static_cast<int>(args.size());
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(type)) {
    const int lanes = static_cast<int>(vt->getNumElements());
    if (vector) return b.CreateCall(vector_helper(m, op, libm, arity, element, lanes), args);
    llvm::Value* out = llvm::PoisonValue::get(type);
    for (int i = 0; i < lanes; ++i) {
      std::vector<llvm::Value*> lane_args;
      for (llvm::Value* a : args) lane_args.push_back(b.CreateExtractElement(a, b.getInt32(i)));
      out = b.CreateInsertElement(out, emit_math_call(b, op, libm, lane_args), b.getInt32(i));
    }
    return out;
  }
  std::string scalar = scalar_name(libm, element);
  std::vector<llvm::Type*> params(args.size(), element);
  llvm::FunctionCallee callee =
      m.getOrInsertFunction(scalar, llvm::FunctionType::get(element, params, false));
  llvm::CallInst* call = b.CreateCall(callee, args);
  // errno is not observed: the call is pure, which lets LLVM move, fold and widen it.
  call->setDoesNotAccessMemory();
  call->setDoesNotThrow();
  call->addFnAttr(llvm::Attribute::WillReturn);
  if (!vector) return call;
  std::vector<std::string> variants;
  std::vector<llvm::GlobalValue*> helpers;
  for (int lanes : variant_lanes(element)) {
    llvm::Function* helper = vector_helper(m, op, libm, arity, element, lanes);
    helpers.push_back(helper);
    variants.push_back("_ZGV_LLVM_N" + std::to_string(lanes) +
                       std::string(static_cast<size_t>(arity), 'v') + "_" + scalar + "(" +
                       helper->getName().str() + ")");
  }
  // Kept until the vectorizer has run: nothing calls a helper before it.
  bool listed = false;
  if (llvm::GlobalVariable* used = m.getGlobalVariable("llvm.compiler.used")) {
    if (auto* init = llvm::dyn_cast<llvm::ConstantArray>(used->getInitializer())) {
      for (const llvm::Use& u : init->operands()) listed |= u.get() == helpers[0];
    }
  }
  if (!listed) llvm::appendToCompilerUsed(m, helpers);
  llvm::VFABI::setVectorVariantNames(call, variants);
  return call;
}

}  // namespace primjit::jit
