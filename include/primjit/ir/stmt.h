// IR statements.
//
// Semantics
// - Scoping is flat. `Bind`, `AllocBuffer` and `DeclBuffer` have no body: what they define
//   (the variable; the buffer and its data pointer; the buffer) is visible to the statements
//   that follow them in the same enclosing scope, until that scope ends. A scope is the body of
//   a body-carrying statement: the function body, `For`, `While`, `AttrStmt`, and each branch
//   of `IfThenElse` separately. `SeqStmt` opens no scope: a nested sequence shares its
//   parent's scope.
// - `AllocBuffer` allocates storage for its buffer's data pointer, in the pointer's storage
//   scope, for the rest of the enclosing scope. `DeclBuffer` declares a view over an existing
//   data pointer and allocates nothing.
// - `AttrStmt` with key "thread_extent" launches its body over a thread dimension: the node is
//   an IterVar (variable + tag such as "blockIdx.x"), the value the extent. The outermost
//   thread_extent of a nest is a kernel launch.
// - `AssertStmt` is flat: when its condition is false, the function returns an error carrying
//   the message; later statements do not run.
// - `For` runs its body for loop_var = min, min + 1, ..., min + extent - 1; its kind says how
//   (serial, parallel, vectorized, unrolled, or bound to a thread index).
// - Statements run in order; `Evaluate` computes an expression for its effects.
#pragma once

#include <string>
#include <vector>

#include "primjit/ir/attrs.h"
#include "primjit/ir/expr.h"

namespace primjit {

class StmtNode : public Object {
 protected:
  explicit StmtNode(NodeKind kind) : Object(kind) {}
};

class Stmt : public Ref<StmtNode> {
 public:
  Stmt() = default;
  explicit Stmt(Ref<StmtNode> ref) : Ref<StmtNode>(std::move(ref)) {}
  explicit Stmt(const StmtNode* node) : Ref<StmtNode>(node) {}
};

/// A thread (or other iteration) variable with its tag, the node of a thread_extent AttrStmt.
class IterVarNode;
class IterVar : public Ref<IterVarNode> {
 public:
  IterVar() = default;
  explicit IterVar(const IterVarNode* node) : Ref<IterVarNode>(node) {}
  /// `thread_tag` is "blockIdx.x|y|z", "threadIdx.x|y|z", "vthread" or "" for none.
  static IterVar make(Var var, std::string thread_tag);
};

class IterVarNode : public Object {
 public:
  static constexpr NodeKind kKind = NodeKind::kIterVar;
  const Var var;
  const std::string thread_tag;

  IterVarNode(NodeKey, Var var, std::string thread_tag)
      : Object(kKind), var(std::move(var)), thread_tag(std::move(thread_tag)) {}
};

/// Annotations attached to For and AllocBuffer.
using Annotations = Attrs;

class Bind : public StmtNode {
 public:
  static constexpr NodeKind kKind = NodeKind::kBind;
  static Stmt make(Var var, Expr value);
  const Var var;
  const Expr value;

  Bind(NodeKey, Var var, Expr value)
      : StmtNode(kKind), var(std::move(var)), value(std::move(value)) {}
};

class AttrStmt : public StmtNode {
 public:
  static constexpr NodeKind kKind = NodeKind::kAttrStmt;
  /// `node` is an IterVar for "thread_extent"/"virtual_thread", else any IR object.
  static Stmt make(Ref<Object> node, std::string key, Expr value, Stmt body);
  const Ref<Object> node;
  const std::string key;
  const Expr value;
  const Stmt body;

  /// The IterVar of a thread_extent attribute, else nullptr.
  const IterVarNode* iter_var() const { return node.as<IterVarNode>(); }

  AttrStmt(NodeKey, Ref<Object> node, std::string key, Expr value, Stmt body)
      : StmtNode(kKind),
        node(std::move(node)),
        key(std::move(key)),
        value(std::move(value)),
        body(std::move(body)) {}
};

class AssertStmt : public StmtNode {
 public:
  static constexpr NodeKind kKind = NodeKind::kAssertStmt;
  /// message is a StringImm, or a T.format call whose values are read when the assert fails.
  static Stmt make(Expr condition, Expr message);
  const Expr condition;
  const Expr message;

