#!/usr/bin/env bash
# make dist: build/dist/basal-VERSION.tar.gz of the committed tree at HEAD and its
# .sha256. Made twice (the second time under another umask and time zone, and with
# README.md's mtime moved, restored after) it is the same bytes [guard dist-reproducible];
# every entry carries the commit's time and owner 0:0 (what makes it so); it holds
# exactly the files of HEAD, under basal-VERSION/, so nothing from build/ and never
# QuickJS [guard dist-only-git-files].
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib/harness.sh
scratch_dir dist
touch -r README.md "$scratch/readme-mtime"
trap 'touch -r "$scratch/readme-mtime" README.md; rm -rf "$scratch"' EXIT

version=$(git show HEAD:VERSION) || { echo "not ok - dist: no VERSION at HEAD"; exit 1; }
name=basal-$version
tarball=build/dist/$name.tar.gz

if ! make -s dist >"$scratch/log1" 2>&1; then
    echo "not ok - dist: make dist failed: $(tr '\n' ' ' <"$scratch/log1" | cut -c1-300)"
    exit 1
fi
if [ -f "$tarball" ] && [ -f "$tarball.sha256" ]; then
    echo "ok - dist: make dist wrote $tarball and $tarball.sha256"
else
    echo "not ok - dist: make dist did not write $tarball and its .sha256"
    exit 1
fi
cp "$tarball" "$scratch/first.tar.gz"
cp "$tarball.sha256" "$scratch/first.sha256"

# What a tar of the work tree would record differently; the tarball must not see it.
touch -d "@$(($(git log -1 --format=%ct HEAD) - 86400))" README.md
if (umask 077 && TZ=Pacific/Kiritimati make -s dist >"$scratch/log2" 2>&1); then
    if cmp -s "$scratch/first.tar.gz" "$tarball" && cmp -s "$scratch/first.sha256" "$tarball.sha256"; then
        echo "ok - dist: a second make dist gives the same bytes [guard dist-reproducible]"
    else
        echo "not ok - dist: a second make dist differs from the first [guard dist-reproducible]"
    fi
else
    echo "not ok - dist: the second make dist failed: $(tr '\n' ' ' <"$scratch/log2" | cut -c1-300)"
fi

if (cd build/dist && sha256sum --quiet -c "$name.tar.gz.sha256" >/dev/null 2>&1); then
    echo "ok - dist: sha256sum -c accepts the .sha256 file"
else
    echo "not ok - dist: sha256sum -c rejects $tarball.sha256"
fi

# Entry by entry: the names (files only), owners and times.
commit_time=$(git log -1 --format=%ct HEAD)
python3 - "$tarball" "$name" "$commit_time" >"$scratch/facts" <<'PY' || { echo "not ok - dist: cannot read the tarball"; exit 1; }
import sys, tarfile
path, prefix, when = sys.argv[1], sys.argv[2] + "/", int(sys.argv[3])
bad = []
with tarfile.open(path, "r:gz") as t:
    for m in t.getmembers():
        if m.type == tarfile.XGLTYPE:
            continue
        if (m.uid, m.gid) != (0, 0) or m.mtime != when:
            bad.append(f"{m.name} uid={m.uid} gid={m.gid} mtime={m.mtime}")
        if m.isdir():
            continue
        name = m.name[len(prefix):] if m.name.startswith(prefix) else "OUTSIDE-PREFIX:" + m.name
        print("file", name)
for b in bad[:5]:
    print("bad", b)
PY
sed -n 's/^file //p' "$scratch/facts" | sort >"$scratch/in-tarball"
git ls-tree -r --name-only HEAD | sort >"$scratch/in-git"
if cmp -s "$scratch/in-tarball" "$scratch/in-git"; then
    echo "ok - dist: the tarball holds exactly the $(wc -l <"$scratch/in-git") files of HEAD under $name/ [guard dist-only-git-files]"
else
    echo "not ok - dist: tarball and HEAD differ: $(diff "$scratch/in-git" "$scratch/in-tarball" | grep '^[<>]' | head -5 | tr '\n' ' ') [guard dist-only-git-files]"
fi
if grep -qE '^build/|(^|/)quickjs\.[ch]$|(^|/)libregexp\.c$' "$scratch/in-tarball"; then
    echo "not ok - dist: the tarball holds build output or QuickJS sources"
else
    echo "ok - dist: nothing from build/ and no QuickJS source in the tarball"
fi
if grep -q '^bad ' "$scratch/facts"; then
    echo "not ok - dist: entries not stamped 0:0 at the commit time: $(sed -n 's/^bad //p' "$scratch/facts" | tr '\n' ' ' | cut -c1-300)"
else
    echo "ok - dist: every entry is owned 0:0 and dated at the commit's time"
fi
