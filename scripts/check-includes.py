#!/usr/bin/env python3
"""The include order of basal's source tree (src/README.md), checked.

    scripts/check-includes.py [ROOT]

Reads every #include "..." line under ROOT (default: the repository) and refuses:

  upward      a file in src/A includes a header of src/B that A may not use (the
              order below: a part includes only itself and the parts beneath it);
  cycle       two or more modules of one folder include each other's headers, directly
              or around a loop (a module is foo.c with foo.h);
  private     a header named *_internal.h included from outside its own folder, or a
              header of STORE_ONLY (SQLite's types) included from outside src/store/;
  unknown     an include of a src/ folder that does not exist;
  sql         SQL spoken outside src/store/: a source of src/ elsewhere that names
              SQLite or the store's statement helpers (sqlite3, sql_), or a public
              header of src/store/ that names SQLite (only store/ speaks SQL, and no
              SQLite type crosses its interface: docs/architecture.md, "The store's
              interface").

tests/, bench/ and fuzz/ stand above everything: they may include any public header;
the statement layer's own tests (tests/t_sql_*.c, tests/t_schema_*.c) also STORE_ONLY's.
Prints one line per problem and "include order: N files, N includes, no problem";
exits 1 on any problem.
"""
import os
import re
import sys

# What each part may include besides itself (src/README.md explains the order).
MAY_INCLUDE = {
    "proto": set(),
    "base": set(),
    "host": {"base", "proto"},
    "supervisor": {"host", "base", "proto"},
    "store": {"supervisor", "host", "base", "proto"},
    "flows": {"store", "supervisor", "host", "base", "proto"},
    "web": {"flows", "store", "supervisor", "host", "base", "proto"},
    "serve": {"web", "flows", "store", "supervisor", "host", "base", "proto"},
    "cli": {"serve", "web", "flows", "store", "supervisor", "host", "base", "proto"},
    "ck": {"serve", "flows", "store", "supervisor", "host", "base", "proto"},
    "worker": {"base", "proto"},
}
CONSUMERS = ("tests", "bench", "fuzz")  # above every part of src/
GENERATED = {"version.h", "prelude_js.h", "worker_sb.h"}  # build/gen, made by make
ENGINE = "quickjs.h"  # the fetched engine: src/worker includes it as <quickjs.h>
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# The store's headers that speak SQLite's types: for src/store/*.c only.
STORE_ONLY = {"store/sql.h", "store/store_internal.h", "store/sql_backend.h", "store/sql_sqlite.h",
              "store/store_engine.h", "store/store_schema_postgres.h", "store/sql_types.h",
              "store/sql_postgres.h"}
SPEAKS_SQL = re.compile(r"sqlite3|sql_")
# The statement layer's own tests drive its engines through those headers.
STATEMENT_TESTS = re.compile(r"^tests/t_(sql|schema)_[a-z0-9_]+\.c$")


def sources(root):
    for top in ("src",) + CONSUMERS:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if name.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(dirpath, name), root)


def includes(root, path):
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield number, m.group(1)


def sql_problems(root, path):
    """Where path speaks SQL though it may not (see "sql" above)."""
    if not path.startswith("src/"):
        return []
    part = path.split("/")[1]
    if part == "store" and (path[len("src/"):] in STORE_ONLY or path.endswith(".c")):
        return []
    pattern = SPEAKS_SQL if part != "store" else re.compile(r"sqlite3")
    where = "outside src/store/" if part != "store" else "in a public header of src/store/"
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            m = pattern.search(line)
            if m:
                return [f"sql: {path}:{number} names {m.group(0)} {where} (only store/ speaks SQL)"]
    return []


def module_of(path):
    """src/store/runs.c and src/store/runs.h are the module store/runs."""
    return os.path.splitext(path[len("src/"):])[0]


def find_cycles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    problems, files, count = [], 0, 0
    graph = {}
    for path in sources(root):
        files += 1
        top = path.split("/")[0]
        part = path.split("/")[1] if top == "src" and path.count("/") >= 2 else None
        if top == "src" and part not in MAY_INCLUDE:
            problems.append(f"unknown: {path} is in no part of src/ (src/README.md)")
            continue
        problems.extend(sql_problems(root, path))
        for number, target in includes(root, path):
            count += 1
            where = f"{path}:{number}"
            if target in GENERATED:
                continue
            if top != "src" and target == ENGINE:
                continue  # the benchmarks' in-process floor
            if top != "src" and os.path.exists(os.path.join(root, os.path.dirname(path), target)):
                continue  # a consumer's own header (tests/lib/harness.h), beside it
            if "/" not in target:
                problems.append(f"unknown: {where} includes \"{target}\" without its part")
                continue
            target_part = target.split("/")[0]
            if target_part not in MAY_INCLUDE:
                problems.append(f"unknown: {where} includes {target}: no part src/{target_part}")
                continue
            if not os.path.exists(os.path.join(root, "src", target)):
                problems.append(f"unknown: {where} includes {target}, which does not exist")
                continue
            if target in STORE_ONLY and STATEMENT_TESTS.match(path.replace(os.sep, "/")):
                continue
            if target.endswith("_internal.h") and target_part != part:
                problems.append(f"private: {where} includes {target}, private to src/{target_part}")
            elif target in STORE_ONLY and part != "store":
                problems.append(f"private: {where} includes {target}, SQLite's types for "
                                "src/store/ only")
            if top != "src":
                continue
            if target_part != part and target_part not in MAY_INCLUDE[part]:
                problems.append(f"upward: {where} includes {target}: src/{part} may include "
                                f"only {', '.join(sorted(MAY_INCLUDE[part] | {part}))}")
            if target_part == part:
                a, b = module_of(path), module_of("src/" + target)
                if a != b:
                    graph.setdefault(a, set()).add(b)
    for cycle in find_cycles(graph):
        problems.append("cycle: " + " <-> ".join(cycle) + " include each other's headers")
    for p in problems:
        print(p)
    if problems:
        print(f"include order: {len(problems)} problem(s) in {files} files")
        return 1
    print(f"include order: {files} files, {count} includes, no problem")
    return 0


if __name__ == "__main__":
    sys.exit(main())
