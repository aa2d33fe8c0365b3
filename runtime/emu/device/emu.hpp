// The CUDA surface of the emulator: what a kernel compiled by the host compiler sees of
// CUDA. The threads of a block run as fibers on one OS thread (see state.hpp); threadIdx,
// blockIdx, blockDim and gridDim are read from the running fiber. Included by kiln.cuh
// when it is not compiled by NVRTC or nvcc; launch.cpp provides the machinery.
#pragma once

#include <cstdint>
#include <cstdio> // printf works in emulated kernels
#include <cstring>

#include "runtime/emu/device/cuda_builtins.hpp"
#include "runtime/emu/device/cuda_math.hpp"
#include "runtime/emu/device/shared_ref.hpp"
#include "runtime/emu/device/state.hpp"
#include "runtime/emu/device/vector_types.hpp"

// ---- execution-space keywords ----------------------------------------------------------------
// Kernels stay visible to dlsym even when the library is built with -fvisibility=hidden.
#define __global__ __attribute__((visibility("default")))
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __cluster_dims__(...) // the launch says it too (KilnEmuLaunch::cluster)
#define __grid_constant__
#define __align__(n) __attribute__((aligned(n)))

// ---- built-in variables of the running thread ------------------------------------------------
#define threadIdx (static_cast<const ::uint3&>(::kiln::emu::self()->tid))
#define blockIdx (static_cast<const ::uint3&>(::kiln::emu::self()->block->block_idx))
#define blockDim (static_cast<const ::dim3&>(::kiln::emu::self()->block->block_dim))
#define gridDim (static_cast<const ::dim3&>(::kiln::emu::self()->block->grid_dim))
#define warpSize 32

// Last: it turns `asm` and raw __shared__ into compile errors.
#include "runtime/emu/device/not_emulated.hpp"
