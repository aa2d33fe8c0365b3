// Fibers for the emulator (included by launch.cpp only): stack slots and the context
// switch. On x86-64 the switch is a few instructions that save the callee-saved registers
// and swap stack pointers (swapcontext would make a syscall per switch); elsewhere
// ucontext. Every slot is kSlotBytes-aligned: [guard page][stack][Fiber header] (see
// fiber_in_slot), so kiln::emu::self() finds the running fiber from its stack pointer.
#pragma once

#include "runtime/emu/device/state.hpp"

#include <cstring>
#include <new>
#include <sys/mman.h>
#include <unistd.h>

#if defined(KILN_EMU_ASM_SWITCH)
// kiln_emu_switch_v1(save, to): pushes rbp rbx r12-r15, stores rsp in *save, loads `to`,
// pops the same registers of the other context and returns into it. Hidden: every kernel
// library has its own copy.
__asm__(".pushsection .text\n"
        ".p2align 4\n"
        ".globl kiln_emu_switch_v1\n"
        ".hidden kiln_emu_switch_v1\n"
        ".type kiln_emu_switch_v1, @function\n"
        "kiln_emu_switch_v1:\n"
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size kiln_emu_switch_v1, .-kiln_emu_switch_v1\n"
        ".popsection\n");
extern "C" __attribute__((visibility("hidden"))) void kiln_emu_switch_v1(void** save, void* to);
#endif

#pragma GCC visibility push(hidden)

namespace kiln::emu {

static_assert(kTopBytes + (std::size_t(64) << 10) <= kSlotBytes, "fiber stacks too small");

// Starts `entry` on the fiber's stack at its next switch_to_fiber.
inline void prepare_fiber(Fiber& f, void (*entry)()) {
#if defined(KILN_EMU_ASM_SWITCH)
  void** top = reinterpret_cast<void**>(&f); // the stack grows down from its header
  top[-1] = nullptr;                         // entry's return address: it never returns
  top[-2] = reinterpret_cast<void*>(entry);  // where the switch's `ret` goes
  for (int i = 3; i <= 8; ++i)
    top[-i] = nullptr; // rbp rbx r12 r13 r14 r15
  f.sp = top - 8;
#else
  char* slot = reinterpret_cast<char*>(uptr(&f) & ~uptr(kSlotBytes - 1));
  const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
  getcontext(&f.ctx);
  f.ctx.uc_stack.ss_sp = slot + page;
  f.ctx.uc_stack.ss_size = std::size_t(reinterpret_cast<char*>(&f) - (slot + page));
  f.ctx.uc_link = nullptr;
  makecontext(&f.ctx, entry, 0);
#endif
}

inline void switch_to_fiber(Block& b, Fiber& f) {
#if defined(KILN_EMU_ASM_SWITCH)
  kiln_emu_switch_v1(&b.sched_sp, f.sp);
#else
  swapcontext(&b.sched_ctx, &f.ctx);
#endif
}

inline void switch_to_scheduler(Fiber& f) {
#if defined(KILN_EMU_ASM_SWITCH)
  kiln_emu_switch_v1(&f.sp, f.block->sched_sp);
#else
  swapcontext(&f.ctx, &f.block->sched_ctx);
#endif
}

// The stack slots of one worker, allocated once and grown when a launch needs more.
class FiberStacks {
public:
  FiberStacks() = default;
  FiberStacks(const FiberStacks&) = delete;
  FiberStacks& operator=(const FiberStacks&) = delete;
  ~FiberStacks() { release(); }

  void reserve(int n) {
    if (n <= count_) return;
    release();
    const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
    map_bytes_ = std::size_t(n) * kSlotBytes + kSlotBytes; // slack to align the first slot
    void* m = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    map_ = static_cast<char*>(m);
    base_ = reinterpret_cast<char*>((uptr(map_) + kSlotBytes - 1) & ~uptr(kSlotBytes - 1));
    // A guard page at the bottom of each stack turns an overflow into a fault instead of a
    // corrupted neighbour (skipped where pages are too large for it).
    if (4 * page + kTopBytes <= kSlotBytes)
      for (int i = 0; i < n; ++i)
        mprotect(base_ + std::size_t(i) * kSlotBytes, page, PROT_NONE);
    count_ = n;
  }
  char* base() const { return base_; }

private:
  void release() {
    if (map_) munmap(map_, map_bytes_);
    map_ = base_ = nullptr;
    count_ = 0;
  }
  char* map_ = nullptr;
  char* base_ = nullptr;
  std::size_t map_bytes_ = 0;
  int count_ = 0;
};

inline Fiber& fiber_at(const Block& b, int i) {
  return *fiber_in_slot(uptr(b.slots) + std::size_t(i) * kSlotBytes);
}

} // namespace kiln::emu

#pragma GCC visibility pop
