#include "jit/llvm/missed_vectorization.h"

#include <llvm/Analysis/LoopInfo.h>
#include <llvm/IR/DiagnosticHandler.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>

#include <map>
#include <memory>

#include "primjit/log.h"

namespace primjit::jit {
namespace {

// The T.vectorized tag among the operands of a loop ID, or nullptr.
const llvm::MDNode* tag_of(const llvm::MDNode* loop_id) {
  if (loop_id == nullptr) return nullptr;
  for (unsigned i = 1; i < loop_id->getNumOperands(); ++i) {
    const auto* entry = llvm::dyn_cast_or_null<llvm::MDNode>(loop_id->getOperand(i).get());
    if (entry == nullptr || entry->getNumOperands() != 3) continue;
    const auto* name = llvm::dyn_cast_or_null<llvm::MDString>(entry->getOperand(0).get());
    if (name != nullptr && name->getString() == kVectorizedLoopTag) return entry;
  }
  return nullptr;
}

std::string tag_text(const llvm::MDNode* tag, unsigned i) {
  const auto* text = llvm::dyn_cast_or_null<llvm::MDString>(tag->getOperand(i).get());
  return text == nullptr ? "?" : text->getString().str();
}

bool has_tagged_loop(const llvm::Module& module) {
  for (const llvm::Function& f : module) {
    for (const llvm::BasicBlock& block : f) {
      const llvm::Instruction* end = block.getTerminator();
      if (end != nullptr && tag_of(end->getMetadata(llvm::LLVMContext::MD_loop)) != nullptr) {
        return true;
      }
    }
  }
  return false;
}

// The tag of the innermost tagged loop around `block` (the loop nest is computed afresh: the
// remark comes in the middle of the pipeline, and only for functions with tagged loops).
const llvm::MDNode* enclosing_tag(const llvm::BasicBlock& block) {
  llvm::Function& f = const_cast<llvm::Function&>(*block.getParent());
  bool tagged = false;
  for (const llvm::BasicBlock& b : f) {
    const llvm::Instruction* end = b.getTerminator();
    tagged |= end != nullptr && tag_of(end->getMetadata(llvm::LLVMContext::MD_loop)) != nullptr;
  }
  if (!tagged) return nullptr;
  llvm::DominatorTree dominators(f);
  llvm::LoopInfo loops(dominators);
  for (llvm::Loop* loop = loops.getLoopFor(&block); loop != nullptr; loop = loop->getParentLoop()) {
    if (const llvm::MDNode* tag = tag_of(loop->getLoopID())) return tag;
  }
  return nullptr;
}

// LLVM's remark text as a reason: without the "loop not vectorized: " lead, clang's pragma
// advice and source locations primjit's code does not have, one line.
std::string reason_text(std::string message) {
  for (const char* lead : {"loop not vectorized: ", "loop not vectorized"}) {
    if (message.rfind(lead, 0) == 0) message.erase(0, std::string(lead).size());
  }
  std::string out;
  size_t start = 0;
  while (start <= message.size()) {
    size_t end = message.find('\n', start);
    if (end == std::string::npos) end = message.size();
    std::string line = message.substr(start, end - start);
    for (const char* noise : {" Use #pragma", " Memory location is the same as accessed at"}) {
      if (size_t at = line.find(noise); at != std::string::npos) line.resize(at);
    }
    while (!line.empty() && (line.back() == ' ' || line.back() == '.')) line.pop_back();
    if (!line.empty()) out += (out.empty() ? "" : "; ") + line;
    start = end + 1;
  }
  return out;
}

struct LoopReport {
  std::string function;
  std::string loop_var;
  std::vector<std::string> reasons;
  std::string failure;  // the missed-transformation check's own text, when LLVM gave no reason
  bool failed = false;
  bool vectorized = false;
};

class VectorizationRemarks final : public llvm::DiagnosticHandler {
 public:
  bool isAnalysisRemarkEnabled(llvm::StringRef pass) const override {
    return pass == "loop-vectorize";
  }
  bool isMissedOptRemarkEnabled(llvm::StringRef pass) const override {
    return pass == "loop-vectorize";
  }
  bool isPassedOptRemarkEnabled(llvm::StringRef pass) const override {
    return pass == "loop-vectorize";
  }
  bool isAnyRemarkEnabled() const override { return true; }

