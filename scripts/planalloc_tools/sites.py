"""Callsites by name: the sites dump's frames, named by addr2line where binutils is at
hand (static functions, file:line with debug info, demangled), else by the dump's
nearest dynamic symbol."""
import os
import shutil
import subprocess

from . import dumps

# Frames inside planalloc and CUDA's own libraries: the same for every site
NOT_THE_PROGRAM = ("libplanalloc", "libcuda.so", "libcudart.so")


def load(ds, wanted=None):
    """The process's sites ({} when its dumps have none: an older planalloc), those in
    wanted (all if None) symbolized: addr2line's work is for what is shown."""
    if "sites.csv" not in ds.files:
        return {}
    sites = dumps.read_sites(ds.files["sites.csv"])
    if wanted is not None:
        sites = {s: frames for s, frames in sites.items() if s in wanted}
    symbolize(sites)
    return sites


def symbolize(sites):
    """Adds function, file ("" if unknown) and line (0 if unknown) to every frame."""
    offsets = {}
    for frames in sites.values():
        for f in frames:
            offsets.setdefault(f["module"], set()).add(f["offset"])
    tool, names = shutil.which("addr2line"), {}
    for module, offs in offsets.items():
        if tool and os.path.isfile(module):
            names.update(_addr2line(tool, module, sorted(offs)))
    for frames in sites.values():
        for f in frames:
            function, file, line = names.get((f["module"], f["offset"]), ("", "", 0))
            f["function"], f["file"], f["line"] = function or f["symbol"] or "?", file, line


def _addr2line(tool, module, offsets):
    """{(module, offset): (function, file, line)}: one addr2line per module, addresses on
    its standard input (a long list would not fit a command line)."""
    try:
        out = subprocess.run([tool, "-f", "-C", "-e", module], input="".join("0x%x\n" % o for o in offsets),
                             capture_output=True, text=True, timeout=120).stdout.split("\n")
    except (OSError, subprocess.SubprocessError):
        return {}
    names = {}
    for i, off in enumerate(offsets[: len(out) // 2]):
        function, where = out[2 * i], out[2 * i + 1]
        names[(module, off)] = ("" if function == "??" else function,) + _file_line(where)
    return names


def _file_line(text):
    """addr2line's FILE:LINE as (file, line): "??" or an empty file is unknown (""), so
    is a line "?" (0); a discriminator is left out."""
    file, _, line = text.split(" (discriminator")[0].rpartition(":")
    if file.startswith("??"):
        return "", 0
    return file, int(line) if line.isdigit() else 0


def program_frames(frames):
    """The frames below planalloc and CUDA: where the program asked for the memory."""
    return [f for f in frames if not os.path.basename(f["module"]).startswith(NOT_THE_PROGRAM)]


def describe(frame):
    where = os.path.basename(frame["module"])
    if frame["file"]:
        where = "%s:%d" % (frame["file"], frame["line"]) if frame["line"] else frame["file"]
    return "%s (%s)" % (frame["function"], where)
