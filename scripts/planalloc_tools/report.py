"""planalloc report: the text summary of a run's dumps and its two plots; over several
processes (a job's ranks), a table of them and one plot of their device memory."""
import bisect
import os

from . import Fail, baseline, dumps, sites, svg

LIVE, MAPPED, BASE, BUDGET, EVICT, MARK = (31, 119, 180), (255, 127, 14), (120, 120, 120), (214, 39, 40), (148, 103, 189), (190, 190, 190)
PALETTE = [(78, 121, 167), (242, 142, 44), (225, 87, 89), (118, 183, 178), (89, 161, 79),
           (237, 201, 73), (175, 122, 161), (255, 157, 167), (156, 117, 95), (186, 176, 171)]
WIDTH, HEIGHT = 960, 480


def human(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return "%.1f %s" % (n / div, unit)
    return "%d B" % n


def nice_ceiling(v):
    """An axis end at or above v whose quarters are round: 4 x (1, 1.5, 2, 2.5 or 5 x 10^k)
    bytes, KiB, MiB or GiB."""
    unit = max([u for u in (1 << 30, 1 << 20, 1 << 10, 1) if u <= max(v, 1)])
    step, k = v / unit / 4, 1
    while k * 10 <= step:
        k *= 10
    for m in (1, 1.5, 2, 2.5, 5, 10):
        if m * k >= step:
            return int(4 * m * k * unit)


class Axes:
    """Plot area [left, width-right) x [top, height-bottom); values [0, xmax] x [0, ymax]."""

    def __init__(self, xmax, ymax, left=90, right=20, top=60, bottom=50):
        self.xmax, self.ymax = max(xmax, 1), max(ymax, 1)
        self.x0, self.x1, self.y0, self.y1 = left, WIDTH - right - 1, top, HEIGHT - bottom - 1

    def x(self, v):
        return self.x0 + round(v * (self.x1 - self.x0) / self.xmax)

    def y(self, v):
        return self.y1 - round(v * (self.y1 - self.y0) / self.ymax)


class Run:
    """One process's dumps, read and checked."""

    def __init__(self, ds):
        self.ds = ds
        self.stats = dumps.read_stats(ds.need("stats.json"))
        self.timeline = dumps.read_csv(ds.need("timeline.csv"), "timeline")
        self.trace = dumps.read_csv(ds.files["trace.csv"], "trace") if "trace.csv" in ds.files else []
        self.plan = dumps.read_csv(ds.files["plan.csv"], "plan") if "plan.csv" in ds.files else []
        totals = site_totals(self.trace)
        self.sites = sites.load(ds, set(totals))
        self.top_sites = top_sites(totals, self.sites)
        if not self.timeline:
            raise Fail("%s: no rows (truncated?)" % ds.files["timeline.csv"])
        self.page = self.stats.get("page_bytes") or 1
        self.rises = baseline.high_water(self.trace)
        self.rise_events = [t for t, _ in self.rises]
        self.baseline_peak = self.pages(self.rises[-1][1]) if self.rises else 0
        self.record_start = self._record_start()

    def pages(self, n):
        return -(-n // self.page) * self.page

    def _record_start(self):
        """The timeline event the dumped recording starts at: 0, or after the last re-plan."""
        start = 0
        for r in self.timeline:
            if r["mark"].startswith("left the plan"):
                start = r["event"]
        return start

    def baseline_at(self, event):
        """The best-fit replay's reserved bytes (in pages) at a timeline event."""
        k = bisect.bisect_right(self.rise_events, event - self.record_start)
        return self.pages(self.rises[k - 1][1]) if event >= self.record_start and k else 0

    def bound(self):
        return self.stats.get("iteration_maxlive_bytes", 0) + self.stats.get("persistent_bytes", 0)


def memory_axes(run):
    peak = max(max(r["live_max"], r["mapped_max"]) for r in run.timeline)
    return Axes(run.timeline[-1]["event"], nice_ceiling(max(peak, run.baseline_peak, run.stats.get("budget_bytes", 0)) * 1.05))


def _axis_labels(c, ax, xlabel, ylabel):
    c.line(ax.x0, ax.y1 + 1, ax.x1, ax.y1 + 1, (0, 0, 0))
    c.line(ax.x0 - 1, ax.y0, ax.x0 - 1, ax.y1 + 1, (0, 0, 0))
    for k in range(5):
        v = ax.ymax * k // 4
        c.line(ax.x0 - 5, ax.y(v), ax.x0 - 2, ax.y(v), (0, 0, 0))
        c.text(ax.x0 - 8, ax.y(v) + 4, human(v), anchor="end")
        xv = ax.xmax * k // 4
        c.line(ax.x(xv), ax.y1 + 2, ax.x(xv), ax.y1 + 5, (0, 0, 0))
        c.text(ax.x(xv), ax.y1 + 18, str(xv), anchor="middle")
    c.text((ax.x0 + ax.x1) / 2, ax.y1 + 40, xlabel, anchor="middle")
    c.text(16, (ax.y0 + ax.y1) / 2, ylabel, anchor="middle", rotate=-90)


def _legend(c, items):
    """(colour, dash, name) items in a row under the title, each with a sample of its line."""
    x = 90
    for colour, dash, name in items:
        c.line(x, 40, x + 24, 40, colour, dash=dash, width=2)
        c.text(x + 30, 44, name)
        x += 50 + 7 * len(name)


def _steps(ax, points):
    """A step line through (event, value) points: at each point's x, the line reaches its y."""
    out, py = [], None
    for ev, v in points:
        x, y = ax.x(ev), ax.y(v)
        for p in ([(x, py)] if py is not None else []) + [(x, y)]:
            if not out or out[-1] != p:  # thousands of rows fall on a few hundred pixels
                out.append(p)
        py = y
    return out


def plot_memory(run, path):
    ax = memory_axes(run)
    c = svg.Canvas(WIDTH, HEIGHT, "device memory over the run: %s" % run.ds.label())
    budget = run.stats.get("budget_bytes", 0)
    for r in run.timeline:
        if r["mark"] and r["mark"] != "exit":
            c.line(ax.x(r["event"]), ax.y0, ax.x(r["event"]), ax.y1, MARK, dash="2 3")
    prev_out = 0
    for r in run.timeline:
        if r["bytes_out"] > prev_out:
            c.line(ax.x(r["event"]), ax.y1 - 6, ax.x(r["event"]), ax.y1, EVICT)
        prev_out = r["bytes_out"]
    if run.rises:  # known from the recording on: before it, nothing to replay
        known = [r for r in run.timeline if r["event"] >= run.record_start]
        c.polyline(_steps(ax, [(r["event"], run.baseline_at(r["event"])) for r in known]), BASE, dash="6 4")
    c.polyline(_steps(ax, [(r["event"], r["mapped_max"]) for r in run.timeline]), MAPPED)
    c.polyline(_steps(ax, [(r["event"], r["live_max"]) for r in run.timeline]), LIVE)
    if budget:  # over the series: the line that matters most when they reach it
        c.line(ax.x0, ax.y(budget), ax.x1, ax.y(budget), BUDGET, dash="8 4", width=1.5)
    _axis_labels(c, ax, "allocation and free events", "device memory (bytes)")
    items = [(LIVE, "", "live bytes"), (MAPPED, "", "planalloc mapped"), (BASE, "6 4", "online best fit (estimate)")]
    items += [(BUDGET, "8 4", "budget")] if budget else []
    items += [(EVICT, "", "evictions")] if run.stats.get("evictions") else []
    items += [(MARK, "2 3", "phase changes")]
    _legend(c, items)
    c.save(path)


def site_colour(site):
    return PALETTE[int(site, 16) % len(PALETTE)] if site else PALETTE[-1]


def layout_axes(run):
    period = max((r["upper"] for r in run.plan), default=1)
    pool = max((r["offset"] + r["size"] for r in run.plan), default=1)
    return Axes(period, pool)


def layout_rects(run):
    """(x0, y0, x1, y1, colour) per planned buffer span, in pixels; a wrapping buffer's
    gaps column splits it."""
    ax, sites = layout_axes(run), {r["id"]: r.get("site", "") for r in run.trace}
    out = []
    for r in run.plan:
        colour = site_colour(sites.get(r["id"], ""))
        for lo, hi in _spans(r):
            out.append((ax.x(lo), ax.y(r["offset"] + r["size"]), max(ax.x(hi) - 1, ax.x(lo)), ax.y(r["offset"]), colour))
    return out


def _spans(r):
    spans, lo = [], r["lower"]
    for gap in (g for g in r.get("gaps", "").split(" ") if g):
        a, b = (int(v) for v in gap.split("-"))
        if a > lo:
            spans.append((lo, a))
        lo = b
    if r["upper"] > lo:
        spans.append((lo, r["upper"]))
    return spans


def plot_layout(run, path):
    ax = layout_axes(run)
    c = svg.Canvas(WIDTH, HEIGHT, "layout of the served iteration: %s" % run.ds.label())
    for x0, y0, x1, y1, colour in layout_rects(run):
        c.rect(x0, y0, x1, y1, colour)
    _axis_labels(c, ax, "events of the served iteration", "offset in the plan's range (bytes)")
    c.text(90, 44, "each buffer a rectangle: its offset over its lifetime, one colour per callsite")
    c.save(path)


def site_totals(trace):
    """{callsite hash: [allocations, bytes]} over the recorded trace."""
    by = {}
    for r in trace:
        s = by.setdefault(r.get("site", "?"), [0, 0])
        s[0] += 1
        s[1] += r["size"]
    return by


def where(frames):
    """The words a call site is shown by, its program frames (the first three), and what
    tells those apart (frames without a name by their address)."""
    shown = sites.program_frames(frames)[:3]
    return " < ".join(sites.describe(f) for f in shown), tuple(sites.identity(f) for f in shown)


def top_sites(totals, named, n=5):
    """The n places that allocate most, by bytes: call sites shown alike are one place (a
    Python line reached through several C paths, an op through several dispatches);
    [(first hash, how many hashes, allocations, bytes, where)]."""
    groups = {}
    for site, (count, size) in totals.items():
        text, ident = where(named.get(site, []))
        g = groups.setdefault(ident or site, [site, 0, 0, 0, text])  # no frames: its hash alone
        g[1], g[2], g[3] = g[1] + 1, g[2] + count, g[3] + size
    ranked = sorted(groups.values(), key=lambda g: -g[3])[:n]
    return [tuple(g) for g in ranked]


def describe_event(e):
    """An event log row as words: what came."""
    if e["kind"] == "a":
        return "an allocation of %d bytes (thread %s, stream %s%s)" % (e["size"], e["thread"], e["stream"], ", site " + e["site"] if e["site"] else "")
    return "a free of %s, %d bytes (thread %s)" % (e["ptr"], e["size"], e["thread"])


def describe_want(want, expected):
    """What the plan had at the position the clock was at."""
    if want.startswith("a "):
        return "an allocation of %s bytes (position %s)" % (want[2:], expected)
    if want.startswith("f "):
        return "the free of the buffer made at position %s (position %s)" % (want[2:], expected)
    return "the free of a buffer older than the iteration (position %s)" % expected


def left_plan(run):
    """Where and why the run left its plan: from the event log, the first event off the
    plan while one served, and what the plan expected there; without the log, how to get it."""
    path = run.ds.files.get("events.csv")
    if not path:
        if run.stats.get("divergent_periods", 0):
            return ["  why                         run again with PLANALLOC_EVENTS=1 (and --dump): the event log says where the program left its plan"]
        return []
    first, off, served = None, 0, 0
    for e in dumps.read_events(path):
        if e["did"] == "miss":
            off += 1
            first = first or e
        served += e["did"] == "plan"
    if not first:
        return ["  event log                   %d events on the plan, none off it" % served]
    return ["  event log                   %d events on the plan, %d off it; the first off it, event %d:" % (served, off, first["seq"]),
            "    came                      %s" % describe_event(first),
            "    the plan expected         %s" % describe_want(first["want"], first["expected"])]


def summary(run, plots):
    s, b = run.stats, run.bound()
    ratio = lambda v: " (%.3fx the bound)" % (v / b) if b else ""
    lines = ["planalloc report: %s" % run.ds.label(),
             "  device memory peak          %s%s" % (human(s.get("device_peak_bytes", 0)), ratio(s.get("device_peak_bytes", 0))),
             "  ... served phase            %s%s" % (human(s.get("served_peak_bytes", 0)), ratio(s.get("served_peak_bytes", 0))),
             "  without planalloc (est.)    %s: online best fit replayed on the recorded trace, in %s pages" % (human(run.baseline_peak), human(run.page)),
             "  bound: max-live+persistent  %s (max-live %s, persistent %s)" % (human(b), human(s.get("iteration_maxlive_bytes", 0)), human(s.get("persistent_bytes", 0))),
             "  plan                        %d buffers, %d events an iteration, pool %s" % (s.get("plan_buffers", 0), s.get("period_events", 0), human(s.get("plan_pool_bytes", 0)))]
    allocs = s.get("allocations", 0)
    lines.append("  plan coverage               %d of %d allocations served from the plan (%.1f %%)" % (s.get("served", 0), allocs, 100.0 * s.get("served", 0) / allocs if allocs else 0))
    lines.append("  divergences                 %d divergent periods, %d re-plans, %d kept plans served again (%d known from their events)" % (s.get("divergent_periods", 0), s.get("replans", 0), s.get("plans_reused", 0), s.get("plans_known", 0)))
    lines += left_plan(run)
    if "driver_memory_calls" in s:  # dumps from before 2026-11-27 lack them
        periods = s.get("served_periods", 0)
        per = " (%.1f a period)" % (s.get("served_driver_memory_calls", 0) / periods) if periods else ""
        lines.append("  driver memory calls         %d over the run (create, map, set access, unmap, release), %d in the served phase%s" % (
            s["driver_memory_calls"], s.get("served_driver_memory_calls", 0), per))
    if s.get("budget_bytes"):
        lines.append("  budget                      %s: %d evictions (%d planned), %s out, %s back" % (human(s["budget_bytes"]), s.get("evictions", 0), s.get("planned_evictions", 0), human(s.get("bytes_out", 0)), human(s.get("bytes_in", 0))))
        moved = s.get("pages_out", 0) + s.get("pages_in", 0)
        if "mapping_calls" in s and moved:  # dumps from before 2026-11-27 lack them
            served = s.get("served_pages_moved", 0)
            per = "; served phase %d for %d: %.2f" % (s.get("served_mapping_calls", 0), served, s.get("served_mapping_calls", 0) / served) if served else ""
            first = s.get("first_mapping_calls", 0)  # each page's first mapping: no page moved
            lines.append("  mapping calls               %d (map, set access, unmap), %d of them pages mapped the first time; for %d pages moved out and back: %.2f a page%s" % (
                s["mapping_calls"], first, moved, (s["mapping_calls"] - first) / moved, per))
    else:
        lines.append("  budget                      none")
    for r in run.timeline:
        if r["mark"] and r["mark"] != "exit":
            lines.append("  at event %-8d            %s" % (r["event"], r["mark"]))
    lines.append("  top callsites by bytes (recorded trace):")
    total = sum(r["size"] for r in run.trace) or 1
    for site, k, n, size, at in run.top_sites:
        name = "(not taken)     " if site.strip("0") == "" else site  # made while the plan was being made
        more = " (and %d more call sites shown alike)" % (k - 1) if k > 1 else ""
        lines.append("    %s  %6d allocations  %10s  %5.1f %%%s" % (name, n, human(size), 100.0 * size / total, more))
        if at:
            lines.append("      at %s" % at)
    lines += ["  plot: %s" % p for p in plots]
    return "\n".join(lines)


def main(ns):
    out, args = ns.out, ns.dumps
    runs = []
    for ds in dumps.find_sets(args):
        run = Run(ds)
        runs.append(run)
        where = out or os.path.dirname(ds.need("stats.json"))
        os.makedirs(where, exist_ok=True)
        mem = os.path.join(where, "planalloc.%s.memory.svg" % ds.name())
        plot_memory(run, mem)
        plots = [mem]
        if run.plan:
            lay = os.path.join(where, "planalloc.%s.layout.svg" % ds.name())
            plot_layout(run, lay)
            plots.append(lay)
        print(summary(run, plots))
    if len(runs) > 1:
        print(ranks_table(runs))
        path = os.path.join(out or os.path.dirname(runs[0].ds.need("stats.json")), "planalloc.ranks.memory.svg")
        plot_ranks(runs, path)
        print("  plot: %s" % path)
    return 0


def rank_name(run):
    ds = run.ds
    name = ("rank %s" % ds.rank) if ds.rank is not None else ("pid %s" % ds.pid)
    return name + ("" if ds.device is None else " d%s" % ds.device)


def by_rank(runs):
    """Ranks in order, then processes without one, by pid; a process's devices in order."""
    return sorted(runs, key=lambda r: (r.ds.rank if r.ds.rank is not None else 1 << 30, int(r.ds.pid),
                                       r.ds.device if r.ds.device is not None else -1))


def plot_ranks(runs, path):
    """Every process's device memory (planalloc mapped) on one pair of axes, each in its
    colour: a rank that needs more than the others, or peaks elsewhere, shows at once."""
    ordered = by_rank(runs)
    peaks = [max(r["mapped_max"] for r in run.timeline) for run in ordered]  # in the legend: equal ranks draw over each other
    ax = Axes(max(run.timeline[-1]["event"] for run in ordered), nice_ceiling(max(peaks) * 1.05))
    c = svg.Canvas(WIDTH, HEIGHT, "device memory of each process (planalloc mapped)")
    dashes = ("", "6 3", "2 2", "8 3 2 3")  # equal ranks draw over each other: told apart by dash too
    for k, run in enumerate(ordered):
        c.polyline(_steps(ax, [(r["event"], r["mapped_max"]) for r in run.timeline]), PALETTE[k % len(PALETTE)], dash=dashes[k % len(dashes)])
    _axis_labels(c, ax, "allocation and free events", "device memory (bytes)")
    _legend(c, [(PALETTE[k % len(PALETTE)], dashes[k % len(dashes)], "%s %s" % (rank_name(run), human(peaks[k]))) for k, run in enumerate(ordered)][:6])
    c.save(path)


def ranks_table(runs):
    """The job in one table (several processes: the ranks of torchrun, or any set of runs):
    each one's peak, its saving against best fit without a plan, and its host waits."""
    pids = len(set(run.ds.pid for run in runs))
    head = "planalloc report: %d process%s" % (pids, "" if pids == 1 else "es")
    if pids != len(runs):  # a process with several devices has a pool, and dumps, for each
        head += ", %d devices' pools" % len(runs)
    lines = [head,
             "  %-6s %-8s %-6s %12s %12s %12s %8s %10s" % ("rank", "pid", "device", "peak", "without", "bound", "saving", "host waits")]
    for run in by_rank(runs):
        s, ds = run.stats, run.ds
        peak, base = s.get("device_peak_bytes", 0), run.baseline_peak
        saving = "%.1f %%" % (100.0 * (base - peak) / base) if base else "-"
        lines.append("  %-6s %-8s %-6s %12s %12s %12s %8s %10d" % (
            "-" if ds.rank is None else ds.rank, ds.pid, "-" if ds.device is None else ds.device,
            human(peak), human(base), human(run.bound()), saving, s.get("host_waits", 0)))
    return "\n".join(lines)
