"""The planalloc command's dispatch and its one error convention."""
import sys

from . import Fail

USAGE = """usage: planalloc COMMAND ...
  run [--budget SIZE|N%] [--dump DIR] [--verbose] [--stats] -- CMD ARGS...
                                run CMD with planalloc preloaded
  report [--out DIR] DUMP...    summary and plots (memory over time, the layout)
  export --perfetto DUMP [-o FILE]     Chrome trace-event JSON for Perfetto
  export --memory-viz DUMP [-o FILE]   a snapshot pickle for PyTorch's memory_viz
  plan [--markdown] [--time-limit S] FILE  what planalloc needs for a planner CSV, a dump, or a
                                PyTorch memory snapshot (torch.cuda.memory._dump_snapshot)
DUMP: a PLANALLOC_DUMP directory, or any file of one process's dump set."""


def main(argv, bindir):
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0 if argv else 2
    from . import export, plan, report, run
    commands = {"run": lambda a: run.main(a, bindir), "report": report.main, "export": export.main,
                "plan": lambda a: plan.main(a, bindir)}
    if argv[0] not in commands:
        print("planalloc: error: unknown command '%s' (run, report, export, plan)" % argv[0][:40], file=sys.stderr)
        return 2
    try:
        return commands[argv[0]](argv[1:])
    except Fail as e:
        print("planalloc: error: %s" % e.args[0], file=sys.stderr)
        return e.args[1] if len(e.args) > 1 else 2
    except KeyboardInterrupt:
        return 130
