#!/usr/bin/env python3
"""The budget's module graph (issue #25), read from the object files the build made: a
file depends on another when its object needs a symbol the other defines (nm), which no
comment or macro can hide. Fails when a rule breaks; --dot prints the graph for Graphviz.

    modgraph.py BUILD_DIR [--dot]
"""
import glob
import os
import subprocess
import sys

# The mechanism under the budget: pages, copies, who touched what, device ordering.
MECHANISM = {"pool", "swap", "users", "limit", "fence", "streams", "waits", "access"}
# The policy's front in preload/: it alone asks dtr/ and has the mechanism carry it out.
FRONT = {"budget", "schedule", "pageplan", "hues"}
OUT_OF_CIRCLES = MECHANISM | FRONT


def objects(build):
    """file stem -> (module, object path) for the preload, dtr/ and planner/."""
    found = {}
    for module, pattern in (("preload", "preload/CMakeFiles/planalloc.dir/*.c.o"),
                            ("preload", "preload/CMakeFiles/papreload.dir/*.c.o"),
                            ("dtr", "dtr/CMakeFiles/padtr.dir/*.c.o"),
                            ("planner", "planner/CMakeFiles/paplan.dir/*.c.o")):
        for path in glob.glob(os.path.join(build, pattern)):
            found[os.path.basename(path)[:-len(".c.o")]] = (module, path)
    return found


def nm(path, flag):
    out = subprocess.run(["nm", flag, path], check=True, capture_output=True, text=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def graph(objs):
    defined = {}
    for name, (_, path) in objs.items():
        for sym in nm(path, "--defined-only"):
            defined.setdefault(sym, name)
    edges = {name: set() for name in objs}
    for name, (_, path) in objs.items():
        for sym in nm(path, "-u"):
            if sym in defined and defined[sym] != name:
                edges[name].add(defined[sym])
    return edges


def circles(edges):
    """Tarjan's strongly connected components of more than one file."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v), on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def check(objs, edges):
    module = {name: m for name, (m, _) in objs.items()}
    preload = lambda n: module[n] == "preload"
    broken = []
    for a in sorted(edges):
        for b in sorted(edges[a]):
            if module[a] == "dtr" and preload(b):
                broken.append(f"dtr/{a}.c calls preload/{b}.c: the policy must see only its own inputs")
            if a in MECHANISM and preload(a) and b in FRONT:
                broken.append(f"preload/{a}.c calls {module[b]}/{b}.c: the mechanism must not call the policy")
            if preload(a) and module[b] == "dtr" and a not in FRONT:
                broken.append(f"preload/{a}.c calls dtr/{b}.c: only {sorted(FRONT)} ask dtr/")
    for comp in circles(edges):
        inside = sorted(set(comp) & OUT_OF_CIRCLES)
        if inside:
            broken.append(f"{inside} in a circle of calls: {comp}")
    missing = sorted(n for n in OUT_OF_CIRCLES | {"policy", "served"} if n not in objs)
    if missing:
        broken.append(f"no object for {missing}: the rules check nothing there")
    return broken


def dot(objs, edges):
    print("digraph budget {")
    keep = OUT_OF_CIRCLES | {n for n, (m, _) in objs.items() if m == "dtr"}
    for a in sorted(keep):
        for b in sorted(edges.get(a, ())):
            if b in keep:
                print(f'  "{objs[a][0]}/{a}" -> "{objs[b][0]}/{b}";')
    print("}")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    objs = objects(sys.argv[1])
    edges = graph(objs)
    if "--dot" in sys.argv:
        return dot(objs, edges)
    broken = check(objs, edges)
    for line in broken:
        print("modgraph: " + line)
    for comp in circles(edges):
        if not set(comp) & OUT_OF_CIRCLES:
            print("modgraph: circle (allowed, outside the budget): " + " ".join(comp))
    front = ", ".join(f"{a} -> {' '.join(sorted(edges[a] & (OUT_OF_CIRCLES | {'policy', 'served'})))}"
                      for a in sorted(FRONT))
    print(f"modgraph: {len(objs)} objects; {front}")
    sys.exit(1 if broken else 0)


if __name__ == "__main__":
    main()
