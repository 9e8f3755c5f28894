"""planalloc's command-line tools: run, report, export, plan (see scripts/planalloc)."""


class Fail(Exception):
    """A user-facing error: printed as one 'planalloc: error: ' line, exit status 2."""
