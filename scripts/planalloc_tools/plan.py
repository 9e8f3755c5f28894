"""planalloc plan FILE: what planalloc would need for a planner CSV, a planalloc dump or a
PyTorch memory snapshot, by running planalloc-plan on it."""
import os
import subprocess
import tempfile

from . import Fail, dumps, snapshot, tool
from .report import human

PAGE = 2 << 20  # the device's physical granularity: planalloc maps whole pages


def planner(bindir, csv_path, time_limit, alignment):
    cmd = [tool(bindir, "planalloc-plan"), "--time-limit", str(time_limit), "--alignment", str(alignment), csv_path]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if p.returncode:
        raise Fail((p.stderr.strip().splitlines() or ["planalloc-plan failed"])[-1].replace("planalloc: error: ", ""))
    return _figures(p.stdout.strip())


def _figures(line):
    """'...: N buffers, max-live M, pool P (...)' -> (line, buffers, max-live, pool)."""
    try:
        head = line.rsplit(": ", 1)[1]
        parts = [x.strip() for x in head.split(",")]
        return line, int(parts[0].split()[0]), int(parts[1].split()[1]), int(parts[2].split()[1])
    except (IndexError, ValueError):
        raise Fail("unexpected planalloc-plan output: %s" % line[:120])


def _is_pickle(path):
    try:
        with open(path, "rb") as f:
            return f.read(1) == b"\x80"
    except OSError as e:
        raise Fail("%s: %s" % (path, e.strerror))


def plan_snapshot(bindir, path, time_limit, markdown=False):
    for d in snapshot.devices(path):
        with tempfile.NamedTemporaryFile("w", suffix=".csv") as f:
            f.write(d.csv())
            f.flush()
            _, n, maxlive, pool = planner(bindir, f.name, time_limit, snapshot.GRAIN)
        need = -(-pool // PAGE) * PAGE
        peak = d.reserved_peak
        if markdown:  # scripts/bench-snapshots.sh's table row
            gib = lambda v: "%.2f" % (v / (1 << 30))
            print("| %s | %d | %d | %d (%d / %d) | %s | %.4f | %s%s | %s | %+.1f %% |" % (
                os.path.basename(path).rsplit(".", 1)[0], d.dev, d.events, n, d.before, d.at_end, gib(maxlive),
                pool / maxlive if maxlive else 1, gib(peak), "" if d.segment_events else " (at the snapshot)", gib(need),
                100.0 * (need - peak) / peak if peak else 0))
            continue
        print("planalloc: %s, device %d: %d trace events, %d buffers (%d live before the trace began, %d at its end)"
              % (path, d.dev, d.events, n, d.before, d.at_end))
        print("  max-live %s, planned pool %s (%.4fx max-live), %s in %s pages"
              % (human(maxlive), human(pool), pool / maxlive if maxlive else 1, human(need), human(PAGE)))
        where = "at its peak in the trace (segment events)" if d.segment_events else "at the snapshot (the trace has no segment events)"
        print("  the caching allocator reserved %s %s; planalloc would need %s (%+.1f %%)"
              % (human(peak), where, human(need), 100.0 * (need - peak) / peak if peak else 0))


def main(ns, bindir):
    time_limit, markdown, path = ns.time_limit, ns.markdown, ns.file
    if not 0 < time_limit <= 600:
        raise Fail("plan: --time-limit %g is not seconds in (0, 600]" % time_limit)
    if os.path.isdir(path) or dumps.NAME.match(os.path.basename(path)):
        sets = dumps.find_sets([path])
        if len(sets) != 1:
            raise Fail("%s holds the dumps of %d processes: name one file of the set" % (path, len(sets)))
        path = sets[0].need("trace.csv")
    if not os.path.exists(path):
        raise Fail("%s: no such file" % path)
    if _is_pickle(path):
        return plan_snapshot(bindir, path, time_limit, markdown) or 0
    line, _, _, _ = planner(bindir, path, time_limit, 256 if dumps.NAME.match(os.path.basename(path)) else 1)
    print(line)
    return 0
