"""PyTorch memory snapshots (torch.cuda.memory._dump_snapshot) as planner traces.

The pickle is read with an unpickler that builds plain data only: a snapshot holds
dicts, lists, strings and numbers, and anything naming a class is a foreign pickle,
refused before it can run code. The device trace is a ring buffer that may start
mid-run: a buffer freed in it without its allocation was live from the trace's start,
and one the segments show allocated at the end without an allocation in the trace was
live throughout."""
import io
import pickle

from . import Fail, read_bytes

GRAIN = 256  # cudaMalloc rounds every size to it, and so does planalloc


class _PlainData(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("it names %s.%s" % (module, name))

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("it has persistent ids")


def load(path):
    data = read_bytes(path)
    try:
        snap = _PlainData(io.BytesIO(data)).load()
    except EOFError:
        raise Fail("%s: truncated pickle" % path)
    except Exception as e:  # the unpickler raises many kinds on bad input
        raise Fail("%s: not a PyTorch memory snapshot (%s)" % (path, str(e).split("\n")[0][:80]))
    if not isinstance(snap, dict) or not isinstance(snap.get("segments"), list) or not isinstance(snap.get("device_traces"), list):
        raise Fail("%s: not a PyTorch memory snapshot (no segments and device_traces)" % path)
    return snap


def _check_event(path, e):
    if not isinstance(e, dict) or not isinstance(e.get("action"), str) or not isinstance(e.get("addr", 0), int) or not isinstance(e.get("size", 0), int):
        raise Fail("%s: a device trace entry is not an {action, addr, size} record" % path)


class Device:
    """One device's trace as buffers [lower, upper) over trace positions, plus what its
    caching allocator reserved."""

    def __init__(self, path, snap, dev):
        self.dev, self.buffers, self.before, self.at_end = dev, [], 0, 0
        events = snap["device_traces"][dev]
        for e in events:
            _check_event(path, e)
        segs = [s for s in snap["segments"] if isinstance(s, dict) and s.get("device") == dev]
        self.events = len(events)
        self.reserved_end = sum(s.get("total_size", 0) for s in segs)
        self.reserved_peak, self.segment_events = self._reserved(events)
        self._buffers(events, segs)

    def _reserved(self, events):
        now = peak = self.reserved_end
        seen = 0
        for e in reversed(events):  # reserved before e, from the snapshot backwards
            if e["action"] in ("segment_alloc", "segment_map"):
                now -= e["size"]
                seen += 1
            elif e["action"] in ("segment_free", "segment_unmap"):
                now += e["size"]
                seen += 1
            peak = max(peak, now)
        return peak, seen

    def _add(self, lower, upper, size):
        self.buffers.append((lower, upper, -(-max(size, 1) // GRAIN) * GRAIN))

    def _free(self, addr, i, size, open_at):
        if addr in open_at:
            lo, size = open_at.pop(addr)
        else:
            lo = 0
            self.before += 1
        self._add(lo, i, size)

    def _buffers(self, events, segs):
        open_at, pending, last, end = {}, {}, {}, len(events)
        for i, e in enumerate(events):
            a, addr = e["action"], e.get("addr")
            if a == "alloc":
                open_at[addr] = (i, e["size"])
                pending.pop(addr, None)
            elif a == "free_completed" and addr in pending:  # reusable from here on
                lo, _, size = self.buffers[pending[addr]]
                self.buffers[pending.pop(addr)] = (lo, i, size)
            elif a in ("free_requested", "free_completed"):
                self._free(addr, i, e["size"], open_at)
                if a == "free_requested":
                    pending[addr] = len(self.buffers) - 1
            else:
                continue
            last[addr] = a
        for lo, size in open_at.values():
            self._add(lo, end, size)
            self.at_end += 1
        for s in segs:
            for b in s.get("blocks", []):
                if isinstance(b, dict) and b.get("state") == "active_allocated" and last.get(b.get("address")) != "alloc":
                    self.before += 1
                    self.at_end += 1
                    self._add(0, max(end, 1), b.get("requested_size") or b.get("size", 0))

    def csv(self):
        lines = ["id,lower,upper,size"]
        lines += ["%d,%d,%d,%d" % (k, lo, max(hi, lo + 1), size) for k, (lo, hi, size) in enumerate(self.buffers)]
        return "\n".join(lines) + "\n"


def devices(path):
    snap = load(path)
    out = []
    for dev, trace in enumerate(snap["device_traces"]):
        if not isinstance(trace, list):
            raise Fail("%s: device_traces[%d] is not a list" % (path, dev))
        if trace:
            out.append(Device(path, snap, dev))
    if not out:
        raise Fail("%s: the snapshot has no device trace (record it with torch.cuda.memory._record_memory_history)" % path)
    return out
