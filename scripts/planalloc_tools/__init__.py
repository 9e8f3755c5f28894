"""planalloc's command-line tools: run, report, export, plan (see scripts/planalloc)."""


class Fail(Exception):
    """A user-facing error: printed as one 'planalloc: error: ' line, exit status 2."""


def read_bytes(path):
    """A whole input file; an unreadable one is a Fail naming it."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise Fail("%s: %s" % (path, e.strerror))
