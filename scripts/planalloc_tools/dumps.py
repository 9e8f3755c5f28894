"""Reading planalloc's dumps: DIR/planalloc.<pid>[.d<device>][.r<rank>].<seq>.<kind>, one
set per process (the device and rank parts since issue #26; older names read too).

Every reader checks the version line and the columns and names the file and line of
anything malformed, so a truncated or foreign file is one clear error, never a traceback.
"""
import csv
import json
import os
import re

from . import Fail, read_bytes

KINDS = ("trace.csv", "sites.csv", "plan.csv", "access.csv", "stats.json", "timeline.csv", "events.csv")
NAME = re.compile(r"^planalloc\.(\d+)((?:\.d\d+)?(?:\.r\d+)?)\.(\d+)\.(" + "|".join(re.escape(k) for k in KINDS) + r")$")
INT_COLUMNS = {
    "trace": ("lower", "upper", "size", "placed"),
    "plan": ("lower", "upper", "size", "offset"),
    "timeline": ("event", "time_us", "live", "live_max", "mapped", "mapped_max", "bytes_out", "bytes_in"),
}
REQUIRED = {
    "trace": ("id", "lower", "upper", "size"),
    "plan": ("id", "lower", "upper", "size", "offset"),
    "timeline": INT_COLUMNS["timeline"] + ("mark",),
}


class DumpSet:
    """The dumps one process wrote: kind -> path."""

    def __init__(self, pid, tag=""):
        self.pid, self.tag, self.files = pid, tag, {}
        self.device = int(re.search(r"\.d(\d+)", tag).group(1)) if ".d" in tag else None
        self.rank = int(re.search(r"\.r(\d+)", tag).group(1)) if ".r" in tag else None

    def name(self):
        """pid and tag, as in the dump names: for files written beside them."""
        return self.pid + self.tag

    def label(self):
        parts = ["rank %d" % self.rank] if self.rank is not None else []
        parts += ["device %d" % self.device] if self.device is not None else []
        return "pid %s%s" % (self.pid, " (%s)" % ", ".join(parts) if parts else "")

    def need(self, kind):
        if kind not in self.files:
            raise Fail("the dumps of pid %s have no %s file" % (self.pid, kind))
        return self.files[kind]


def find_sets(args):
    """DUMP arguments (directories, or files of a set) -> [DumpSet], by pid."""
    sets = {}
    for arg in args:
        if os.path.isdir(arg):
            names = [os.path.join(arg, n) for n in sorted(os.listdir(arg))]
            names = [n for n in names if NAME.match(os.path.basename(n))]
            if not names:
                raise Fail("%s: no planalloc dumps in this directory" % arg)
        elif os.path.exists(arg):
            m = NAME.match(os.path.basename(arg))
            if not m:
                raise Fail("%s: not a planalloc dump (expected planalloc.PID[.dDEVICE][.rRANK].SEQ.KIND)" % arg)
            d = os.path.dirname(arg) or "."
            names = [os.path.join(d, n) for n in sorted(os.listdir(d))
                     if NAME.match(n) and NAME.match(n).group(1, 2) == m.group(1, 2)]
        else:
            raise Fail("%s: no such file or directory" % arg)
        for n in names:
            m = NAME.match(os.path.basename(n))
            sets.setdefault(m.group(1, 2), DumpSet(m.group(1), m.group(2))).files[m.group(4)] = n
    return [sets[k] for k in sorted(sets, key=lambda k: (int(k[0]), k[1]))]


def _lines(path):
    try:
        text = read_bytes(path).decode("utf-8")
    except UnicodeDecodeError:
        raise Fail("%s: not a text file" % path)
    if text and not text.endswith("\n"):
        raise Fail("%s: truncated (the last line has no end)" % path)
    return text.split("\n")[:-1]


