#!/usr/bin/env bash
# The fuzz smoke run of the test suite: every libFuzzer target under fuzz/ is built with
# clang (ASan + UBSan) and run for FUZZ_SECONDS (default 18 s each, about 60 s in all
# for the three targets) from a scratch copy of its committed seed corpus. A crash,
# leak or sanitizer report fails the check and leaves the reproducer under build/fuzz/.
# The codec targets link src/proto; fuzz_activation also links the activation driver
# and what it needs (and jansson, for the host's rejections).
# A longer run: FUZZ_SECONDS=3600 tests/t_fuzz.sh
set -uo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-18}"
out=build/fuzz
mkdir -p "$out"
status=0
# The codec's portable sources: the *_windows.c parts are the Windows builds' alone.
proto_src=()
for f in src/proto/*.c; do
  case $f in *_windows.c | *_macos.c) ;; *) proto_src+=("$f") ;; esac
done
for src in fuzz/fuzz_*.c; do
  name=$(basename "$src" .c)
  target=${name#fuzz_}
  bin="$out/$name"
  extra=()
  libs=()
  if [ "$target" = activation ]; then
    extra=(src/supervisor/activation.c src/supervisor/colocate.c src/supervisor/worker_channel.c
           src/supervisor/worker_proc.c src/supervisor/worker_launch_linux.c src/base/thread_affinity.c
           src/host/host.c src/base/json_text.c src/base/clock.c src/base/position_search.c)
    libs=(-ljansson)
  fi
  if ! clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -D_GNU_SOURCE \
       -Isrc "$src" "${extra[@]}" "${proto_src[@]}" "${libs[@]}" -o "$bin" 2>"$out/$name.build.log"; then
    echo "not ok - fuzz: $name builds: $(head -c 300 "$out/$name.build.log")"
    status=1
    continue
  fi
  work="$out/corpus-$target"
  rm -rf "$work"
  mkdir -p "$work"
  cp fuzz/corpus/"$target"/* "$work"/ 2>/dev/null
  seeds=$(ls "$work" | wc -l)
  if "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$out/$name-" "$work" >"$out/$name.log" 2>&1; then
    runs=$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$out/$name.log" | grep -o '[0-9]*$')
    echo "ok - fuzz: $name ran ${seconds}s from $seeds seeds without a finding ($runs inputs)"
  else
    echo "not ok - fuzz: $name found a crash: $(grep -m1 -E 'ERROR|SUMMARY' "$out/$name.log")"
    tail -30 "$out/$name.log" | sed 's/^/# /'
    status=1
  fi
done
exit $status
