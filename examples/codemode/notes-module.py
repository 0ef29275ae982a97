#!/usr/bin/env python3
"""The example's module: a notes store in one JSON-lines file, for codemode tools.

basal runs it once per call (docs/flows.md, "The program contract"): one JSON request
on stdin, one JSON reply on stdout.

    notes-module.py --notes FILE

    search  args {"text": str, "limit": int}  -> {"result": [notes whose text has it]}
    add     args {"text": str, "tags": [str]} -> {"result": {"id": n}}; appends the
            note with the call's idempotency key, and adds nothing when a note with
            that key is already there (so a resent call does not add twice)
"""
import json
import sys


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def main():
    if len(sys.argv) != 3 or sys.argv[1] != "--notes":
        print("usage: notes-module.py --notes FILE", file=sys.stderr)
        return 2
    path = sys.argv[2]
    request = json.load(sys.stdin)
    op, args, key = request["op"], request["args"], request["idempotency_key"]
    notes = load(path)
    if op == "search":
        text = args["text"].lower()
        found = [n for n in notes if text in n["text"].lower()]
        reply = {"result": found[: args.get("limit", 10)]}
    elif op == "add":
        same = [n for n in notes if n.get("key") == key]
        if same:
            reply = {"result": {"id": same[0]["id"]}}
        else:
            note = {"id": len(notes) + 1, "text": args["text"], "tags": args.get("tags", []),
                    "key": key}
            with open(path, "a", encoding="utf-8") as f:
                f.write(json.dumps(note) + "\n")
            reply = {"result": {"id": note["id"]}}
    else:
        reply = {"error": {"code": "unknown_op", "message": "no op " + op}}
    json.dump(reply, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
