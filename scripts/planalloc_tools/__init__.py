"""planalloc's command-line tools: run, report, export, plan (see scripts/planalloc)."""
import os


class Fail(Exception):
    """A user-facing error: printed as one 'planalloc: error: ' line, exit status 2."""


def read_bytes(path):
    """A whole input file; an unreadable one is a Fail naming it."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise Fail("%s: %s" % (path, e.strerror))


def tool(bindir, name):
    """A planalloc executable beside this command; a Fail naming where it looked if none."""
    exe = os.path.join(bindir, name)
    if not os.access(exe, os.X_OK):
        raise Fail("%s is not next to this command (%s)" % (name, exe))
    return exe
