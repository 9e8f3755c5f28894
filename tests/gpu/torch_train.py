#!/usr/bin/env python3
"""The PyTorch program of the GPU checks (scripts/gpu-check.sh): a small GPT-style model
trained with AdamW on seeded synthetic tokens, or (--model resnet50) ResNet-50 trained
with SGD on seeded random images. Every run computes the same bits (seeded data,
deterministic algorithms, attention written out rather than a fused kernel whose
backward may use atomics, ResNet's pooling as a mean rather than adaptive pooling,
whose CUDA backward is not deterministic), so a run under planalloc must print the
same losses and end with the same parameters as a run without it.
Prints `step N loss HEX ms T` per step, then
`final params SHA256 median_ms M torch_peak_reserved B` (the hash covers every parameter's
bytes; the median is over the second half of the steps, when planalloc serves its plan;
the peak is what PyTorch's allocator reserved).
Usage: torch_train.py [--model gpt|resnet50] [--steps N] [--batch B] [--device cuda|cpu]
                      gpt: [--seq S] [--dim D] [--layers L] [--heads H] [--vocab V]
                      resnet50: [--image P] [--classes C]   (batch 16 / 32 by default)"""
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


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        cout = 4 * width
        self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2, self.bn2 = nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNet50(nn.Module):
    """He et al.'s ResNet-50: bottleneck stages of 3, 4, 6 and 3 blocks."""

    def __init__(self, classes):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], 64
        for width, count, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for k in range(count):
                blocks.append(Bottleneck(cin, width, stride if k == 0 else 1))
                cin = 4 * width
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        return self.fc(self.blocks(self.stem(x)).mean((2, 3)))


def arguments():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=("gpt", "resnet50"), default="gpt")
    for name, default in (("steps", 60), ("batch", 0), ("seq", 512), ("dim", 1024), ("layers", 8),
                          ("heads", 16), ("vocab", 8192), ("image", 224), ("classes", 1000)):
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--device", default="cuda")
    a = p.parse_args()
    a.batch = a.batch or (16 if a.model == "gpt" else 32)
    return a


def batches(a):
    """The step's inputs and targets, seeded on the CPU: the same bits on every run."""
    data = torch.Generator().manual_seed(1)
    while True:
        if a.model == "gpt":
            tokens = torch.randint(a.vocab, (a.batch, a.seq + 1), generator=data)
            yield tokens[:, :-1], tokens[:, 1:]
        else:
            yield (torch.randn(a.batch, 3, a.image, a.image, generator=data),
                   torch.randint(a.classes, (a.batch,), generator=data))


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def step(model, optimizer, inputs, targets, device):
    x, y = inputs.to(device), targets.to(device)
    out = model(x)
    loss = F.cross_entropy(out.flatten(0, -2), y.flatten())
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
    if a.model == "gpt":
        model = Model(a).to(device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    else:
        model = ResNet50(a.classes).to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    data = batches(a)
    times = []
    for n in range(a.steps):
        inputs, targets = next(data)
        synchronize(device)
        start = time.perf_counter()
        loss = step(model, optimizer, inputs, targets, device)
        synchronize(device)
        times.append((time.perf_counter() - start) * 1e3)
        print("step %d loss %s ms %.2f" % (n, float(loss).hex(), times[-1]), flush=True)
    reserved = torch.cuda.max_memory_reserved(device) if device.type == "cuda" else 0
    median = statistics.median(times[len(times) // 2:])
    print("final params %s median_ms %.2f torch_peak_reserved %d" % (params_hash(model), median, reserved))
    return 0


if __name__ == "__main__":
    sys.exit(main())
