"""The tools tests' checker: reads what planalloc's command wrote and compares it with
the dumps it came from. Usage: check.py WHAT ARGS (see the functions below); exit 1 with
a 'FAIL:' line on the first mismatch."""
import json
import os
import pickle
import pickletools
import sys

sys.path.insert(0, sys.argv[1])  # the planalloc_tools directory's parent
from planalloc_tools import dumps, report, svg  # noqa: E402

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


def parsed(path):
    try:
        doc = svg.read(path)
    except (OSError, ValueError) as e:
        fail("%s is not a valid SVG: %s" % (path, e))
    size = (doc["svg"][0].get("width"), doc["svg"][0].get("height"))
    if size != (str(report.WIDTH), str(report.HEIGHT)):
        fail("%s is %sx%s, not %dx%d" % (path, size[0], size[1], report.WIDTH, report.HEIGHT))
    return doc


def points(doc, colour):
    """The (x, y) points of the polylines drawn in colour."""
    out = set()
    for p in doc.get("polyline", []):
        if p["stroke"] == svg.colour(colour):
            out |= {tuple(int(v) for v in xy.split(",")) for xy in p["points"].split()}
    return out


def texts(doc):
    return [t["text"] for t in doc.get("text", [])]


def memory_svg(dump_dir, path):
    """Every timeline row's live and mapped peaks are points of their lines, where the axes
    put them; the budget line too; a title, both axes' labels and the legend as text."""
    run, doc = the_run(dump_dir), parsed(path)
    ax = report.memory_axes(run)
    live, mapped = points(doc, report.LIVE), points(doc, report.MAPPED)
    for r in run.timeline:
        x = ax.x(r["event"])
        if (x, ax.y(r["live_max"])) not in live:
            fail("event %d: live peak %d not drawn at (%d, %d)" % (r["event"], r["live_max"], x, ax.y(r["live_max"])))
        if (x, ax.y(r["mapped_max"])) not in mapped:
            fail("event %d: mapped peak %d not drawn at (%d, %d)" % (r["event"], r["mapped_max"], x, ax.y(r["mapped_max"])))
    budget = run.stats.get("budget_bytes", 0)
    lines = [(int(l["y1"]), int(l["x2"]) - int(l["x1"])) for l in doc.get("line", []) if l["stroke"] == svg.colour(report.BUDGET)]
    if budget and (ax.y(budget), ax.x1 - ax.x0) not in lines:
        fail("the budget line is not at y=%d across the plot" % ax.y(budget))
    words = texts(doc)
    for want in ("device memory over the run: ", "allocation and free events", "device memory (bytes)", "live bytes", "planalloc mapped"):
        if not any(t.startswith(want) for t in words):
            fail("no text %r in the plot" % want)
    print("memory plot: %d rows checked, peak %d, axis %d" % (len(run.timeline), max(r["live_max"] for r in run.timeline), ax.ymax))


def layout_svg(dump_dir, path):
    """Every planned buffer's rectangle is drawn, in its callsite's colour, and the plan has
    no two buffers overlapping."""
    run, doc = the_run(dump_dir), parsed(path)
    spans = []
    for r in run.plan:
        for lo, hi in report._spans(r):
            for lo2, hi2, off2, size2 in spans:
                if lo < hi2 and lo2 < hi and r["offset"] < off2 + size2 and off2 < r["offset"] + r["size"]:
                    fail("buffer %s overlaps another in time and address" % r["id"])
            spans.append((lo, hi, r["offset"], r["size"]))
    drawn = {(int(r["x"]), int(r["y"]), int(r["width"]), int(r["height"]), r["fill"]) for r in doc.get("rect", []) if "x" in r}
    checked = 0
    for x0, y0, x1, y1, colour in report.layout_rects(run):
        want = (min(x0, x1), min(y0, y1), abs(x1 - x0) + 1, abs(y1 - y0) + 1, svg.colour(colour))
        if want not in drawn:
            fail("rectangle (%d,%d)-(%d,%d) is not drawn in its callsite's colour" % (x0, y0, x1, y1))
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


