"""planalloc run: a program under the preload, with the PLANALLOC_* settings asked for and
the framework switches that send its allocations through cudaMalloc."""
import os
import re

from . import Fail

# Framework allocators that would otherwise hide every tensor inside their own pools.
FRAMEWORK_ENV = (("PYTORCH_NO_CUDA_MEMORY_CACHING", "1"), ("XLA_PYTHON_CLIENT_ALLOCATOR", "platform"))
SIZE = re.compile(r"^(\d+(\.\d+)?%|\d+([KMGT](iB|B)?)?)$", re.I)
USAGE = "usage: planalloc run [--budget SIZE|N%] [--dump DIR [--events]] [--verbose] [--stats] -- CMD ARGS..."


def library(bindir):
    lib = os.path.normpath(os.path.join(bindir, "..", "lib", "libplanalloc.so"))
    if not os.path.exists(lib):
        raise Fail("the preload library is not at %s (planalloc looks for ../lib beside itself)" % lib)
    return lib


def parse(args):
    opts, i = {}, 0
    while i < len(args) and args[i] != "--":
        a = args[i]
        if a in ("--verbose", "--stats", "--events"):
            opts[a[2:]] = True
        elif a in ("--budget", "--dump") and i + 1 < len(args):
            opts[a[2:]] = args[i + 1]
            i += 1
        else:
            raise Fail("run: unknown or incomplete option '%s'; %s" % (a, USAGE))
        i += 1
    if i + 1 >= len(args):
        raise Fail("run: no command; " + USAGE)
    if opts.get("events") and "dump" not in opts:
        raise Fail("run: --events writes into the dump directory: give --dump DIR too; " + USAGE)
    if "budget" in opts and not SIZE.match(opts["budget"]):
        raise Fail("run: --budget '%s' is not a size (4GiB, 512M, 1073741824) or a share of the device (60%%)" % opts["budget"])
    return opts, args[i + 1:]


def environment(opts, lib, env):
    env = dict(env)
    pre = env.get("LD_PRELOAD", "")  # the user's own preloads (a sanitizer runtime) stay first
    env["LD_PRELOAD"] = (pre + " " if pre else "") + lib
    for key, value in FRAMEWORK_ENV:
        env.setdefault(key, value)
    if "budget" in opts:
        env["PLANALLOC_BUDGET"] = opts["budget"]
    if "dump" in opts:
        os.makedirs(opts["dump"], exist_ok=True)
        env["PLANALLOC_DUMP"] = os.path.abspath(opts["dump"])
    if opts.get("events"):
        env["PLANALLOC_EVENTS"] = "1"
    if opts.get("verbose"):
        env["PLANALLOC_VERBOSE"] = "1"
    if opts.get("stats"):
        env["PLANALLOC_STATS"] = "1"
    return env


def main(args, bindir):
    opts, cmd = parse(args)
    env = environment(opts, library(bindir), os.environ)
    try:
        os.execvpe(cmd[0], cmd, env)  # the program's exit status is ours
    except OSError as e:
        raise Fail("run: cannot run %s: %s" % (cmd[0], e.strerror), 127)