def read_csv(path, kind):
    """A versioned CSV dump -> list of dicts (integer columns as int)."""
    lines = _lines(path)
    if not lines or not re.match(r"^# planalloc %s \d+$" % kind, lines[0]):
        raise Fail("%s:1: not a planalloc %s dump (expected '# planalloc %s VERSION')" % (path, kind, kind))
    if len(lines) < 2:
        raise Fail("%s: truncated (no header line)" % path)
    cols = lines[1].split(",")
    for c in REQUIRED[kind]:
        if c not in cols:
            raise Fail("%s:2: no column '%s'" % (path, c))
    rows = []
    for no, line in enumerate(lines[2:], 3):
        if line.startswith("#"):
            continue
        fields = line.split(",")
        if len(fields) != len(cols):
            raise Fail("%s:%d: %d fields, the header has %d (truncated?)" % (path, no, len(fields), len(cols)))
        row = dict(zip(cols, fields))
        for c in INT_COLUMNS[kind]:
            if c in row:
                row[c] = _int(path, no, c, row[c])
        rows.append(row)
    return rows


def _int(path, no, col, text):
    if not text.isdigit():
        raise Fail("%s:%d: %s '%s' is not a number" % (path, no, col, text[:32]))
    return int(text)


SITE_COLUMNS = ("site", "depth", "module", "offset", "symbol", "symbol_offset")


def read_sites(path):
    """The sites dump -> {site hash: [frame, ...]} by depth; a frame is a dict with
    module, offset (int: what addr2line takes), symbol (the nearest dynamic one, or "")."""
    lines = _lines(path)
    if not lines or not re.match(r"^# planalloc sites \d+$", lines[0]):
        raise Fail("%s:1: not a planalloc sites dump (expected '# planalloc sites VERSION')" % path)
    rows = list(csv.reader(lines[1:]))
    if not rows or tuple(rows[0]) != SITE_COLUMNS:
        raise Fail("%s:2: expected the columns %s" % (path, ",".join(SITE_COLUMNS)))
    sites = {}
    for no, row in enumerate(rows[1:], 3):
        if row and row[0].startswith("#"):
            continue
        if len(row) != len(SITE_COLUMNS) or not row[1].isdigit() or not re.match(r"^0x[0-9a-f]+$", row[3]):
            raise Fail("%s:%d: not a frame (site,depth,module,offset,symbol,symbol_offset)" % (path, no))
        sites.setdefault(row[0], []).append({"module": row[2], "offset": int(row[3], 16), "symbol": row[4]})
    return sites


def read_stats(path):
    lines = _lines(path)
    try:
        stats = json.loads(lines[0]) if lines else None
    except ValueError:
        stats = None
    if not isinstance(stats, dict) or stats.get("version") != 1:
        raise Fail("%s: not a planalloc stats dump (expected one JSON object with \"version\": 1)" % path)
    for k, v in stats.items():
        if not isinstance(v, int) or v < 0:
            raise Fail("%s: %s is not a count" % (path, k))
    return stats


EVENT_COLUMNS = ("seq", "kind", "thread", "stream", "ptr", "size", "site", "did", "pos", "expected", "want")
EVENT_LATER = ("time_us",)


def read_events(path):
    """The event log (PLANALLOC_EVENTS) -> an iterator of dicts: seq and size as int, the
    rest as text (pos and expected "" where none)."""
    lines = _lines(path)
    if not lines or not re.match(r"^# planalloc events \d+$", lines[0]):
        raise Fail("%s:1: not a planalloc events dump (expected '# planalloc events VERSION')" % path)
    if len(lines) < 2 or tuple(lines[1].split(",")[:len(EVENT_COLUMNS)]) != EVENT_COLUMNS:
        raise Fail("%s:2: expected the columns %s" % (path, ",".join(EVENT_COLUMNS)))
    for no, line in enumerate(lines[2:], 3):
        fields = line.split(",")
        if len(fields) < len(EVENT_COLUMNS):
            raise Fail("%s:%d: %d fields, the header has %d (truncated?)" % (path, no, len(fields), len(EVENT_COLUMNS)))
        row = dict(zip(EVENT_COLUMNS + EVENT_LATER, fields))  # time_us from version 2 on
        row["seq"], row["size"] = _int(path, no, "seq", row["seq"]), _int(path, no, "size", row["size"])
        yield row
