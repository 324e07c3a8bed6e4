// Functions and modules.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "primjit/ir/attrs.h"
#include "primjit/ir/stmt.h"

namespace primjit {

class PrimFuncNode;

/// A function of the loop IR: parameters, buffers bound to handle parameters, a body.
class PrimFunc : public Ref<PrimFuncNode> {
 public:
  PrimFunc() = default;
  explicit PrimFunc(const PrimFuncNode* node) : Ref<PrimFuncNode>(node) {}

  /// `buffer_map` binds handle parameters to the buffers they point to, in parameter order.
  static PrimFunc make(std::vector<Var> params, std::vector<std::pair<Var, Buffer>> buffer_map,
                       Stmt body, DataType ret_type = DataType::Void(), Attrs attrs = {});

  PrimFunc with_body(Stmt body) const;
  PrimFunc with_attr(const std::string& key, AttrValue value) const;
  PrimFunc without_attr(const std::string& key) const;
};

/// The "calling_conv" attribute: how a function is called once lowered.
enum class CallingConv : int {
  kDefault = 0,       // a plain function (signature as written)
  kPacked = 1,        // MakePackedAPI's packed entry point (primjit/abi.h)
  kKernelLaunch = 2,  // a device kernel, launched by its host caller
  kParallelTask = 3,  // LowerParallelLoops' task: (begin, end, captures...) run by T.parallel_for
  kComputeScope = 4,  // LowerComputeScopes' region: (captures...) run by T.call_compute_scope
};

class PrimFuncNode : public Object {
 public:
  static constexpr NodeKind kKind = NodeKind::kPrimFunc;
  const std::vector<Var> params;
  const std::vector<std::pair<Var, Buffer>> buffer_map;
  const Stmt body;
  const DataType ret_type;
  const Attrs attrs;

  /// The buffer bound to parameter `param`, or an undefined Buffer.
  Buffer buffer_of(const Var& param) const;
  const AttrValue* attr(const std::string& key) const;
  /// The "target" attribute, or an undefined Target.
  Target target() const;
  /// The "global_symbol" attribute, or "".
  std::string global_symbol() const;
  /// The "calling_conv" attribute; kDefault when absent.
  CallingConv calling_conv() const;
  bool is_kernel() const { return calling_conv() == CallingConv::kKernelLaunch; }
  bool is_packed() const { return calling_conv() == CallingConv::kPacked; }

  PrimFuncNode(NodeKey, std::vector<Var> params, std::vector<std::pair<Var, Buffer>> buffer_map,
               Stmt body, DataType ret_type, Attrs attrs)
      : Object(kKind),
        params(std::move(params)),
        buffer_map(std::move(buffer_map)),
        body(std::move(body)),
        ret_type(ret_type),
        attrs(std::move(attrs)) {}
};

class IRModuleNode;

/// Named functions. Function names are unique; functions are kept sorted by name.
class IRModule : public Ref<IRModuleNode> {
 public:
  IRModule() = default;
  explicit IRModule(const IRModuleNode* node) : Ref<IRModuleNode>(node) {}

  static IRModule make(std::vector<std::pair<GlobalVar, PrimFunc>> functions);
  /// A module with one function.
  static IRModule from_function(const std::string& name, PrimFunc func);

  /// A copy with `name` added or replaced (an existing GlobalVar of that name is kept).
  IRModule with_function(const std::string& name, PrimFunc func) const;
  IRModule without_function(const std::string& name) const;
};

class IRModuleNode : public Object {
 public:
  static constexpr NodeKind kKind = NodeKind::kIRModule;
  const std::vector<std::pair<GlobalVar, PrimFunc>> functions;

  /// The function named `name`; throws primjit::Error naming the module's functions if absent.
  PrimFunc lookup(const std::string& name) const;
  /// The function named `name`, or an undefined PrimFunc.
  PrimFunc find(const std::string& name) const;
  GlobalVar global_var(const std::string& name) const;
  bool contains(const std::string& name) const { return find(name).defined(); }

  IRModuleNode(NodeKey, std::vector<std::pair<GlobalVar, PrimFunc>> functions)
      : Object(kKind), functions(std::move(functions)) {}
};

}  // namespace primjit
