"""The tools tests' checker: reads what planalloc's command wrote and compares it with
the dumps it came from. Usage: check.py WHAT ARGS (see the functions below); exit 1 with
a 'FAIL:' line on the first mismatch."""
import json
import os
import pickle
import pickletools
import sys

sys.path.insert(0, sys.argv[1])  # the planalloc_tools directory's parent
from planalloc_tools import dumps, png, report  # noqa: E402

# The opcodes PyTorch's memory_viz unpickler (MemoryViz.js) handles; anything else it
# rejects with "UNKNOWN OPCODE".
MEMVIZ_OPCODES = {"PROTO", "APPENDS", "BINGET", "BININT", "BININT1", "BININT2", "EMPTY_DICT", "EMPTY_LIST",
                  "FRAME", "LONG1", "LONG_BINGET", "MARK", "MEMOIZE", "SETITEMS", "SHORT_BINUNICODE", "STOP",
                  "TUPLE2", "APPEND", "NEWFALSE", "BINPUT", "BINUNICODE", "EMPTY_TUPLE", "NEWTRUE", "NONE",
                  "BINFLOAT", "TUPLE", "TUPLE1", "TUPLE3", "LONG_BINPUT", "LIST", "DICT", "SETITEM"}


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def the_run(dump_dir):
    sets = dumps.find_sets([dump_dir])
    if len(sets) != 1:
        fail("%d dump sets in %s" % (len(sets), dump_dir))
    return report.Run(sets[0])


def decoded(path):
    try:
        w, h, rows = png.decode(path)
    except (OSError, ValueError) as e:
        fail("%s is not a valid PNG: %s" % (path, e))
    if (w, h) != (report.WIDTH, report.HEIGHT):
        fail("%s is %dx%d, not %dx%d" % (path, w, h, report.WIDTH, report.HEIGHT))
    return lambda x, y: tuple(rows[y][3 * x:3 * x + 3])


def memory_png(dump_dir, path):
    """Every timeline row's live and mapped peaks are drawn at the pixel the axes put
    them (mapped may lie under live, which is drawn over it); the budget line too."""
    run, px = the_run(dump_dir), decoded(path)
    ax = report.memory_axes(run)
    checked, budget = 0, run.stats.get("budget_bytes", 0)
    on_budget = lambda v, colour: budget and ax.y(v) == ax.y(budget) and colour == report.BUDGET
    for r in run.timeline:
        x = ax.x(r["event"])
        if px(x, ax.y(r["live_max"])) != report.LIVE and not on_budget(r["live_max"], px(x, ax.y(r["live_max"]))):
            fail("event %d: live peak %d not drawn at (%d, %d): %s" % (r["event"], r["live_max"], x, ax.y(r["live_max"]), px(x, ax.y(r["live_max"]))))
        if px(x, ax.y(r["mapped_max"])) not in (report.MAPPED, report.LIVE) and not on_budget(r["mapped_max"], px(x, ax.y(r["mapped_max"]))):
            fail("event %d: mapped peak %d not drawn at (%d, %d)" % (r["event"], r["mapped_max"], x, ax.y(r["mapped_max"])))
        checked += 1
    if budget:
        row = [px(x, ax.y(budget)) for x in range(ax.x0, ax.x1)]
        if row.count(report.BUDGET) < (ax.x1 - ax.x0) // 3:
            fail("the budget line is not at y=%d" % ax.y(budget))
    print("memory plot: %d rows checked, peak %d, axis %d" % (checked, max(r["live_max"] for r in run.timeline), ax.ymax))


