"""planalloc run: a program under the preload, with the PLANALLOC_* settings asked for and
the framework switches that send its allocations through cudaMalloc."""
import os
import subprocess

from . import Fail, tool

# Framework allocators that would otherwise hide every tensor inside their own pools.
FRAMEWORK_ENV = (("PYTORCH_NO_CUDA_MEMORY_CACHING", "1"), ("XLA_PYTHON_CLIENT_ALLOCATOR", "platform"))


def library(bindir):
    lib = os.path.normpath(os.path.join(bindir, "..", "lib", "libplanalloc.so"))
    if not os.path.exists(lib):
        raise Fail("the preload library is not at %s (planalloc looks for ../lib beside itself)" % lib)
    return lib


def check(ns, bindir):
    """The options as planalloc-options checks them: the preload's own grammar."""
    cmd = ns.cmd[1:] if ns.cmd[:1] == ["--"] else ns.cmd
    if not cmd:
        raise Fail("run: no command to run (planalloc run --help shows how)")
    if not cmd[0] or "\0" in "".join(cmd):
        raise Fail("run: the command is an empty name or holds a NUL byte")
    if ns.events and not ns.dump:
        raise Fail("run: --events writes into the dump directory: give --dump DIR too")
    if ns.budget is not None:
        p = subprocess.run([tool(bindir, "planalloc-options"), "--value", "PLANALLOC_BUDGET", ns.budget], capture_output=True, text=True)
        if p.returncode:
            raise Fail("run: --budget %s" % (p.stderr.strip() or "rejected"))
    if ns.dump:
        try:
            os.makedirs(ns.dump, exist_ok=True)
        except OSError as e:
            raise Fail("run: --dump %s: cannot make the directory: %s" % (ns.dump, e.strerror))
    return cmd


def environment(ns, lib, env):
    env = dict(env)
    pre = env.get("LD_PRELOAD", "")  # the user's own preloads (a sanitizer runtime) stay first
    env["LD_PRELOAD"] = (pre + " " if pre else "") + lib
    for key, value in FRAMEWORK_ENV:
        env.setdefault(key, value)
    if ns.budget is not None:
        env["PLANALLOC_BUDGET"] = ns.budget
    if ns.dump:
        env["PLANALLOC_DUMP"] = os.path.abspath(ns.dump)
    for flag in ("events", "verbose", "stats"):
        if getattr(ns, flag):
            env["PLANALLOC_" + flag.upper()] = "1"
    return env


def main(ns, bindir):
    cmd = check(ns, bindir)
    env = environment(ns, library(bindir), os.environ)
    try:
        os.execvpe(cmd[0], cmd, env)  # the program's exit status is ours
    except OSError as e:
        raise Fail("run: cannot run %s: %s" % (cmd[0], e.strerror), 127)