  AssertStmt(NodeKey, Expr condition, Expr message)
      : StmtNode(kKind), condition(std::move(condition)), message(std::move(message)) {}
};

class BufferStore : public StmtNode {
 public:
  static constexpr NodeKind kKind = NodeKind::kBufferStore;
  static Stmt make(Buffer buffer, Expr value, std::vector<Expr> indices);
  const Buffer buffer;
  const Expr value;
  const std::vector<Expr> indices;

  BufferStore(NodeKey, Buffer buffer, Expr value, std::vector<Expr> indices)
      : StmtNode(kKind),
        buffer(std::move(buffer)),
        value(std::move(value)),
        indices(std::move(indices)) {}
};

class AllocBuffer : public StmtNode {
 public:
  static constexpr NodeKind kKind = NodeKind::kAllocBuffer;
  static Stmt make(Buffer buffer, Annotations annotations = {});
  const Buffer buffer;
  const Annotations annotations;

  /// Product of the extents when all are constant.
  std::optional<int64_t> constant_allocation_size() const;

  AllocBuffer(NodeKey, Buffer buffer, Annotations annotations)
      : StmtNode(kKind), buffer(std::move(buffer)), annotations(std::move(annotations)) {}
};

class DeclBuffer : public StmtNode {
 public:
  static constexpr NodeKind kKind = NodeKind::kDeclBuffer;
  static Stmt make(Buffer buffer);
  const Buffer buffer;

  DeclBuffer(NodeKey, Buffer buffer) : StmtNode(kKind), buffer(std::move(buffer)) {}
};

class SeqStmt : public StmtNode {
 public:
  static constexpr NodeKind kKind = NodeKind::kSeqStmt;
  /// Canonical sequence: nested sequences are flattened; no statement gives `T.evaluate(0)`,
  /// one statement is returned as it is, more give a SeqStmt.
  static Stmt make(std::vector<Stmt> seq);
  const std::vector<Stmt> seq;

  SeqStmt(NodeKey, std::vector<Stmt> seq) : StmtNode(kKind), seq(std::move(seq)) {}
};

enum class ForKind : uint8_t { kSerial, kParallel, kVectorized, kUnrolled, kThreadBinding };
const char* for_kind_name(ForKind kind);

class For : public StmtNode {
 public:
  static constexpr NodeKind kKind = NodeKind::kFor;
  /// thread_tag only (and required) for kThreadBinding.
  static Stmt make(Var loop_var, Expr min, Expr extent, ForKind kind, Stmt body,
                   std::string thread_tag = "", Annotations annotations = {});
  const Var loop_var;
  const Expr min;
  const Expr extent;
  const ForKind for_kind;
  const Stmt body;
  const std::string thread_tag;
  const Annotations annotations;

  For(NodeKey, Var loop_var, Expr min, Expr extent, ForKind for_kind, Stmt body,
      std::string thread_tag, Annotations annotations)
      : StmtNode(kKind),
        loop_var(std::move(loop_var)),
        min(std::move(min)),
        extent(std::move(extent)),
        for_kind(for_kind),
        body(std::move(body)),
        thread_tag(std::move(thread_tag)),
        annotations(std::move(annotations)) {}
};

class While : public StmtNode {
 public:
  static constexpr NodeKind kKind = NodeKind::kWhile;
  static Stmt make(Expr condition, Stmt body);
  const Expr condition;
  const Stmt body;

  While(NodeKey, Expr condition, Stmt body)
      : StmtNode(kKind), condition(std::move(condition)), body(std::move(body)) {}
};

class IfThenElse : public StmtNode {
 public:
  static constexpr NodeKind kKind = NodeKind::kIfThenElse;
  /// else_case may be undefined.
  static Stmt make(Expr condition, Stmt then_case, Stmt else_case = Stmt());
  const Expr condition;
  const Stmt then_case;
  const Stmt else_case;

  IfThenElse(NodeKey, Expr condition, Stmt then_case, Stmt else_case)
      : StmtNode(kKind),
        condition(std::move(condition)),
        then_case(std::move(then_case)),
        else_case(std::move(else_case)) {}
};

class Evaluate : public StmtNode {
 public:
  static constexpr NodeKind kKind = NodeKind::kEvaluate;
  static Stmt make(Expr value);
  const Expr value;

  Evaluate(NodeKey, Expr value) : StmtNode(kKind), value(std::move(value)) {}
};

}  // namespace primjit
