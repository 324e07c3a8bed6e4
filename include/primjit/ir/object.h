// The IR's object model: immutable nodes with an intrusive atomic reference count and a kind
// tag for dispatch, held through value handles (Ref<T>). Nodes are never modified after
// construction, so they can be shared freely across threads.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>

namespace primjit {

enum class NodeKind : uint8_t {
#define PRIMJIT_EXPR_NODE(Kind, Struct) k##Kind,
#define PRIMJIT_STMT_NODE(Kind, Struct) k##Kind,
#define PRIMJIT_OTHER_NODE(Kind, Struct) k##Kind,
#include "primjit/ir/node_kinds.def"
};

/// Name of a node kind, e.g. "BufferStore".
const char* node_kind_name(NodeKind kind);
bool is_expr_kind(NodeKind kind);
bool is_stmt_kind(NodeKind kind);

/// The passkey every concrete node constructor takes first. Only the IR library's node factories
/// can make one (`T::make(...)` and the named ones such as `Var::make_pointer`), so nodes are
/// created only there, and each node's invariants (operand dtypes, lanes, scopes) are checked in
/// one place. Code outside the IR library builds nodes through those factories.
class NodeKey {
 private:
  NodeKey() = default;
  friend NodeKey node_key();  // declared in the IR library's own sources only
};

/// Base of every IR node.
class Object {
 public:
  explicit Object(NodeKind kind) : kind_(kind) {}
  virtual ~Object() = default;
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;

  NodeKind kind() const { return kind_; }

 private:
  template <typename>
  friend class Ref;
  void inc_ref() const { refs_.fetch_add(1, std::memory_order_relaxed); }
  void dec_ref() const {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  mutable std::atomic<int32_t> refs_{0};
  NodeKind kind_;
};

/// A counted reference to an immutable node of type T (or a subclass). May be undefined.
template <typename T>
class Ref {
 public:
  using Node = T;

  Ref() = default;
  explicit Ref(const T* node) : node_(node) {
    if (node_ != nullptr) node_->inc_ref();
  }
  Ref(const Ref& other) : Ref(other.node_) {}
  Ref(Ref&& other) noexcept : node_(std::exchange(other.node_, nullptr)) {}
  template <typename U>
  Ref(const Ref<U>& other) : Ref(static_cast<const T*>(other.get())) {}  // NOLINT: upcast
  ~Ref() {
    if (node_ != nullptr) node_->dec_ref();
  }
  Ref& operator=(Ref other) noexcept {
    std::swap(node_, other.node_);
    return *this;
  }

  bool defined() const { return node_ != nullptr; }
  const T* get() const { return node_; }
  const T* operator->() const { return node_; }
  const T& operator*() const { return *node_; }
  NodeKind kind() const { return node_->kind(); }

  /// True when both refer to the very same node (identity, not structure).
  template <typename U>
  bool same_as(const Ref<U>& other) const {
    return static_cast<const Object*>(node_) == static_cast<const Object*>(other.get());
  }

  /// The node as `U` when its kind matches U::kKind, else nullptr.
  template <typename U>
  const U* as() const {
    return node_ != nullptr && node_->kind() == U::kKind ? static_cast<const U*>(node_) : nullptr;
  }

 private:
  const T* node_ = nullptr;
};

/// Hash and equality by identity, for maps keyed on nodes (variables, buffers).
struct RefHash {
  template <typename T>
  size_t operator()(const Ref<T>& ref) const {
    return std::hash<const void*>()(ref.get());
  }
};
struct RefEqual {
  template <typename T>
  bool operator()(const Ref<T>& a, const Ref<T>& b) const {
    return a.same_as(b);
  }
};
/// Strict order by identity (address). Never use it where iteration order reaches the IR.
struct RefLess {
  template <typename T>
  bool operator()(const Ref<T>& a, const Ref<T>& b) const {
    return std::less<const void*>()(a.get(), b.get());
  }
};

}  // namespace primjit
