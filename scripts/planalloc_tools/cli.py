"""The planalloc command on argparse, and its one error convention: every error is one
'planalloc: error:' line and exit status 2 (1: a fault of planalloc's own); otherwise
the status is the program's (run) or 0. Never a traceback."""
import argparse
import os
import subprocess
import sys

from . import Fail

EXAMPLES = {
    "run": "examples:\n  planalloc run python train.py\n  planalloc run --budget 60% --dump out --stats -- ./train --epochs 1",
    "report": "example:\n  planalloc report out            (the dumps planalloc run --dump out left)",
    "export": "examples:\n  planalloc export --perfetto out -o trace.json\n  planalloc export --memory-viz out   (open it at pytorch.org/memory_viz)",
    "plan": "examples:\n  planalloc plan snapshot.pickle   (torch.cuda.memory._dump_snapshot)\n  planalloc plan --markdown out",
}
HELP = {
    "run": "run a program with planalloc preloaded (-- before it is optional)",
    "report": "summary and plots of a run's dumps",
    "export": "a run's dumps as a Perfetto trace or a memory_viz snapshot",
    "plan": "what planalloc needs for a planner CSV, a dump, or a PyTorch memory snapshot",
}


class Parser(argparse.ArgumentParser):
    def error(self, message):
        sub = self.prog.split(" ", 1)[1:]  # "planalloc run" -> "run: "
        raise Fail("%s%s (%s --help shows how)" % (sub[0] + ": " if sub else "", message, self.prog))


def version(bindir):
    """The version, and the git revision of the checkout it was built from (if any)."""
    try:
        from . import version as v  # written by CMake into the build and the install
        number, source = v.VERSION, v.SOURCE_DIR
    except ImportError:  # the source tree's own scripts/planalloc
        number, source = "(source tree)", os.path.join(bindir, "..")
    try:
        rev = subprocess.run(["git", "-C", source, "describe", "--always", "--dirty"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        rev = ""
    return "planalloc %s%s" % (number, " (git %s)" % rev if rev else "")


class Version(argparse.Action):
    """--version: git runs only when asked (argparse's own action wants the text when the
    parser is built, which ran git on every command)."""

    def __init__(self, option_strings, dest, bindir=None, **kw):
        super().__init__(option_strings, dest, nargs=0, help="show the version and exit", **kw)
        self.bindir = bindir

    def __call__(self, parser, namespace, values, option_string=None):
        print(version(self.bindir))
        parser.exit()


def _sub(subs, name):
    return subs.add_parser(name, help=HELP[name], description=HELP[name], epilog=EXAMPLES[name],
                           formatter_class=argparse.RawDescriptionHelpFormatter)


def parser(bindir):
    p = Parser(prog="planalloc", description="Less device memory for unmodified CUDA programs: "
               "run one under planalloc, then read what it did.", epilog=EXAMPLES["run"],
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action=Version, bindir=bindir)
    subs = p.add_subparsers(dest="name", metavar="COMMAND", parser_class=Parser)
    r = _sub(subs, "run")
    r.add_argument("--budget", metavar="SIZE", help="device memory planalloc may map: 4GiB, 0.5GiB, 512M, 60%% of the device")
    r.add_argument("--dump", metavar="DIR", help="write the dumps (trace, plan, stats, timeline) into DIR")
    r.add_argument("--events", action="store_true", help="with --dump, the event log too (events.csv)")
    r.add_argument("--verbose", action="store_true", help="the effective configuration and planning events")
    r.add_argument("--stats", action="store_true", help="the statistics table at exit")
    r.add_argument("cmd", nargs=argparse.REMAINDER, metavar="CMD ARGS...", help="the program and its arguments")
    r = _sub(subs, "report")
    r.add_argument("--out", metavar="DIR", help="write the plots into DIR (default: beside the dumps)")
    r.add_argument("dumps", nargs="+", metavar="DUMP", help="a PLANALLOC_DUMP directory, or a file of one dump set")
    r = _sub(subs, "export")
    how = r.add_mutually_exclusive_group(required=True)
    how.add_argument("--perfetto", action="store_true", help="Chrome trace-event JSON (ui.perfetto.dev)")
    how.add_argument("--memory-viz", action="store_true", help="a PyTorch memory snapshot pickle")
    r.add_argument("-o", dest="out", metavar="FILE", help="the file to write (default: beside the dumps)")
    r.add_argument("dump", metavar="DUMP")
    r = _sub(subs, "plan")
    r.add_argument("--markdown", action="store_true", help="a markdown table")
    r.add_argument("--time-limit", type=float, default=2.0, metavar="S", help="seconds the planner may search (2)")
    r.add_argument("file", metavar="FILE")
    return p


def dispatch(argv, bindir):
    ns = parser(bindir).parse_args(argv)
    from . import export, plan, report, run
    if ns.name is None:
        raise Fail("no command (run, report, export, plan); planalloc --help shows them")
    commands = {"run": lambda: run.main(ns, bindir), "report": lambda: report.main(ns),
                "export": lambda: export.main(ns), "plan": lambda: plan.main(ns, bindir)}
    return commands[ns.name]()


def main(argv, bindir):
    try:
        return dispatch(argv, bindir)
    except Fail as e:
        print("planalloc: error: %s" % e.args[0], file=sys.stderr)
        return e.args[1] if len(e.args) > 1 else 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # planalloc report | head
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as e:
        print("planalloc: error: %s%s" % (e.filename + ": " if e.filename else "", e.strerror or e), file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 -- a user never sees a traceback
        print("planalloc: error: internal: %s: %s (please report it)" % (type(e).__name__, str(e)[:200]), file=sys.stderr)
        return 1
