#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check-layout.py SOURCE_ROOT BUILD_ROOT

The rules of HACKING.md's map that a machine can check, so the layout stays
what the map says:

  * who may include whom: common/ includes only common/; daemon/ only
    common/ and daemon/; client/ only common/ and client/; lib/ only the
    header-only common/control/names.h (it links libc and pthreads alone);
  * no circle of includes between components (a component is a folder
    directly below common/, daemon/ or client/: common/bundle,
    daemon/trigger, client/decode; what sits directly in daemon/ or
    client/ is that program's entry point, which nothing includes);
  * no product source file over MAX_LINES lines;
  * nothing under tests/ is compiled into a program or library we install
    (read from meson's introspection of BUILD_ROOT).

Prints every violation and exits 1, or prints a summary and exits 0."""
import json
import os
import re
import sys

MAX_LINES = 900
PRODUCT = ("common", "daemon", "client", "lib")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# Where each top-level folder may include from (lib: one header only).
ALLOWED_TOP = {
    "common": {"common"},
    "daemon": {"common", "daemon"},
    "client": {"common", "client"},
}
LIB_ALLOWED = {"common/control/names.h"}


def component(path):
    """common/bundle/x.c -> common/bundle; daemon/ptraced.c -> daemon."""
    parts = path.split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else parts[0]


def product_sources(src):
    for top in PRODUCT:
        for dirpath, _, names in os.walk(os.path.join(src, top)):
            for n in names:
                if n.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(dirpath, n), src)


def find_cycle(graph):
    """A list of components forming a circle, or None."""
    state = {}
    stack = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: check-layout.py SOURCE_ROOT BUILD_ROOT")
    src, build = sys.argv[1], sys.argv[2]
    errors = []
    graph = {}
    files = sorted(product_sources(src))

    for f in files:
        with open(os.path.join(src, f), encoding="utf-8") as fh:
            text = fh.read()
        top = f.split("/")[0]
        n_lines = text.count("\n")
        if n_lines > MAX_LINES:
            errors.append(f"{f}: {n_lines} lines, more than {MAX_LINES}: split it by job")
        for inc in INCLUDE.findall(text):
            if "/" not in inc:
                continue  # a header next to the file (BPF, lib's public header, the kernel image)
            itop = inc.split("/")[0]
            if top == "lib":
                if inc not in LIB_ALLOWED:
                    errors.append(f"{f}: includes {inc}; lib/ may include only {', '.join(sorted(LIB_ALLOWED))}")
                continue
            if itop not in ALLOWED_TOP[top]:
                errors.append(f"{f}: includes {inc}; {top}/ may include only "
                              f"{' and '.join(sorted(ALLOWED_TOP[top]))}/")
                continue
            a, b = component(f), component(inc)
            if a != b:
                graph.setdefault(a, set()).add(b)

    cycle = find_cycle(graph)
    if cycle:
        errors.append("circle of includes between components: " + " -> ".join(cycle))

    # Installed targets must not compile anything from tests/: their own
    # sources, and those of every static library they link (the link edges
    # of build.ninja name the archives).
    with open(os.path.join(build, "meson-info", "intro-targets.json"), encoding="utf-8") as fh:
        targets = json.load(fh)
    by_file = {}
    for t in targets:
        for fn in t.get("filename", []):
            by_file[os.path.relpath(fn, build)] = t
    links = {}
    with open(os.path.join(build, "build.ninja"), encoding="utf-8") as fh:
        for line in fh:
            m = re.match(r"build (\S+): \w*LINKER (.*)", line)
            if m:
                links[m.group(1)] = [x for x in m.group(2).split() if x.endswith(".a")]
    n_installed = 0
    for t in targets:
        if not t.get("installed"):
            continue
        n_installed += 1
        out = os.path.relpath(t["filename"][0], build)
        parts = [t] + [by_file[a] for a in links.get(out, []) if a in by_file]
        for x in parts:
            for s in x.get("target_sources", []):
                for f in s.get("sources", []) + s.get("generated_sources", []):
                    rel = os.path.relpath(f, src)
                    if rel.startswith("tests/"):
                        errors.append(f"installed {t['name']} compiles {rel} (in {x['name']})")

    for e in errors:
        print("FAIL:", e, file=sys.stderr)
    if errors:
        return 1
    print(f"{len(files)} product files, {len(graph)} components with includes across, "
          f"{n_installed} installed targets: layout rules hold")
    for a in sorted(graph):
        print(f"  {a} -> {', '.join(sorted(graph[a]))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
