/* simcuda's one extension to the driver API: registering a kernel, which on a GPU would
 * come from a module. A kernel is a host function that runs on its stream's worker
 * thread with the grid, the block and the argument values its launch captured. Callers
 * reach the registration function the way they reach every driver function:
 * cuGetProcAddress_v2("simcuRegisterKernel", ...). */
#ifndef SIMCUDA_PUBLIC_H
#define SIMCUDA_PUBLIC_H

#include <cuda.h>
#include <stddef.h>

#define SIMCU_MAX_PARAMS 32

typedef struct simcu_launch_s {
  unsigned grid[3], block[3], shared_bytes;
  void *args[SIMCU_MAX_PARAMS]; /* args[i] points at the captured value of parameter i */
  unsigned nargs;
} simcu_launch_t;

typedef void (*simcu_kernel_fn)(const simcu_launch_t *launch);

/* Registers fn with parameters of the given sizes (laid out with natural alignment, as
 * the device ABI does). Either out-parameter may be NULL. */
typedef CUresult (*PFN_simcuRegisterKernel)(CUfunction *func, CUkernel *kernel,
                                            const char *name, simcu_kernel_fn fn,
                                            unsigned nparams, const size_t *sizes);

#endif
