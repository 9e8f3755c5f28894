"""planalloc export: a run's dumps as a Perfetto / chrome://tracing JSON trace, or as a
PyTorch memory snapshot pickle that memory_viz (pytorch.org/memory_viz) opens."""
import json
import os
import pickle

from . import Fail, dumps, sites

PHASE_AFTER = (("iteration found", "planning"), ("plan:", "serving the plan"),
               ("kept plan", "serving a kept plan"), ("left the plan", "recording"))
POOL_BASE = 0x7F0000000000  # memory_viz shows addresses: the pool offsets, moved here


def perfetto_events(timeline, pid):
    ev = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": "planalloc (pid %d)" % pid}},
          {"name": "thread_name", "ph": "M", "pid": pid, "tid": 1, "args": {"name": "phases"}},
          {"name": "thread_name", "ph": "M", "pid": pid, "tid": 2, "args": {"name": "swaps"}}]
    phase, since, prev = "recording", 0, None
    for r in timeline:
        ts = r["time_us"]
        ev.append({"name": "device memory", "ph": "C", "ts": ts, "pid": pid, "tid": 0,
                   "args": {"live": r["live_max"], "planalloc mapped": r["mapped_max"]}})
        ev.append({"name": "bytes moved", "ph": "C", "ts": ts, "pid": pid, "tid": 0,
                   "args": {"to host": r["bytes_out"], "back": r["bytes_in"]}})
        if prev:
            for key, what in (("bytes_out", "swap out"), ("bytes_in", "swap in")):
                if r[key] > prev[key]:
                    ev.append({"name": "%s %d bytes" % (what, r[key] - prev[key]), "ph": "X", "ts": prev["time_us"],
                               "dur": max(ts - prev["time_us"], 1), "pid": pid, "tid": 2, "args": {"bytes": r[key] - prev[key]}})
        prev = r
        mark = r["mark"]
        nxt = next((name for prefix, name in PHASE_AFTER if mark.startswith(prefix)), None)
        if nxt or mark == "exit":
            ev.append({"name": phase, "ph": "X", "ts": since, "dur": max(ts - since, 0), "pid": pid, "tid": 1, "args": {}})
            phase, since = nxt or phase, ts
        if mark and mark != "exit":
            ev.append({"name": mark, "ph": "i", "s": "p", "ts": ts, "pid": pid, "tid": 1, "args": {"event": r["event"]}})
    return ev


def memviz_frames(site, named):
    """A buffer's frames for memory_viz: the program's own, named (the sites dump), or
    only the callsite hash where that dump has none."""
    frames = sites.program_frames(named.get(site, []))
    if not frames:
        return [{"filename": "planalloc callsite", "line": 0, "name": site}]
    return [{"filename": f["file"] or f["module"], "line": f["line"], "name": f["function"]} for f in frames]


def memviz_snapshot(trace, page, named=None):
    """The recorded trace as a snapshot: one alloc / free_requested / free_completed per
    buffer at its pool offset, and one segment holding what is live at the end. named:
    the sites dump's frames by callsite."""
    if trace and "placed" not in trace[0]:
        raise Fail("the trace dump has no placed column (written by an older planalloc)")
    end = max((r["upper"] for r in trace), default=0)
    actions = []
    for r in trace:
        frames = memviz_frames(r.get("site", "unknown"), named or {})
        addr = POOL_BASE + r["placed"]
        actions.append((r["lower"], 1, {"action": "alloc", "addr": addr, "size": r["size"], "stream": 0, "time_us": r["lower"], "frames": frames}))
        if r["upper"] < end:
            for k, a in ((2, "free_requested"), (3, "free_completed")):
                actions.append((r["upper"], k - 2, {"action": a, "addr": addr, "size": r["size"], "stream": 0, "time_us": r["upper"], "frames": frames}))
    actions.sort(key=lambda a: (a[0], a[1]))
    live = sorted((r for r in trace if r["upper"] == end), key=lambda r: r["placed"])
    top = max((r["placed"] + r["size"] for r in trace), default=0)
    return {"segments": [_segment(live, -(-top // page) * page)], "device_traces": [[a[2] for a in actions]]}


def _segment(live, total):
    blocks, at = [], 0
    for r in live:
        if r["placed"] > at:
            blocks.append({"address": POOL_BASE + at, "size": r["placed"] - at, "requested_size": 0, "state": "inactive", "frames": []})
        blocks.append({"address": POOL_BASE + r["placed"], "size": r["size"], "requested_size": r["size"], "state": "active_allocated", "frames": []})
        at = r["placed"] + r["size"]
    if total > at:
        blocks.append({"address": POOL_BASE + at, "size": total - at, "requested_size": 0, "state": "inactive", "frames": []})
    used = sum(r["size"] for r in live)
    return {"device": 0, "address": POOL_BASE, "total_size": total, "allocated_size": used, "active_size": used,
            "requested_size": used, "stream": 0, "segment_type": "large", "blocks": blocks}


def _beside(ds, kind):
    return os.path.join(os.path.dirname(next(iter(ds.files.values()))), "planalloc.%s.%s" % (ds.name(), kind))


def main(ns):
    out = ns.out
    sets = dumps.find_sets([ns.dump])
    if len(sets) != 1:
        raise Fail("%s holds the dumps of %d processes: name one file of the set" % (ns.dump, len(sets)))
    ds = sets[0]
    if ns.perfetto:
        data = {"traceEvents": perfetto_events(dumps.read_csv(ds.need("timeline.csv"), "timeline"), int(ds.pid)),
                "displayTimeUnit": "ms", "otherData": {"source": "planalloc", "pid": ds.pid}}
        path = out or _beside(ds, "perfetto.json")
        with open(path, "w") as f:
            json.dump(data, f)
    else:
        stats = dumps.read_stats(ds.need("stats.json"))
        snap = memviz_snapshot(dumps.read_csv(ds.need("trace.csv"), "trace"), stats.get("page_bytes") or 1, sites.load(ds))
        path = out or _beside(ds, "memory_viz.pickle")
        with open(path, "wb") as f:
            pickle.dump(snap, f, protocol=2)
    print("planalloc: wrote %s" % path)
    return 0
