#!/usr/bin/env python3
"""The PyTorch program of the GPU checks (scripts/gpu-check.sh): a small GPT-style model
trained with AdamW on seeded synthetic tokens. Every run computes the same bits (seeded
data, deterministic algorithms, attention written out rather than a fused kernel whose
backward may use atomics), so a run under planalloc must print the same losses and end
with the same parameters as a run without it.
Prints `step N loss HEX ms T` per step, then
`final params SHA256 median_ms M torch_peak_reserved B` (the hash covers every parameter's
bytes; the median is over the second half of the steps, when planalloc serves its plan;
the peak is what PyTorch's allocator reserved).
Usage: torch_train.py [--steps N] [--batch B] [--seq S] [--dim D] [--layers L]
                      [--heads H] [--vocab V] [--device cuda|cpu]"""
import argparse
import ctypes
import hashlib
import math
import os
import statistics
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.up, self.down = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def attention(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // self.heads)
        causal = torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1)
        weights = scores.masked_fill(causal, float("-inf")).softmax(-1)
        return self.proj((weights @ v).transpose(1, 2).reshape(b, s, d))

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class Model(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(a.vocab, a.dim), nn.Embedding(a.seq, a.dim)
        self.blocks = nn.ModuleList(Block(a.dim, a.heads) for _ in range(a.layers))
        self.norm, self.head = nn.LayerNorm(a.dim), nn.Linear(a.dim, a.vocab, bias=False)

    def forward(self, idx):
        x = self.tokens(idx) + self.positions(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def arguments():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in (("steps", 60), ("batch", 16), ("seq", 512), ("dim", 1024), ("layers", 8),
                          ("heads", 16), ("vocab", 8192)):
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--device", default="cuda")
    return p.parse_args()


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def step(model, optimizer, tokens, device):
    x, y = tokens[:, :-1].to(device), tokens[:, 1:].to(device)
    loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return loss.item()


def params_hash(model):
    h = hashlib.sha256()
    for p in model.parameters():
        t = p.detach().cpu().contiguous()
        h.update(ctypes.string_at(t.data_ptr(), t.numel() * t.element_size()))  # no numpy needed
    return h.hexdigest()


def main():
    a = arguments()
    torch.manual_seed(0)
    # warn, not fail, where an op has no deterministic kernel: the runs' comparison shows it
    torch.use_deterministic_algorithms(True, warn_only=True)
    device = torch.device(a.device)
    model = Model(a).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    data = torch.Generator().manual_seed(1)
    times = []
    for n in range(a.steps):
        tokens = torch.randint(a.vocab, (a.batch, a.seq + 1), generator=data)
        synchronize(device)
        start = time.perf_counter()
        loss = step(model, optimizer, tokens, device)
        synchronize(device)
        times.append((time.perf_counter() - start) * 1e3)
        print("step %d loss %s ms %.2f" % (n, float(loss).hex(), times[-1]), flush=True)
    reserved = torch.cuda.max_memory_reserved(device) if device.type == "cuda" else 0
    median = statistics.median(times[len(times) // 2:])
    print("final params %s median_ms %.2f torch_peak_reserved %d" % (params_hash(model), median, reserved))
    return 0


if __name__ == "__main__":
    sys.exit(main())
