/* The C ABI between the runtime and an emulated kernel library (a shared object built from
 * kernel sources by the host compiler plus runtime/emu/device/launch.cpp). Plain C so the
 * runtime can use it through dlsym without including anything under templates/.
 *
 * Exported by every emulated kernel library:
 *   unsigned kiln_emu_abi_version(void);            must equal KILN_EMU_ABI_VERSION
 *   int kiln_emu_launch(const KilnEmuLaunch*, char* error, size_t error_len);
 * plus one `extern "C"` entry per kernel, of type void(kiln::KernelArgs), named as the
 * kernel. kiln_emu_launch returns 0 on success; otherwise the first report (the one from
 * the lowest-numbered failing block) is written, NUL-terminated and truncated, to `error`.
 */
#ifndef KILN_EMU_LAUNCH_ABI_H
#define KILN_EMU_LAUNCH_ABI_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_EMU_ABI_VERSION 2u /* 2: KilnEmuLaunch::cluster */
#define KILN_EMU_MAX_ARGS 16

/* Checks (bitmask). All of them are on in tests; 0 is the fast path. */
#define KILN_EMU_CHECK_BOUNDS 1u      /* global and shared accesses against their arrays */
#define KILN_EMU_CHECK_SHARED_INIT 2u /* reads of shared bytes no thread of the block wrote */
#define KILN_EMU_CHECK_RACE 4u        /* shared-memory races between barriers, cp.async waits */
#define KILN_EMU_CHECK_BANKS 8u       /* ldmatrix rows that fall on the same shared-memory banks */
#define KILN_EMU_CHECK_ALL 15u

/* Return codes of kiln_emu_launch. */
#define KILN_EMU_OK 0
#define KILN_EMU_REPORT 1  /* a kernel fault: check report, deadlock, __trap */
#define KILN_EMU_INVALID 2 /* the launch itself is invalid (geometry, shared memory, ABI) */

/* ABI-compatible with kiln::KernelArgs (16 pointers, passed by value). */
typedef struct KilnEmuArgs {
  void* p[KILN_EMU_MAX_ARGS];
} KilnEmuArgs;

typedef void (*KilnEmuEntry)(KilnEmuArgs);

typedef struct KilnEmuLaunch {
  KilnEmuEntry entry;  /* the kernel, from dlsym */
  unsigned grid[3];    /* gridDim x, y, z */
  unsigned block[3];   /* blockDim x, y, z */
  size_t dynamic_smem; /* bytes of dynamic shared memory */
  void* args[KILN_EMU_MAX_ARGS];
  size_t arg_bytes[KILN_EMU_MAX_ARGS];      /* byte size of each buffer (0: unused) */
  const char* arg_names[KILN_EMU_MAX_ARGS]; /* for reports; entries may be NULL */
  unsigned checks;                          /* KILN_EMU_CHECK_* */
  unsigned workers;        /* OS threads running blocks; 0: one per hardware thread */
  const char* kernel_name; /* for reports; may be NULL */
  /* Thread-block cluster (sm_90): blocks per cluster along x, y, z, the grid a multiple of it
   * in each dimension, at most 8 blocks. {0,0,0} (a zeroed struct) or {1,1,1}: no cluster. */
  unsigned cluster[3];
} KilnEmuLaunch;

typedef unsigned (*KilnEmuAbiVersionFn)(void);
typedef int (*KilnEmuLaunchFn)(const KilnEmuLaunch*, char* error, size_t error_len);

#ifdef __cplusplus
}
#endif

#endif /* KILN_EMU_LAUNCH_ABI_H */
