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
    live = sorted((r["placed"], r["size"]) for r in trace if r["upper"] == end)
    top = max((r["placed"] + r["size"] for r in trace), default=0)
    return {"segments": [_segment(live, -(-top // page) * page)], "device_traces": [[a[2] for a in actions]]}


def _segment(live, total, base=POOL_BASE):
    """live: (offset from base, size) sorted; one segment of total bytes from base."""
    blocks, at = [], 0
    for off, size in live:
        if off > at:
            blocks.append({"address": base + at, "size": off - at, "requested_size": 0, "state": "inactive", "frames": []})
        blocks.append({"address": base + off, "size": size, "requested_size": size, "state": "active_allocated", "frames": []})
        at = off + size
    if total > at:
        blocks.append({"address": base + at, "size": total - at, "requested_size": 0, "state": "inactive", "frames": []})
    used = sum(size for _, size in live)
    return {"device": 0, "address": base, "total_size": total, "allocated_size": used, "active_size": used,
            "requested_size": used, "stream": 0, "segment_type": "large", "blocks": blocks}


def memviz_events(events, page, named=None):
    """The whole run from the event log (PLANALLOC_EVENTS), at the addresses the program
    got and the log's times: every allocation, and every free as requested and completed;
    one segment over the pages what is live at the end spans."""
    actions, live, by_site = [], {}, {}  # by_site: a site's frames, made once (a run has few sites)
    for e in events:
        if e["kind"] not in "af" or not e["ptr"] or e["did"] == "pass" and not e["size"]:
            continue
        addr, t = int(e["ptr"], 16), int(e.get("time_us") or 0)
        site = e["site"] or "unknown"
        frames = by_site.get(site) or by_site.setdefault(site, memviz_frames(site, named or {}))
        if e["kind"] == "a":
            live[addr] = e["size"]
            actions.append({"action": "alloc", "addr": addr, "size": e["size"], "stream": 0, "time_us": t, "frames": frames})
        elif live.pop(addr, None) is not None:
            for a in ("free_requested", "free_completed"):
                actions.append({"action": a, "addr": addr, "size": e["size"], "stream": 0, "time_us": t, "frames": frames})
    ends = sorted(live.items())
    base = ends[0][0] // page * page if ends else POOL_BASE
    total = -(-(ends[-1][0] + ends[-1][1] - base) // page) * page if ends else 0
    return {"segments": [_segment([(a - base, n) for a, n in ends], total, base)] if ends else [], "device_traces": [actions]}


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
        page = stats.get("page_bytes") or 1
        if "events.csv" in ds.files:  # the whole run, at its real times
            snap = memviz_events(dumps.read_events(ds.files["events.csv"]), page, sites.load(ds))
        else:
            snap = memviz_snapshot(dumps.read_csv(ds.need("trace.csv"), "trace"), page, sites.load(ds))
            print("planalloc: the last recording only, its event order as time: run with PLANALLOC_EVENTS=1 (planalloc run --events) for the whole run")
        path = out or _beside(ds, "memory_viz.pickle")
        with open(path, "wb") as f:
            pickle.dump(snap, f, protocol=2)
    print("planalloc: wrote %s" % path)
    return 0
