#!/usr/bin/env python3
"""Peak device memory of a command, read from outside it: runs CMD and polls the device's
used bytes (cuMemGetInfo's total - free) until CMD exits, then writes
`peak_bytes B baseline_bytes B samples N interval_us U` to --out (stderr without it).
peak_bytes is the highest reading minus the reading before CMD started, so it counts
CMD's CUDA context and everything it allocated. It is a sampled figure: a peak shorter
than the interval can be missed: that can flatter a run without planalloc (cudaMalloc
per tensor), never one with it (its pages stay mapped). Exits with CMD's status; 77
where there is no CUDA device.
Usage: gpu-meter.py [--device N] [--out FILE] -- CMD ARGS..."""
import ctypes
import subprocess
import sys
import time


def fail(message, status):
    print("gpu-meter: " + message, file=sys.stderr)
    sys.exit(status)


def device(index):
    """A reader of the device's used bytes (total - free, as cuMemGetInfo gives them for
    the whole device), through a context of the meter's own: counted in the baseline."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        fail("cannot load libcuda.so.1 (%s)" % e, 77)
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    if (cuda.cuInit(0) or cuda.cuDeviceGet(ctypes.byref(dev), index)
            or cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) or cuda.cuCtxSetCurrent(ctx)):
        fail("CUDA sees no device %d" % index, 77)
    free, total = ctypes.c_size_t(), ctypes.c_size_t()

    def used():
        if cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)):
            return 0
        return total.value - free.value
    return used


def parse(argv):
    opts, i = {"device": 0, "out": None}, 0
    while i < len(argv) and argv[i] != "--":
        if argv[i] in ("--device", "--out") and i + 1 < len(argv):
            opts[argv[i][2:]] = argv[i + 1]
            i += 2
        else:
            fail(__doc__.splitlines()[-1].replace("Usage", "usage"), 2)
    if i + 1 >= len(argv):
        fail(__doc__.splitlines()[-1].replace("Usage", "usage"), 2)
    return int(opts["device"]), opts["out"], argv[i + 1:]


def main():
    index, out, cmd = parse(sys.argv[1:])
    used = device(index)
    baseline = min(used() for _ in range(8))
    peak, samples, start = baseline, 0, time.perf_counter()
    child = subprocess.Popen(cmd)
    while child.poll() is None:
        peak = max(peak, used())
        samples += 1
    interval = (time.perf_counter() - start) * 1e6 / max(samples, 1)
    line = "peak_bytes %d baseline_bytes %d samples %d interval_us %.0f\n" % (peak - baseline, baseline, samples, interval)
    if out:
        with open(out, "w") as f:
            f.write(line)
    else:
        sys.stderr.write("gpu-meter: " + line)
    return child.returncode if child.returncode >= 0 else 128 - child.returncode


if __name__ == "__main__":
    sys.exit(main())
