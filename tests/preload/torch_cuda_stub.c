/* A library named as PyTorch's CUDA one (libtorch_cuda.so), preloaded beside planalloc by
 * the env case: its exit verdict says PyTorch's caching allocator is on unless
 * PYTORCH_NO_CUDA_MEMORY_CACHING=1. Nothing in it runs. */
int planalloc_torch_cuda_stub;