  bool handleDiagnostics(const llvm::DiagnosticInfo& info) override {
    const auto* remark = llvm::dyn_cast<llvm::DiagnosticInfoIROptimization>(&info);
    if (remark == nullptr) return false;  // not a remark: LLVM's default handling
    bool failure = llvm::isa<llvm::DiagnosticInfoOptimizationFailure>(remark);
    llvm::StringRef pass = remark->getPassName();
    // LoopVectorize names itself, or (for a loop it was asked to vectorize) always-print.
    bool from_vectorizer = pass == "loop-vectorize" || pass.empty();
    const auto* block = llvm::dyn_cast_or_null<llvm::BasicBlock>(remark->getCodeRegion());
    const llvm::MDNode* tag =
        (from_vectorizer || failure) && block != nullptr ? enclosing_tag(*block) : nullptr;
    if (tag == nullptr) return !failure;  // remarks were turned on for this handler only
    LoopReport& loop = report_for(tag);
    if (failure) {
      loop.failed = true;
      loop.failure = reason_text(remark->getMsg());
    } else if (llvm::isa<llvm::OptimizationRemark>(remark)) {
      // "vectorized loop (...)"; an interleaved-only loop is not vectorized.
      if (remark->getRemarkName() == "Vectorized") loop.vectorized = true;
      if (remark->getRemarkName() == "Interleaved") loop.failed = true;
    } else if (llvm::isa<llvm::OptimizationRemarkMissed>(remark)) {
      loop.failed = true;  // "loop not vectorized (Force=true)": the reasons came before
    } else {
      add_reason(loop, remark->getMsg());
    }
    return true;
  }

  std::vector<std::string> warnings() const {
    std::vector<std::string> out;
    for (const LoopReport& loop : order_) {
      if (!loop.failed || loop.vectorized) continue;
      std::string text = "function '" + loop.function + "': the T.vectorized loop over '" +
                         loop.loop_var + "' was not vectorized by LLVM";
      std::vector<std::string> reasons = loop.reasons;
      if (reasons.empty() && !loop.failure.empty()) reasons.push_back(loop.failure);
      for (size_t i = 0; i < reasons.size(); ++i) text += (i == 0 ? ": " : "; ") + reasons[i];
      out.push_back(std::move(text));
    }
    return out;
  }

 private:
  LoopReport& report_for(const llvm::MDNode* tag) {
    auto [it, added] = index_.emplace(tag, order_.size());
    if (added)
      order_.push_back(LoopReport{tag_text(tag, 1), tag_text(tag, 2), {}, "", false, false});
    return order_[it->second];
  }

  static void add_reason(LoopReport& loop, const std::string& message) {
    std::string reason = reason_text(message);
    if (reason.empty()) return;
    for (const std::string& r : loop.reasons) {
      if (r == reason) return;
    }
    loop.reasons.push_back(std::move(reason));
  }

  std::map<const llvm::MDNode*, size_t> index_;  // lookup only; order_ keeps report order
  std::vector<LoopReport> order_;
};

// Puts `handler` on `context` for its lifetime, then gives the previous one back.
class HandlerSwap {
 public:
  HandlerSwap(llvm::LLVMContext& context, std::unique_ptr<llvm::DiagnosticHandler> handler)
      : context_(context), previous_(context.getDiagnosticHandler()) {
    context_.setDiagnosticHandler(std::move(handler), /*RespectFilters=*/false);
  }
  ~HandlerSwap() { context_.setDiagnosticHandler(std::move(previous_)); }
  HandlerSwap(const HandlerSwap&) = delete;
  HandlerSwap& operator=(const HandlerSwap&) = delete;

 private:
  llvm::LLVMContext& context_;
  std::unique_ptr<llvm::DiagnosticHandler> previous_;
};

}  // namespace

llvm::MDNode* vectorized_loop_tag(llvm::LLVMContext& context, std::string_view function,
                                  std::string_view loop_var) {
  auto text = [&](std::string_view s) {
    return llvm::MDString::get(context, llvm::StringRef(s.data(), s.size()));
  };
  return llvm::MDNode::getDistinct(context,
                                   {text(kVectorizedLoopTag), text(function), text(loop_var)});
}

std::vector<std::string> watch_vectorization(llvm::Module& module,
                                             const std::function<void()>& optimize) {
  if (!has_tagged_loop(module)) {
    optimize();
    return {};
  }
  auto handler = std::make_unique<VectorizationRemarks>();
  VectorizationRemarks* remarks = handler.get();
  HandlerSwap swap(module.getContext(), std::move(handler));
  optimize();
  std::vector<std::string> warnings = remarks->warnings();
  for (const std::string& w : warnings) PRIMJIT_LOG_WARNING << w;
  return warnings;
}

}  // namespace primjit::jit
