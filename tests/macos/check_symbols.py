#!/usr/bin/env python3
"""The macOS worker links (as far as Linux can tell; mk/macos.mk, make macos-check).

    check_symbols.py DECLS QUICKJS_LIB OBJECT...

OBJECT... are the macOS worker's objects, compiled for arm64-apple-macos13 against
DECLS (tests/macos/macos_decls.h). Every symbol one of them needs must be defined by
another of them, by QuickJS (defined in QUICKJS_LIB, the native build's libquickjs.a:
the same sources the macOS build compiles), by the system (named in DECLS, whose
declarations each name their Apple or POSIX header), or be one the compiler itself
emits calls to. A symbol left over is a function the macOS build picks no file for
(one only a Linux or Windows source defines): `make macos` would fail to link.
Prints one "ok"/"not ok" line; exits 1 on a symbol left over.
"""
import re
import subprocess
import sys

# Emitted by clang for Darwin, not called by our code: memset lowering, the stack
# protector's guard and its failure.
COMPILER_EMITTED = {"bzero", "__stack_chk_fail", "__stack_chk_guard"}


def nm(args):
    out = subprocess.run(["llvm-nm", *args], check=True, capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        fields = line.split()
        if not fields or line.endswith(":"):
            continue
        names.add(fields[-1])
    return names


def main():
    decls_path, quickjs_lib, objects = sys.argv[1], sys.argv[2], sys.argv[3:]
    if not objects:
        print("not ok - macos: the worker's symbols: no objects")
        return 1
    with open(decls_path, encoding="utf-8") as f:
        declared = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", f.read()))
    # Mach-O names carry a leading underscore; ELF's (QuickJS's, on Linux) do not.
    def plain(names):
        return {n[1:] if n.startswith("_") else n for n in names}
    quickjs = nm(["--defined-only", "-g", quickjs_lib])
    if "_JS_NewRuntime" in quickjs:  # built for macOS (the CI job)
        quickjs = plain(quickjs)
    needed = plain(nm(["-u", *objects]))
    defined = plain(nm(["--defined-only", "-g", *objects]))
    left = sorted(n for n in needed - defined
                  if n not in quickjs and n not in declared and n not in COMPILER_EMITTED)
    if left:
        print("not ok - macos: the worker's objects need symbols no macOS source, QuickJS "
              "or macos_decls.h provides: " + " ".join(left[:20]))
        return 1
    print(f"ok - macos: every symbol the worker's {len(objects)} objects need is defined by "
          "one of them, by QuickJS or declared in macos_decls.h (the macOS worker links)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
