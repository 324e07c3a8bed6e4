#include "jit/emu/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "primjit/error.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define PRIMJIT_EMU_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define PRIMJIT_EMU_TSAN 1
#endif

namespace primjit::jit::emu {
namespace {

#if defined(PRIMJIT_EMU_ASAN)
void start_switch(void** fake_stack, const void* bottom, size_t size) {
  __sanitizer_start_switch_fiber(fake_stack, bottom, size);
}
void finish_switch(void* fake_stack, const void** bottom, size_t* size) {
  __sanitizer_finish_switch_fiber(fake_stack, bottom, size);
}
#else
void start_switch(void**, const void*, size_t) {}
void finish_switch(void*, const void**, size_t*) {}
#endif

size_t page_size() {
  static const size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

// Stacks of this OS thread, reused across blocks: mapped on demand (memory is committed only
// where touched), with a guard page below each.
class StackPool {
 public:
  ~StackPool() {
    for (auto& [stack, bytes] : free_)
      munmap(static_cast<char*>(stack) - page_size(), bytes + page_size());
  }
  void* acquire(size_t bytes) {
    for (size_t i = free_.size(); i-- > 0;) {
      if (free_[i].second == bytes) {
        void* stack = free_[i].first;
        free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
        return stack;
      }
    }
    void* mem = mmap(nullptr, bytes + page_size(), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    PRIMJIT_USER_CHECK(mem != MAP_FAILED)
        << "the interpreter could not map a " << bytes << "-byte fiber stack";
    mprotect(mem, page_size(), PROT_NONE);  // guard page: an overflow faults
    return static_cast<char*>(mem) + page_size();
  }
  void release(void* stack, size_t bytes, bool unwound) {
#if defined(PRIMJIT_EMU_ASAN)
    // Frames that returned normally leave no poisoned redzones behind; a fiber unwound by an
    // exception might, so its stack is cleaned before reuse.
    if (unwound) __asan_unpoison_memory_region(stack, bytes);
#else
    (void)unwound;
#endif
    if (free_.size() < kMaxCached) {
      free_.emplace_back(stack, bytes);
    } else {
      munmap(static_cast<char*>(stack) - page_size(), bytes + page_size());
    }
  }

 private:
  static constexpr size_t kMaxCached = 2048;
  std::vector<std::pair<void*, size_t>> free_;
};

StackPool& stack_pool() {
  thread_local StackPool pool;
  return pool;
}

}  // namespace

// --- the switch ------------------------------------------------------------------------------
//
// primjit_emu_switch(save, to): pushes the callee-saved registers on the current stack, stores
// the stack pointer in *save, loads `to` as the stack pointer and pops the registers saved
// there, returning into the other context. A new fiber's stack starts with such a frame whose
// return address is primjit_emu_fiber_start, which calls primjit_emu_fiber_main(fiber) with the
// fiber taken from a callee-saved register slot.

#if !defined(PRIMJIT_EMU_UCONTEXT)
extern "C" {
void primjit_emu_switch(void** save, void* to);
void primjit_emu_fiber_start();
__attribute__((visibility("hidden"), used)) void primjit_emu_fiber_main(void* fiber) {
  static_cast<Fiber*>(fiber)->run();
}
}

#if defined(__x86_64__)
// Frame, from the saved stack pointer up: mxcsr and x87 control word (8 bytes), r15, r14, r13,
// r12, rbx, rbp, return address.
asm(R"(
  .text
  .globl primjit_emu_switch
  .hidden primjit_emu_switch
  .type primjit_emu_switch, @function
primjit_emu_switch:
  .cfi_startproc
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .cfi_endproc
  .size primjit_emu_switch, .-primjit_emu_switch

  .globl primjit_emu_fiber_start
  .hidden primjit_emu_fiber_start
  .type primjit_emu_fiber_start, @function
primjit_emu_fiber_start:
  .cfi_startproc
  .cfi_undefined rip
  movq %rbx, %rdi
  call primjit_emu_fiber_main
  ud2
  .cfi_endproc
  .size primjit_emu_fiber_start, .-primjit_emu_fiber_start
)");

namespace {
constexpr size_t kFrameWords = 8;  // control words, 6 registers, return address
void* initial_frame(void* stack, size_t bytes, Fiber* fiber) {
  auto top = (reinterpret_cast<uintptr_t>(stack) + bytes - 16) & ~uintptr_t{15};
  auto* frame = reinterpret_cast<uint64_t*>(top - kFrameWords * 8);
  frame[0] = 0x1F80 | (uint64_t{0x037F} << 32);   // default mxcsr, x87 control word
  frame[1] = frame[2] = frame[3] = frame[4] = 0;  // r15, r14, r13, r12
  frame[5] = reinterpret_cast<uint64_t>(fiber);   // rbx
  frame[6] = 0;                                   // rbp: ends frame-pointer walks
  frame[7] = reinterpret_cast<uint64_t>(&primjit_emu_fiber_start);
  return frame;
}
}  // namespace

#elif defined(__aarch64__)
// Frame, from the saved stack pointer up: x19..x28, x29, x30 (return address), d8..d15.
asm(R"(
  .text
  .globl primjit_emu_switch
  .hidden primjit_emu_switch
  .type primjit_emu_switch, %function
primjit_emu_switch:
  .cfi_startproc
  sub sp, sp, #160
  stp x19, x20, [sp, #0]
  stp x21, x22, [sp, #16]
  stp x23, x24, [sp, #32]
  stp x25, x26, [sp, #48]
  stp x27, x28, [sp, #64]
  stp x29, x30, [sp, #80]
  stp d8, d9, [sp, #96]
  stp d10, d11, [sp, #112]
  stp d12, d13, [sp, #128]
  stp d14, d15, [sp, #144]
  mov x2, sp
  str x2, [x0]
  mov sp, x1
  ldp x19, x20, [sp, #0]
  ldp x21, x22, [sp, #16]
  ldp x23, x24, [sp, #32]
  ldp x25, x26, [sp, #48]
  ldp x27, x28, [sp, #64]
  ldp x29, x30, [sp, #80]
  ldp d8, d9, [sp, #96]
  ldp d10, d11, [sp, #112]
  ldp d12, d13, [sp, #128]
  ldp d14, d15, [sp, #144]
  add sp, sp, #160
  ret
  .cfi_endproc
  .size primjit_emu_switch, .-primjit_emu_switch

  .globl primjit_emu_fiber_start
  .hidden primjit_emu_fiber_start
  .type primjit_emu_fiber_start, %function
primjit_emu_fiber_start:
  .cfi_startproc
  .cfi_undefined x30
  mov x0, x19
  bl primjit_emu_fiber_main
  brk #0
  .cfi_endproc
  .size primjit_emu_fiber_start, .-primjit_emu_fiber_start
)");

namespace {
constexpr size_t kFrameWords = 20;  // x19..x30, d8..d15
void* initial_frame(void* stack, size_t bytes, Fiber* fiber) {
  auto top = (reinterpret_cast<uintptr_t>(stack) + bytes - 16) & ~uintptr_t{15};
  auto* frame = reinterpret_cast<uint64_t*>(top - kFrameWords * 8);
  for (size_t i = 0; i < kFrameWords; ++i) frame[i] = 0;
  frame[0] = reinterpret_cast<uint64_t>(fiber);                      // x19
  frame[11] = reinterpret_cast<uint64_t>(&primjit_emu_fiber_start);  // x30
  return frame;
}
}  // namespace
#endif
#endif  // !PRIMJIT_EMU_UCONTEXT

// --- Fiber ----------------------------------------------------------------------------------

// ThreadSanitizer is told which fiber runs, so that it keeps one shadow context per fiber.
namespace {
#if defined(PRIMJIT_EMU_TSAN)
void* tsan_create() { return __tsan_create_fiber(0); }
void tsan_destroy(void* fiber) { __tsan_destroy_fiber(fiber); }
void* tsan_current() { return __tsan_get_current_fiber(); }
void tsan_switch(void* fiber) { __tsan_switch_to_fiber(fiber, 0); }
#else
void* tsan_create() { return nullptr; }
void tsan_destroy(void*) {}
void* tsan_current() { return nullptr; }
void tsan_switch(void*) {}
#endif
}  // namespace

Fiber::Fiber(size_t stack_bytes, std::function<void()> body)
    : body_(std::move(body)), stack_bytes_(stack_bytes) {
  stack_ = stack_pool().acquire(stack_bytes_);
  tsan_fiber_ = tsan_create();
}

Fiber::~Fiber() {
  tsan_destroy(tsan_fiber_);
  // A fiber is destroyed before it started or after it finished (the scheduler cancels
  // suspended fibers first), so nothing lives on its stack.
  stack_pool().release(stack_, stack_bytes_, unwound_);
}

#if defined(PRIMJIT_EMU_UCONTEXT)
namespace {
void ucontext_entry(unsigned low, unsigned high) {
  reinterpret_cast<Fiber*>((static_cast<uintptr_t>(high) << 32) | low)->run();
}
}  // namespace

void Fiber::start() {
  getcontext(&context_);
  context_.uc_stack.ss_sp = stack_;
  context_.uc_stack.ss_size = stack_bytes_;
  context_.uc_link = nullptr;
  const auto self = reinterpret_cast<uintptr_t>(this);
  makecontext(&context_, reinterpret_cast<void (*)()>(&ucontext_entry), 2,
              static_cast<unsigned>(self & 0xffffffffu), static_cast<unsigned>(self >> 32));
}
#define PRIMJIT_EMU_TO_FIBER() swapcontext(&caller_, &context_)
#define PRIMJIT_EMU_TO_CALLER() swapcontext(&context_, &caller_)
#else
void Fiber::start() { sp_ = initial_frame(stack_, stack_bytes_, this); }
#define PRIMJIT_EMU_TO_FIBER() primjit_emu_switch(&caller_sp_, sp_)
#define PRIMJIT_EMU_TO_CALLER() primjit_emu_switch(&sp_, caller_sp_)
#endif

void Fiber::run() {
  finish_switch(nullptr, &caller_bottom_, &caller_size_);
  body_();
  finished_ = true;
  tsan_switch(caller_tsan_);
  start_switch(nullptr, caller_bottom_, caller_size_);  // this fiber's frames are gone
  PRIMJIT_EMU_TO_CALLER();                              // never resumed
  __builtin_unreachable();
}

void Fiber::resume() {
  PRIMJIT_ICHECK(!finished_) << "resuming a finished fiber";
  if (!started_) {
    started_ = true;
    start();
  }
  void* fake_stack = nullptr;
  caller_tsan_ = tsan_current();
  tsan_switch(tsan_fiber_);
  start_switch(&fake_stack, stack_, stack_bytes_);
  PRIMJIT_EMU_TO_FIBER();
  finish_switch(fake_stack, nullptr, nullptr);
}

void Fiber::yield() {
  tsan_switch(caller_tsan_);
  start_switch(&fake_stack_, caller_bottom_, caller_size_);
  PRIMJIT_EMU_TO_CALLER();
  finish_switch(fake_stack_, &caller_bottom_, &caller_size_);
}

}  // namespace primjit::jit::emu
