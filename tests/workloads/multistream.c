/* multistream: a copy stream brings each chunk in (stream-ordered allocation, async copy
 * from pinned memory), a compute stream waits on an event and folds it into an
 * accumulator, then frees the chunk on the compute stream: memory allocated on one
 * stream, used and freed on another, reused by the next iteration's copy. A missing
 * wait would read a chunk before its copy lands and change the checksum.
 * Usage: multistream [--iters N] [--elems E] */
#include <stdint.h>
#include <string.h>

#include "port.h"

KERNEL_4(fold, float *, acc, const float *, chunk, float, weight, long, n) {
  DEVICE_LOOP(i, n) acc[i] = acc[i] * 0.5f + weight * chunk[i];
}

KERNEL_3(square_into, float *, dst, const float *, src, long, n) {
  DEVICE_LOOP(i, n) dst[i] = src[i] * src[i];
}

int main(int argc, char **argv) {
  int iters = 20;
  long n = 1 << 16;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--elems")) n = atol(argv[i + 1]);
    else fprintf(stderr, "multistream: unknown option %s\n", argv[i]), exit(2);
  }
  if (iters <= 0 || n <= 0) fprintf(stderr, "multistream: bad sizes\n"), exit(2);
  cudaStream_t copy, compute;
  cudaEvent_t landed, consumed;
  CHECK_CUDA(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  CHECK_CUDA(cudaEventCreate(&landed));
  CHECK_CUDA(cudaEventCreate(&consumed));
  float *host, *acc, *out = (float *)malloc((size_t)n * sizeof *out);
  CHECK_CUDA(cudaMallocHost((void **)&host, (size_t)n * sizeof *host));
  CHECK_CUDA(cudaMalloc((void **)&acc, (size_t)n * sizeof *acc));
  CHECK_CUDA(cudaMemset(acc, 0, (size_t)n * sizeof *acc));
  unsigned long long seed = 7;
  uint64_t h = 0;
  for (int it = 0; it < iters; it++) {
    CHECK_CUDA(cudaStreamWaitEvent(copy, consumed, 0)); /* the pinned buffer is free again */
    for (long i = 0; i < n; i++) host[i] = port_rand(&seed);
    float *chunk, *tmp;
    CHECK_CUDA(cudaMallocAsync((void **)&chunk, (size_t)n * sizeof *chunk, copy));
    CHECK_CUDA(cudaMemcpyAsync(chunk, host, (size_t)n * sizeof *chunk, cudaMemcpyHostToDevice, copy));
    CHECK_CUDA(cudaEventRecord(landed, copy));
    CHECK_CUDA(cudaStreamWaitEvent(compute, landed, 0));
    CHECK_CUDA(cudaMalloc((void **)&tmp, (size_t)n * sizeof *tmp));
    CHECK_CUDA(square_into_launch(grid_for(n), block256(), compute, tmp, chunk, n));
    CHECK_CUDA(fold_launch(grid_for(n), block256(), compute, acc, tmp, 1.0f + (float)it, n));
    CHECK_CUDA(cudaEventRecord(consumed, compute));
    CHECK_CUDA(cudaFreeAsync(chunk, compute)); /* freed on the other stream */
    CHECK_CUDA(cudaStreamSynchronize(compute));
    CHECK_CUDA(cudaFree(tmp));
    CHECK_CUDA(cudaMemcpy(out, acc, (size_t)n * sizeof *out, cudaMemcpyDeviceToHost));
    h = port_hash(PORT_HASH_SEED, out, (size_t)n * sizeof *out);
    printf("iter %d acc[0] %.9g checksum %016llx\n", it, out[0], (unsigned long long)h);
  }
  printf("final multistream iterations %d checksum %016llx\n", iters, (unsigned long long)h);
  CHECK_CUDA(cudaFree(acc));
  CHECK_CUDA(cudaFreeHost(host));
  CHECK_CUDA(cudaStreamDestroy(copy));
  CHECK_CUDA(cudaStreamDestroy(compute));
  free(out);
  return 0;
}
