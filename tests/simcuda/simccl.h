/* simccl: a stand-in collective library (like NCCL): ranks in separate processes find
 * each other through the environment torchrun sets (RANK, WORLD_SIZE, MASTER_ADDR,
 * MASTER_PORT) and a rendezvous directory, and move data through CUDA IPC handles of
 * buffers it allocates itself with cuMemAlloc; ranks in one process (a thread and a
 * device each) share those buffers by pointer. Its own dlopen + cuGetProcAddress_v2. */
#ifndef SIMCCL_H
#define SIMCCL_H

#include <cuda.h>
#include <stddef.h>

typedef struct simccl_comm_s *simcclComm_t;

/* Joins the job the environment names, on the current device; CUDA_SUCCESS or the
 * failing call's code (CUDA_ERROR_INVALID_VALUE: no or bad RANK/WORLD_SIZE). */
CUresult simcclCommInitEnv(simcclComm_t *comm);
/* n ranks in this process (like ncclCommInitAll): comms[r] is rank r's, to be used by
 * one thread each, on its own device; their buffers are shared by pointer, not IPC. */
CUresult simcclCommInitAll(simcclComm_t *comms, int n);
/* recv = the sum over ranks of send (count floats, device memory), the same bits on
 * every rank: ranks are added in rank order. Collective; stream's earlier work first. */
CUresult simcclAllReduceSum(simcclComm_t comm, const float *send, float *recv, size_t count, CUstream stream);
/* The sum in rank order that simcclAllReduceSum computes, for a caller that adds shards
 * itself: acc[i] = parts[0][i] + parts[1][i] + ... (host memory). */
void simcclSumInOrder(float *acc, const float *const *parts, int n, size_t count);
int simcclRank(simcclComm_t comm);
int simcclSize(simcclComm_t comm);
CUresult simcclCommDestroy(simcclComm_t comm);

#endif
