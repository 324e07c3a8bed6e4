// A stack of scope frames for passes that track what flat definitions (Bind, AllocBuffer,
// DeclBuffer) are visible. Open a frame for each body-carrying statement (function body,
// For, While, AttrStmt, each If branch); SeqStmt opens none. The frame is closed when the
// callback returns, also by an exception, so passes never save and restore by hand.
//
//   ScopeStack<std::vector<Var>> scopes;
//   scopes.with_new_scope([&] { visit_stmt(loop->body); });  // defs made inside vanish after
//   scopes.current().push_back(bind->var);                   // a Bind defines into the frame
//
// Internal to the ir and passes layers: not installed, not part of the API (it lived under
// include/primjit/ir/ before; include it as "ir/scope_stack.h").
#pragma once

#include <deque>
#include <utility>

#include "primjit/error.h"

namespace primjit {

template <typename Frame>
class ScopeStack {
 public:
  ScopeStack() { frames_.emplace_back(); }

  /// The innermost frame.
  Frame& current() { return frames_.back(); }
  const Frame& current() const { return frames_.back(); }
  size_t depth() const { return frames_.size(); }

  /// Runs `body` inside a new innermost frame and returns what it returns.
  template <typename F>
  decltype(auto) with_new_scope(F&& body) {
    frames_.emplace_back();
    struct Pop {
      std::deque<Frame>* frames;
      ~Pop() { frames->pop_back(); }
    } pop{&frames_};
    return std::forward<F>(body)();
  }

  /// Frames from outermost to innermost.
  template <typename F>
  void for_each(F&& f) const {
    for (const Frame& frame : frames_) f(frame);
  }

 private:
  std::deque<Frame> frames_;  // deque: references to outer frames stay valid
};

}  // namespace primjit
