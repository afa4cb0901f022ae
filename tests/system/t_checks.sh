#!/usr/bin/env bash
# cachet run --verify / verify_rate, --check and --require-symbols.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"

# A "compiler" whose back end drops a different entry function on each run:
# one of four is made static inline, so it leaves the symbol table.
cat > flaky-cc <<'SH'
#!/bin/sh
# usage: flaky-cc OUT
drop=$(( $(od -An -N1 -tu1 /dev/urandom) % 4 ))
{
    for i in 0 1 2 3; do
        if [ "$i" = "$drop" ]; then
            echo "static inline int main_kernel_simt_$i(int x) { return x + $i; }"
        else
            echo "int main_kernel_simt_$i(int x) { return x + $i; }"
        fi
    done
} > "$TMPDIR/k.c"
exec gcc -O0 -c "$TMPDIR/k.c" -o "$1"
SH
chmod +x flaky-cc
printf 'main_kernel_simt_0\nmain_kernel_simt_1\nmain_kernel_simt_2\nmain_kernel_simt_3\n' > entries.txt

section "--require-symbols refuses to store an object that lacks an entry"
set +e
cachet run --require-symbols entries.txt -- ./flaky-cc k.o 2> err.txt
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "--require-symbols with a missing symbol exited $rc, expected 1"
grep -q "main_kernel_simt_" err.txt || fail "the missing symbol is not named: $(cat err.txt)"
expect miss "check failed (not stored)"
[ "$(stats_field entries)" -eq 0 ] || fail "an object missing a required symbol was stored"
# A complete object passes and is stored.
printf 'int main_kernel_simt_0(int x) { return x; }\nint main_kernel_simt_1(int x) { return x; }\n' > ok.c
printf 'main_kernel_simt_0\nmain_kernel_simt_1\n' > two.txt
run_expect miss "new step" -- gcc -c ok.c -o ok.o
cachet run --require-symbols two.txt -- gcc -O1 -c ok.c -o ok1.o || fail "a complete object was refused"
[ "$(stats_field entries)" -eq 2 ] || fail "a complete object was not stored"

section "--check: a failing check stores nothing and passes its status on"
set +e
cachet run --check 'test -s ok2.o && exit 7' -- gcc -O2 -c ok.c -o ok2.o 2> err.txt
rc=$?
set -e
[ "$rc" -eq 7 ] || fail "--check failing with 7 made cachet exit $rc"
grep -q "check failed" err.txt || fail "no message for the failed check: $(cat err.txt)"
assert_exists ok2.o
before=$(stats_field entries)
cachet run --check 'test -s ok2.o' -- gcc -O2 -c ok.c -o ok2.o || fail "a passing --check failed"
[ "$(stats_field entries)" -eq $((before + 1)) ] || fail "a passing --check did not store"
run_expect hit "" -- gcc -O2 -c ok.c -o ok2.o

section "--verify on a nondeterministic step: warning, counter, mark in show and explain"
# Store one run of the flaky compiler (no symbol requirement).
run_expect miss "new step" -- ./flaky-cc k.o
cp k.o k.first
differed=0
for i in 1 2 3 4 5 6 7 8; do
    CACHET_VERIFY_RATE=1 cachet run -- ./flaky-cc k.o 2> err.txt || fail "verified run failed"
    if grep -q "nondeterministic step" err.txt; then
        differed=1
        break
    fi
done
[ "$differed" -eq 1 ] || fail "8 verified re-runs never found the flaky compiler nondeterministic"
grep -q "main_kernel_simt_" err.txt || fail "the warning does not say which symbol differs: $(cat err.txt)"
expect hit "verified: nondeterministic"
[ "$(cachet stats --json | python3 -c 'import json,sys; print(json.load(sys.stdin).get("nondeterministic", 0))')" -ge 1 ] ||
    fail "stats --json does not count the nondeterministic step"
cachet show k.first > show.txt || fail "show of the first object failed"
grep -q "NONDETERMINISTIC" show.txt || fail "show does not flag the step: $(cat show.txt)"
cachet explain ./flaky-cc k.o > explain.txt || true
grep -q "nondeterministic" explain.txt || fail "explain does not mention the mark: $(cat explain.txt)"
# The default policy keeps serving hits, with a warning.
cachet run -- ./flaky-cc k.o 2> err.txt || fail "hit on a marked step failed"
expect hit
grep -q "different outputs" err.txt || fail "a hit on a marked step carries no warning"
# nondeterministic = rerun: the step always runs and is never stored.
CACHET_NONDETERMINISTIC=rerun run_expect miss "nondeterministic step (not stored)" -- ./flaky-cc k.o

section "--verify on a deterministic step finds nothing"
CACHET_VERIFY_RATE=1 cachet run -- gcc -c ok.c -o ok.o 2> err.txt || fail "verified gcc failed"
expect hit "verified: same outputs"
! grep -q "nondeterministic" err.txt || fail "a deterministic step was called nondeterministic"
cachet run --verify -- gcc -c ok.c -o ok.o 2> /dev/null
expect hit "verified: same outputs"

section "usage"
set +e
cachet run --check 2> /dev/null
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "--check without an argument exited $rc, expected 2"
