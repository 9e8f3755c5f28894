#!/usr/bin/env python3
"""The planalloc command under random argument lists and hostile paths (issue #40): no
traceback, and an exit status of 0, 1 or 2, or the program's own under run (7 here; 127
for one that cannot run). Every status 2 of planalloc's own is one 'planalloc: error:'
line; status 1 is never an internal fault. Usage: cli_fuzz.py PLANALLOC DUMP_DIR N SEED"""
import os
import random
import subprocess
import sys
import tempfile

pa, dumpdir, n, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(seed)
tmp = tempfile.mkdtemp()
afile = os.path.join(tmp, "file")
open(afile, "w").write("id,lower,upper,size\n")
dumpfile = sorted(os.path.join(dumpdir, f) for f in os.listdir(dumpdir))[0]
PATHS = [dumpdir, dumpfile, afile, tmp, os.path.join(tmp, "missing"), "/proc/self/mem", "/proc/x/y", "/dev/null",
         "", "-", "--", "x" * 5000, "\u00e9\u6f22", os.path.join(afile, "under"), "/", "."]
SIZES = ["1G", "0.5GiB", "150%", "60%", "lots", "-1", "0", "1e3M", "99999999999T", "", "%", "4Gib"]
OPTS = {"run": ["--budget", "--dump", "--events", "--verbose", "--stats", "--frob", "-h"],
        "report": ["--out", "--frob", "-h"], "export": ["--perfetto", "--memory-viz", "-o", "--pdf", "-h"],
        "plan": ["--markdown", "--time-limit", "-h"]}
PROGRAMS = [["true"], ["sh", "-c", "exit 7"], ["/nonexistent/program"], ["false"]]


def token(cmd):
    r = rng.random()
    if r < 0.35:
        return rng.choice(PATHS)
    if r < 0.5:
        return rng.choice(SIZES)
    if r < 0.6:
        return rng.choice(["0", "-3", "nan", "inf", "2", "1e9"])
    return rng.choice(OPTS.get(cmd, ["--version", "--help", "-x"]))


def case():
    cmd = rng.choice(list(OPTS) + ["frob", "", "--version", "--help"])
    args = [cmd] + [token(cmd) for _ in range(rng.randrange(0, 5))]
    if cmd == "run" and rng.random() < 0.8:
        args += (["--"] if rng.random() < 0.5 else []) + rng.choice(PROGRAMS)
    return args


bad = 0
for i in range(n):
    args = case()
    p = subprocess.run([pa] + args, capture_output=True, text=True, errors="replace", timeout=120, cwd=tmp)
    allowed = {0, 1, 2} | ({7, 127} if args[0] == "run" else set())
    err = p.stderr
    why = None
    if "Traceback" in err:
        why = "a traceback"
    elif p.returncode not in allowed:
        why = "exit status %d" % p.returncode
    elif "planalloc: error: internal" in err:
        why = "an internal fault"
    elif p.returncode == 2 and not any(line.startswith("planalloc: error: ") for line in err.splitlines()):
        why = "status 2 without an error line"
    elif sum(line.startswith("planalloc: error: ") for line in err.splitlines()) > 1:
        why = "more than one error line"
    if why:
        bad += 1
        print("FAIL %s: planalloc %s\n%s" % (why, " ".join(repr(a)[:60] for a in args), err[-600:]))
print("%d cases, %d failed" % (n, bad))
sys.exit(1 if bad else 0)
