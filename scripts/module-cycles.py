#!/usr/bin/env python3
"""Module dependency cycles of one crate, from its `crate::` and `super::` paths.

Usage: scripts/module-cycles.py [--parents] crates/squall-emu/src

Each source file is a module (`a/mod.rs` is `a`, `a/b.rs` is `a::b`). A
module depends on another when its code (comments left out, `#[cfg(test)]`
modules included, since they compile into the test build) names a path into
it: `use crate::x::y`, `crate::x::f()`, or `super::x` from a file below the
crate root. A reference to a parent of the module itself (`super::` inside a
submodule to reach its sibling) is resolved to the sibling. Prints each
strongly connected component of more than one module (a cycle) and the count.

With --parents, a module that names its own parent or another ancestor
(`super::X` or `crate::a::X` from `a::b`) depends on it too, and a module
depends on a child it names by a relative path (`child::X` in a/mod.rs): a
child that reaches back into the module that uses it forms a cycle with it
(for example stage::link using `super::Recorder` while stage uses
`link::Link`). Without it these edges are left out, as before.
"""

import re
import sys
from pathlib import Path


def module_of(root: Path, file: Path) -> tuple:
    parts = list(file.relative_to(root).with_suffix("").parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(re.sub(r"//.*$", "", line) for line in text.splitlines())


def paths_in(code: str):
    """Every `crate::a::b...` or `super::a...` path, braces expanded one level
    (`crate::{a, b::C}` too)."""
    for m in re.finditer(r"\b(crate|super)((?:::\w+)*)(::\{([^}]*)\})?", code):
        if not m.group(2) and m.group(4) is None:
            continue
        base = [m.group(1)] + [p for p in m.group(2).split("::") if p]
        if m.group(4) is not None:
            for item in m.group(4).split(","):
                item = item.strip().split(" as ")[0].strip()
                if item and item != "self":
                    yield base + [p for p in item.split("::") if p]
                else:
                    yield base
        else:
            yield base


def main() -> int:
    args = sys.argv[1:]
    parents = "--parents" in args
    args = [a for a in args if a != "--parents"]
    if len(args) != 1 or not Path(args[0]).is_dir():
        print("usage: scripts/module-cycles.py [--parents] CRATE_SRC_DIR", file=sys.stderr)
        print(f"expected one source directory, got {args or 'nothing'}", file=sys.stderr)
        return 2
    root = Path(args[0])
    files = sorted(root.rglob("*.rs"))
    modules = {module_of(root, f): f for f in files}
    graph = {m: set() for m in modules}
    for mod, file in modules.items():
        code = strip_comments(file.read_text())
        is_dir_mod = file.name in ("mod.rs", "lib.rs", "main.rs")
        for path in paths_in(code):
            if path[0] == "crate":
                rest = path[1:]
                base = ()
            else:
                # `super::x` names a sibling `x` of this module; a `super::` path that names no
                # module (a test module's `use super::*` or `super::f`) resolves to an ancestor
                # and is skipped below.
                base = mod[:-1]
                rest = path[1:]
            target = None
            for i in range(len(rest), -1, -1):
                cand = base + tuple(rest[:i])
                if cand in modules:
                    target = cand
                    break
            if target is None or target == () or target == mod:
                continue
            # A module naming its own ancestor (re-exports) is not a dependency edge we count,
            # unless --parents.
            if mod[: len(target)] == target and not parents:
                continue
            graph[mod].add(target)
        if parents and is_dir_mod:
            # `child::X` from a module with children: its own submodules by relative path.
            for m in re.finditer(r"(?<![\w:])(\w+)::", code):
                child = mod + (m.group(1),)
                if child in modules and child != mod:
                    graph[mod].add(child)

    # Tarjan's strongly connected components.
    index, low, on, stack, sccs = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
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
            sccs.append(comp)

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    cycles = [sorted("::".join(m) for m in c) for c in sccs if len(c) > 1]
    for c in cycles:
        print("cycle:", " <-> ".join(c))
        # The edges inside the component, so the cause is visible.
        members = {tuple(n.split("::")) for n in c}
        for a in sorted(members):
            for b in sorted(graph[a] & members):
                print(f"    {'::'.join(a)} -> {'::'.join(b)}")
    print(f"modules: {len(modules)}, module cycles (strongly connected components of more than one module): {len(cycles)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