def memviz_load(path):
    """Protocol 2 and only memory_viz's opcodes: the snapshot, and the opcodes seen."""
    with open(path, "rb") as f:
        blob = f.read()
    ops = set()
    for op, arg, _ in pickletools.genops(blob):
        ops.add(op.name)
        if op.name == "PROTO" and arg != 2:
            fail("protocol %d" % arg)
    if ops - MEMVIZ_OPCODES:
        fail("opcodes memory_viz cannot read: %s" % sorted(ops - MEMVIZ_OPCODES))
    return pickle.loads(blob), ops


def memviz_run(path, dump_dir):
    """From the event log, the whole run: every allocation the stats count, times that
    never go back, the live peak the stats saw (each size in cudaMalloc's 256-byte
    grains, as planalloc counts it), and the segment holding what is live at the end."""
    snap, ops = memviz_load(path)
    run = the_run(dump_dir)
    live, peak, seen, allocs, last = 0, 0, {}, 0, 0
    for e in snap["device_traces"][0]:
        size = -(-e["size"] // 256) * 256
        if e["time_us"] < last:
            fail("time goes back at %s of %x: %d after %d" % (e["action"], e["addr"], e["time_us"], last))
        last = e["time_us"]
        if e["action"] == "alloc":
            live, allocs = live + size, allocs + 1
            seen[e["addr"]] = size
        elif e["action"] == "free_completed":
            if seen.pop(e["addr"], None) != size:
                fail("a free of a block not allocated: %x" % e["addr"])
            live -= size
        peak = max(peak, live)
    if allocs != run.stats["allocations"]:
        fail("%d allocations in the export, %d in the stats" % (allocs, run.stats["allocations"]))
    if peak != run.stats["live_peak_bytes"]:
        fail("replayed peak %d, the stats dump's live peak %d" % (peak, run.stats["live_peak_bytes"]))
    if last <= 0 or last > run.timeline[-1]["time_us"] + 10 ** 6:
        fail("the last time %d us is not within the run (its timeline ends at %d)" % (last, run.timeline[-1]["time_us"]))
    active = sum(-(-b["size"] // 256) * 256 for s in snap["segments"] for b in s["blocks"] if b["state"] == "active_allocated")
    if active != live:
        fail("the segment's active blocks (%d bytes) are not what the run leaves live (%d)" % (active, live))
    print("memory_viz, whole run: %d actions over %d us, peak %d bytes" % (len(snap["device_traces"][0]), last, peak))


def memviz(path, dump_dir):
    """Protocol 2, only memory_viz's opcodes, loads, and replays to the dump's live bytes."""
    snap, ops = memviz_load(path)
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


def torch_frames(path):
    """PyTorch's call sites from the H100 run: past its allocation path (c10, at::detail's
    empty_strided, the dispatcher) to the op; a site that is that path alone shows its
    outermost frame. The dump's symbols are mangled: c++filt names them."""
    from planalloc_tools import sites
    named = dumps.read_sites(path)
    sites.symbolize(named)
    if not sites.shutil.which("c++filt"):
        print("torch frames: no c++filt, skipped")
        return
    op = sites.program_frames(named["a32c3675ff5442cf"])
    if not op[0]["function"].startswith("at::native::structured_sum_out::impl("):
        fail("the sum's site starts at %s, not at the op" % op[0]["function"])
    path_only = sites.program_frames(named["6b2598c3e172deb9"])
    if len(path_only) != 1 or not path_only[0]["function"].startswith("at::detail::empty_cuda("):
        fail("the allocation path alone: %s" % [f["function"] for f in path_only])
    # a program's own unnamed frame (a static function, no debug info) is no framework's: kept
    c = [{"module": "/bin/prog", "offset": 16, "symbol": "", "function": "?", "file": "", "line": 0},
         {"module": "/bin/prog", "offset": 32, "symbol": "main", "function": "main", "file": "", "line": 0}]
    if sites.program_frames(c) != c:
        fail("a C program's unnamed first frame was skipped: %s" % sites.program_frames(c))
    print("torch frames: %s; %s" % (op[0]["function"].split("(")[0], path_only[0]["function"].split("(")[0]))


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
    {"memory-svg": memory_svg, "layout-svg": layout_svg, "perfetto": perfetto, "memviz": memviz, "memviz-run": memviz_run, "torch-frames": torch_frames,
     "make-snapshot": make_snapshot, "make-foreign": make_foreign}[what](*args)
