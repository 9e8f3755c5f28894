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
# A framework's allocation path, every tensor's alike (PyTorch: c10's allocator, at::detail's
# empty_strided_generic, the dispatcher's wrappers): the op that allocated is past it
FRAMEWORK_MODULES = ("libc10",)
FRAMEWORK_FUNCTIONS = ("c10::", "at::detail::empty", "at::native::empty", "at::empty", "at::_ops::",
                       "at::(anonymous namespace)::", "at::compositeexplicitautograd::", "at::TensorBase::",
                       "at::native::resize", "at::cuda::")


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
    demangled = _demangle({f["symbol"] for frames in sites.values() for f in frames if f["symbol"].startswith("_Z")})
    for site, frames in sites.items():
        sites[site] = [_named(dict(f, symbol=demangled.get(f["symbol"], f["symbol"])), n)
                       for f in frames for n in names.get((f["module"], f["offset"]), [("", "", 0)])]


def _demangle(symbols):
    """{mangled: demangled} by c++filt, where binutils is at hand: the dump's dynamic
    symbols are as the linker names them, where addr2line cannot read the module."""
    tool, symbols = shutil.which("c++filt"), sorted(symbols)
    if not tool or not symbols:
        return {}
    try:
        out = subprocess.run([tool], input="\n".join(symbols) + "\n", capture_output=True, text=True, timeout=60).stdout.split("\n")
    except (OSError, subprocess.SubprocessError):
        return {}
    return dict(zip(symbols, out)) if len(out) >= len(symbols) else {}


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
    own = [f for f in frames if not os.path.basename(f["module"]).startswith(NOT_THE_PROGRAM)]
    k = 0  # past the framework's path, and the unnamed frames inside it (after one of its own)
    while k < len(own) and (framework(own[k]) or (k and own[k]["function"] == "?")):
        k += 1
    if py or k == len(own):  # all of it: the path's outermost, if it is one
        return py or (own[-1:] if any(framework(f) for f in own) else own)
    return own[k:]


def framework(frame):
    """A frame of a framework's allocation path (PyTorch's), which every tensor shares."""
    return os.path.basename(frame["module"]).startswith(FRAMEWORK_MODULES) or frame["function"].startswith(FRAMEWORK_FUNCTIONS)


def identity(frame):
    """What tells one frame from another: its name where it has one, its address where not."""
    if frame["function"] == "?":
        return (frame["module"], frame["offset"])
    return (frame["function"], frame["file"], frame["line"])


def describe(frame):
    where = os.path.basename(frame["module"])
    if frame["file"]:
        where = "%s:%d" % (frame["file"], frame["line"]) if frame["line"] else frame["file"]
    return "%s (%s)" % (frame["function"], where)
