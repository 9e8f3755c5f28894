"""Callsites by name: the sites dump's frames, named by addr2line where binutils is at
hand (static functions, file:line with debug info, demangled), else by the dump's
nearest dynamic symbol; a Python program's line first, as the preload read it."""
import os
import re
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
    """Adds function, file ("" if unknown) and line (0 if unknown) to every frame, and
    expands a frame into the functions inlined there, innermost first: an optimised
    build inlines the program's allocation helpers into their callers, and the helper
    alone does not say who allocated."""
    offsets = {}
    for frames in sites.values():
        for f in frames:
            if not python(f):
                offsets.setdefault(f["module"], set()).add(f["offset"])
    tool, names = shutil.which("addr2line"), {}
    for module, offs in offsets.items():
        if tool and os.path.isfile(module):
            names.update(_addr2line(tool, module, sorted(offs)))
    for site, frames in sites.items():
        sites[site] = [_named(f, n) for f in frames for n in names.get((f["module"], f["offset"]), [("", "", 0)])]


def python(frame):
    """A Python program's frame (the preload reads it where the allocating thread holds
    the GIL): the module is the .py file, the offset its line, the symbol its function."""
    return frame["module"].endswith(".py")


def _named(frame, name):
    if python(frame):
        return dict(frame, function=frame["symbol"] or "?", file=frame["module"], line=frame["offset"])
    function, file, line = name
    return dict(frame, function=function or frame["symbol"] or "?", file=file, line=line)


def _addr2line(tool, module, offsets):
    """{(module, offset): [(function, file, line), ...] innermost first}: one addr2line
    per module, addresses on its standard input (a long list would not fit a command
    line), each answer after the address it echoes (-a)."""
    try:
        out = subprocess.run([tool, "-a", "-i", "-f", "-C", "-e", module], input="".join("0x%x\n" % o for o in offsets),
                             capture_output=True, text=True, timeout=120).stdout.split("\n")
    except (OSError, subprocess.SubprocessError):
        return {}
    names, chain, i = {}, None, 0
    while i < len(out):
        if re.match(r"^0x[0-9a-f]+$", out[i]):
            chain = names.setdefault((module, int(out[i], 16)), [])
            i += 1
        elif chain is not None and i + 1 < len(out):
            chain.append(("" if out[i] == "??" else out[i],) + _file_line(out[i + 1]))
            i += 2
        else:
            i += 1
    return {k: v for k, v in names.items() if v}


def _file_line(text):
    """addr2line's FILE:LINE as (file, line): "??" or an empty file is unknown (""), so
    is a line "?" (0); a discriminator is left out."""
    file, _, line = text.split(" (discriminator")[0].rpartition(":")
    if file.startswith("??"):
        return "", 0
    return file, int(line) if line.isdigit() else 0


def program_frames(frames):
    """The frames below planalloc and CUDA: where the program asked for the memory; for a
    Python program, its line (the interpreter's and the FFI's C frames below it say
    nothing)."""
    py = [f for f in frames if python(f)]
    return py or [f for f in frames if not os.path.basename(f["module"]).startswith(NOT_THE_PROGRAM)]


def describe(frame):
    where = os.path.basename(frame["module"])
    if frame["file"]:
        where = "%s:%d" % (frame["file"], frame["line"]) if frame["line"] else frame["file"]
    return "%s (%s)" % (frame["function"], where)
