// Fibers for the threads of a block: each runs on its own stack and switches back to the
// scheduler at a barrier. Under AddressSanitizer every switch is announced with
// __sanitizer_start_switch_fiber / __sanitizer_finish_switch_fiber, under ThreadSanitizer with
// __tsan_switch_to_fiber.
//
// On x86-64 and AArch64 the switch is a few instructions saving the callee-saved registers
// (fiber.cc); elsewhere it is ucontext's swapcontext. The hand-written switch matters: glibc's
// swapcontext makes a system call per switch, and AddressSanitizer's swapcontext interceptor
// clears the shadow of the whole target stack each time.
//
// A fiber is created, resumed and finished on one OS thread. Its body must not let an
// exception escape (the scheduler catches them inside the body).
#pragma once

#include <cstddef>
#include <functional>

#if !defined(__x86_64__) && !defined(__aarch64__)
#include <ucontext.h>
#define PRIMJIT_EMU_UCONTEXT 1
#endif

namespace primjit::jit::emu {

class Fiber {
 public:
  /// A fiber that runs `body` on a stack of `stack_bytes` from this OS thread's pool.
  Fiber(size_t stack_bytes, std::function<void()> body);
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  /// Scheduler side: runs the fiber until it yields or its body returns.
  void resume();
  /// Fiber side: switches back to the scheduler; returns when resumed again.
  void yield();

  /// Marks the fiber's body as ended by an exception (its stack is cleaned before reuse).
  void set_unwound() { unwound_ = true; }

  bool started() const { return started_; }
  bool finished() const { return finished_; }

  /// The first code a fiber runs (called from the switch's entry trampoline).
  [[noreturn]] void run();

 private:
  void start();

  std::function<void()> body_;
  void* stack_ = nullptr;
  size_t stack_bytes_;
#if defined(PRIMJIT_EMU_UCONTEXT)
  ucontext_t context_{};
  ucontext_t caller_{};
#else
  void* sp_ = nullptr;         // the fiber's saved stack pointer
  void* caller_sp_ = nullptr;  // the scheduler's saved stack pointer
#endif
  bool started_ = false;
  bool finished_ = false;
  bool unwound_ = false;
  // ThreadSanitizer's contexts of the fiber and of the scheduler.
  void* tsan_fiber_ = nullptr;
  void* caller_tsan_ = nullptr;
  // AddressSanitizer bookkeeping: the fiber's fake stack and the scheduler's stack bounds.
  void* fake_stack_ = nullptr;
  const void* caller_bottom_ = nullptr;
  size_t caller_size_ = 0;
};

}  // namespace primjit::jit::emu
