"""A Python program that allocates on the (simulated) CUDA runtime from two functions,
through ctypes.PyDLL (the GIL stays held through the call, as PyTorch's forward holds it):
the report's top call sites must name these functions and their lines. Six steps alike,
so that a plan serves them; the gradients are the larger bytes."""
import ctypes
import sys

rt = ctypes.PyDLL(sys.argv[1] if len(sys.argv) > 1 else "libcudart.so.13")


def make_activations(n):
    p = ctypes.c_void_p()
    assert rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n)) == 0  # ACTIVATIONS
    return p


def make_gradients(n):
    p = ctypes.c_void_p()
    assert rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n)) == 0  # GRADIENTS
    return p


for step in range(6):
    buffers = [make_activations(1 << 20) for _ in range(3)] + [make_gradients(4 << 20) for _ in range(2)]
    for p in buffers:
        assert rt.cudaFree(p) == 0
print("done")