def layout_png(dump_dir, path):
    """Every planned buffer's rectangle (big enough to have a centre of its own) has its
    callsite's colour at its centre, and the plan has no two buffers overlapping."""
    run, px = the_run(dump_dir), decoded(path)
    spans = []
    for r in run.plan:
        for lo, hi in report._spans(r):
            for lo2, hi2, off2, size2 in spans:
                if lo < hi2 and lo2 < hi and r["offset"] < off2 + size2 and off2 < r["offset"] + r["size"]:
                    fail("buffer %s overlaps another in time and address" % r["id"])
            spans.append((lo, hi, r["offset"], r["size"]))
    checked = 0
    for x0, y0, x1, y1, colour in report.layout_rects(run):
        if x1 - x0 >= 2 and y1 - y0 >= 2:
            if px((x0 + x1) // 2, (y0 + y1) // 2) != colour:
                fail("rectangle (%d,%d)-(%d,%d) is not in its callsite's colour" % (x0, y0, x1, y1))
            checked += 1
    if not checked:
        fail("no rectangle checked")
    print("layout plot: %d rectangles checked" % checked)


def perfetto(path, dump_dir):
    """The trace-event format's rules (the JSON object form) and the counters' values."""
    with open(path) as f:
        data = json.load(f)
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        fail("no traceEvents list")
    needs = {"M": ("name", "pid", "tid", "args"), "C": ("name", "ts", "pid", "args"),
             "X": ("name", "ts", "dur", "pid", "tid"), "i": ("name", "ts", "pid", "s")}
    counters = []
    for e in data["traceEvents"]:
        ph = e.get("ph")
        if ph not in needs:
            fail("event phase %r" % ph)
        for k in needs[ph]:
            if k not in e:
                fail("a %s event without %s" % (ph, k))
        if not isinstance(e["name"], str) or not isinstance(e["pid"], int) or not isinstance(e.get("tid", 0), int):
            fail("bad name/pid/tid in %r" % e)
        if ph != "M" and (not isinstance(e["ts"], (int, float)) or e["ts"] < 0):
            fail("bad ts in %r" % e)
        if ph == "X" and (not isinstance(e["dur"], (int, float)) or e["dur"] < 0):
            fail("bad dur in %r" % e)
        if ph == "C" and not all(isinstance(v, (int, float)) for v in e["args"].values()):
            fail("a counter with a non-number")
        if ph == "i" and e["s"] not in ("g", "p", "t"):
            fail("bad instant scope")
        if ph == "M" and (e["name"] not in ("process_name", "thread_name") or not isinstance(e["args"].get("name"), str)):
            fail("bad metadata event %r" % e)
        if ph == "C" and e["name"] == "device memory":
            counters.append((e["ts"], e["args"]["live"], e["args"]["planalloc mapped"]))
    run = the_run(dump_dir)
    want = [(r["time_us"], r["live_max"], r["mapped_max"]) for r in run.timeline]
    if counters != want:
        fail("the memory counters differ from the timeline dump")
    phases = [e["name"] for e in data["traceEvents"] if e["ph"] == "X" and e["tid"] == 1]
    if "serving the plan" not in phases:
        fail("no serving phase slice: %s" % phases)
    print("perfetto: %d events, %d counter samples" % (len(data["traceEvents"]), len(counters)))


def memviz(path, dump_dir):
    """Protocol 2, only memory_viz's opcodes, loads, and replays to the dump's live bytes."""
    with open(path, "rb") as f:
        blob = f.read()
    ops = set()
    for op, arg, _ in pickletools.genops(blob):
        ops.add(op.name)
        if op.name == "PROTO" and arg != 2:
            fail("protocol %d" % arg)
    if ops - MEMVIZ_OPCODES:
        fail("opcodes memory_viz cannot read: %s" % sorted(ops - MEMVIZ_OPCODES))
    snap = pickle.loads(blob)
    run = the_run(dump_dir)
    live, by_event, seen = 0, {}, {}
    for e in snap["device_traces"][0]:
        if e["action"] == "alloc":
            live += e["size"]
            seen[e["addr"]] = e["size"]
        elif e["action"] == "free_completed":
            if seen.pop(e["addr"], None) != e["size"]:
                fail("a free of a block not allocated: %x" % e["addr"])
            live -= e["size"]
        by_event[e["time_us"]] = live
    want, ok = {}, 0
    for t in sorted(by_event):
        want[t] = sum(r["size"] for r in run.trace if r["lower"] <= t < r["upper"])
        ok += want[t] == by_event[t]
    if ok != len(by_event):
        fail("replayed live bytes differ from the trace dump at %d of %d events" % (len(by_event) - ok, len(by_event)))
    peak = max(by_event.values())
    if run.stats["replans"] == 0 and peak != run.stats["live_peak_bytes"]:
        fail("replayed peak %d, the stats dump's live peak %d" % (peak, run.stats["live_peak_bytes"]))
    active = sum(b["size"] for b in snap["segments"][0]["blocks"] if b["state"] == "active_allocated")
    if active != live:
        fail("the segment's active blocks (%d bytes) are not what the trace leaves live (%d)" % (active, live))
    print("memory_viz: %d actions, peak %d bytes, opcodes %s" % (len(snap["device_traces"][0]), peak, ",".join(sorted(ops))))


def make_snapshot(out):
    """A snapshot whose figures are known by hand (tools_test.sh checks them): a ring that
    starts with a free, a block live throughout, one grown segment."""
    A, B, C, D, E, S = (0x7000 + k * 0x1000 for k in range(6))
    ev = lambda a, addr, size: {"action": a, "addr": addr, "size": size, "stream": 0, "frames": []}
    trace = [ev("free_requested", A, 1024), ev("free_completed", A, 1024), ev("segment_alloc", S, 4096),
             ev("alloc", B, 2048), ev("alloc", C, 512), ev("free_requested", B, 2048), ev("free_completed", B, 2048),
             ev("alloc", D, 1024)]
    blocks = [{"address": a, "size": s, "requested_size": s, "state": "active_allocated", "frames": []} for a, s in ((C, 512), (D, 1024), (E, 4096))]
    segs = [{"device": 0, "address": A, "total_size": 16384, "stream": 0, "segment_type": "small", "blocks": blocks}]
    with open(out, "wb") as f:
        pickle.dump({"segments": segs, "device_traces": [trace]}, f, protocol=4)


def make_foreign(out):
    with open(out, "wb") as f:
        pickle.dump({"segments": [], "device_traces": [], "x": complex(1, 2)}, f)


if __name__ == "__main__":
    what, args = sys.argv[2], sys.argv[3:]
    {"memory-png": memory_png, "layout-png": layout_png, "perfetto": perfetto, "memviz": memviz,
     "make-snapshot": make_snapshot, "make-foreign": make_foreign}[what](*args)
