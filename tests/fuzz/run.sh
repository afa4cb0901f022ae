#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time from its seeds, in a fresh
# corpus directory, and prints how many inputs it executed. A crash, leak,
# sanitizer report or timeout fails the test; the input that caused it is
# kept beside the corpus (crash-*, leak-*, timeout-*) and its path printed.
#
#   run.sh FUZZ_BINARY SEED_DIR WORK_DIR SECONDS
# Longer on demand: CACHET_FUZZ_SECONDS=600 ctest -L fuzz
set -euo pipefail
bin=$1
seeds=$2
work=$3
seconds=${CACHET_FUZZ_SECONDS:-$4}
name=$(basename "$bin")
rm -rf "$work"
mkdir -p "$work/corpus"
cd "$work"
# A dictionary of the format's words, where there is one (fuzz_NAME -> NAME.dict).
dict=$(dirname "$0")/${name#fuzz_}.dict
dict_arg=()
[ ! -f "$dict" ] || dict_arg=(-dict="$dict")
set +e
"$bin" "${dict_arg[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
    -print_final_stats=1 -artifact_prefix="$work/" "$work/corpus" "$seeds" > log.txt 2>&1
rc=$?
set -e
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' log.txt | tail -n1)
if [ "$rc" -ne 0 ]; then
    tail -n 60 log.txt
    echo "FAIL: $name exited $rc after ${execs:-?} executions; artifacts in $work:" >&2
    ls "$work" | grep -E '^(crash|leak|timeout|oom|slow-unit)-' >&2 || true
    exit 1
fi
echo "PASS: $name: ${execs:-?} executions in ${seconds}s, corpus $(ls corpus | wc -l) inputs"
