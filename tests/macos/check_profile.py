#!/usr/bin/env python3
"""The macOS worker's Seatbelt profile, checked on Linux (issue 30; sandbox.md, "macOS").

src/worker/worker.sb is an S-expression (SBPL). This reads it with a small reader of
its own and holds it to sandbox.md: after (version 1) the first rule is (deny default);
the only rule allowed is signals to the worker itself; nothing else is in it (no other
allow, no import, no define, no parameter, no second rule of any kind). It then checks
that the worker embeds exactly these bytes (build/gen/worker_sb.h), and that the check
itself refuses each way a profile could be widened (so it can turn red).

usage: check_profile.py PROFILE [GENERATED_HEADER]
Prints "ok - name" / "not ok - name: detail"; exits 1 if anything failed.
"""
import re
import sys

EXPECTED_VERSION = ["version", "1"]
FIRST_RULE = ["deny", "default"]
# Every rule the profile may have after (deny default), and each exactly once.
ALLOWED_RULES = [["allow", "signal", ["target", "self"]]]


class ProfileError(Exception):
    pass


def tokens(text):
    """Parentheses, symbols and numbers; ';' comments to the end of the line. Strings,
    block comments, quotes and anything else are refused: the profile needs none."""
    i = 0
    while i < len(text):
        c = text[i]
        if c in " \t\r\n":
            i += 1
        elif c == ";":
            end = text.find("\n", i)
            i = len(text) if end < 0 else end + 1
        elif c in "()":
            yield c
            i += 1
        else:
            m = re.compile(r"[A-Za-z0-9*+\-/_.:]+").match(text, i)
            if not m:
                raise ProfileError("unexpected character %r at offset %d" % (c, i))
            yield m.group(0)
            i = m.end()


def read_forms(text):
    stack = [[]]
    for tok in tokens(text):
        if tok == "(":
            stack.append([])
        elif tok == ")":
            if len(stack) == 1:
                raise ProfileError("unbalanced ')'")
            form = stack.pop()
            stack[-1].append(form)
        else:
            if len(stack) == 1:
                raise ProfileError("bare atom %r outside a form" % tok)
            stack[-1].append(tok)
    if len(stack) != 1:
        raise ProfileError("unbalanced '(': %d form(s) left open" % (len(stack) - 1))
    return stack[0]


def show(form):
    if isinstance(form, list):
        return "(" + " ".join(show(f) for f in form) + ")"
    return form


def check(text):
    """Raises ProfileError naming the first way the profile differs from sandbox.md."""
    forms = read_forms(text)
    if not forms or forms[0] != EXPECTED_VERSION:
        raise ProfileError("first form is %s, expected (version 1)" % (show(forms[0]) if forms else "nothing"))
    rules = forms[1:]
    if not rules or rules[0] != FIRST_RULE:
        raise ProfileError("first rule is %s, expected (deny default)" % (show(rules[0]) if rules else "nothing"))
    rest = rules[1:]
    for rule in rest:
        if rule not in ALLOWED_RULES:
            raise ProfileError("rule %s is not one sandbox.md allows" % show(rule))
    for allowed in ALLOWED_RULES:
        n = rest.count(allowed)
        if n != 1:
            raise ProfileError("rule %s appears %d times, expected once" % (show(allowed), n))
    return forms


def embedded_bytes(header_text):
    """The bytes of WORKER_SB_PROFILE in the generated header, without the final NUL."""
    m = re.search(r"WORKER_SB_PROFILE\[\]\s*=\s*\{([^}]*)\}", header_text)
    if not m:
        raise ProfileError("no WORKER_SB_PROFILE array in the generated header")
    values = [int(v, 16) for v in re.findall(r"0x([0-9a-f]{2})", m.group(1))]
    if not values or values[-1] != 0 or 0 in values[:-1]:
        raise ProfileError("WORKER_SB_PROFILE is not one NUL-terminated string")
    return bytes(values[:-1])


# Each way a profile could be wider than sandbox.md's, which check() must refuse.
WIDER = {
    "no deny default": "(version 1)\n(allow signal (target self))\n",
    "allow default": "(version 1)\n(allow default)\n",
    "an allow before deny default": "(version 1)\n(allow signal (target self))\n(deny default)\n",
    "a file read allowed": "(version 1)\n(deny default)\n(allow signal (target self))\n(allow file-read*)\n",
    "network allowed": "(version 1)\n(deny default)\n(allow signal (target self))\n(allow network*)\n",
    "process execution allowed": "(version 1)\n(deny default)\n(allow signal (target self))\n(allow process-exec*)\n",
    "a service lookup allowed": "(version 1)\n(deny default)\n(allow signal (target self))\n(allow mach-lookup)\n",
    "signals to others": "(version 1)\n(deny default)\n(allow signal)\n",
    "an import": "(version 1)\n(deny default)\n(import \"system.sb\")\n(allow signal (target self))\n",
    "the allowance twice": "(version 1)\n(deny default)\n(allow signal (target self))\n(allow signal (target self))\n",
    "no version": "(deny default)\n(allow signal (target self))\n",
    "unbalanced": "(version 1)\n(deny default\n(allow signal (target self))\n",
}


def main(argv):
    if len(argv) not in (2, 3):
        print("usage: check_profile.py PROFILE [GENERATED_HEADER]", file=sys.stderr)
        return 2
    failed = 0

    def result(name, detail=None):
        nonlocal failed
        if detail is None:
            print("ok - " + name)
        else:
            print("not ok - %s: %s" % (name, detail))
            failed += 1

    with open(argv[1], "rb") as f:
        profile = f.read()
    try:
        check(profile.decode("ascii"))
        result("macos profile: (version 1), then (deny default), then only (allow signal (target self))")
    except (ProfileError, UnicodeDecodeError) as e:
        result("macos profile: (version 1), then (deny default), then only (allow signal (target self))", str(e))

    if len(argv) == 3:
        try:
            with open(argv[2], encoding="ascii") as f:
                embedded = embedded_bytes(f.read())
            if embedded == profile:
                result("macos profile: the worker embeds exactly worker.sb's bytes")
            else:
                result("macos profile: the worker embeds exactly worker.sb's bytes",
                       "%d embedded bytes differ from the file's %d" % (len(embedded), len(profile)))
        except (OSError, ProfileError) as e:
            result("macos profile: the worker embeds exactly worker.sb's bytes", str(e))

    for name, text in WIDER.items():
        try:
            check(text)
            result("macos profile check refuses a profile with " + name, "it was accepted")
        except ProfileError:
            result("macos profile check refuses a profile with " + name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
