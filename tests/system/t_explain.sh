#!/usr/bin/env bash
# cachet explain, show and log: why a step missed, and who built a file.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"

# explain's first line (or all of its output) must contain the text.
explain_says() {
    local want=$1
    shift
    set +e
    OUT=$(cachet explain "$@" 2>&1)
    local rc=$?
    set -e
    [ "$rc" -eq 1 ] || fail "explain $* exited $rc, expected 1 (would miss); output: $OUT"
    case "$OUT" in
        *"$want"*) ;;
        *) fail "explain $* does not say '$want'; it says: $OUT" ;;
    esac
}

short() { sha256sum "$1" | cut -c1-8; }

section "two builds of one compiler, swapped at the same path with the same mtime"
mkdir -p bin
cat > mycc.c <<'C'
#include <stdio.h>
#define BUILD 1
int main(int argc, char **argv) {
    FILE *in = fopen(argv[1], "r"), *out = fopen(argv[2], "w");
    int c;
    fprintf(out, "build %d\n", BUILD);
    while ((c = fgetc(in)) != EOF) fputc(c, out);
    return 0;
}
C
gcc -O2 -o mycc1 mycc.c
sed 's/#define BUILD 1/#define BUILD 2/' mycc.c > mycc2.c
gcc -O2 -o mycc2 mycc2.c
[ "$(stat -c %s mycc1)" = "$(stat -c %s mycc2)" ] || fail "the two compiler builds should have the same size"
echo "source text" > src.txt
cp mycc1 bin/mycc
touch -d '2024-01-01 00:00:00' bin/mycc
run_expect miss "new step" -- ./bin/mycc src.txt artifact
cp artifact artifact.from1
cp mycc2 bin/mycc
touch -d '2024-01-01 00:00:00' bin/mycc
explain_says "executable changed" ./bin/mycc src.txt artifact
case "$OUT" in *"bin/mycc"*) ;; *) fail "explain does not name the compiler's path: $OUT" ;; esac
case "$OUT" in *"$(short mycc1)"*"$(short mycc2)"*) ;;
    *) fail "explain does not name both compiler digests ($(short mycc1), $(short mycc2)): $OUT" ;; esac
run_expect miss "new step" -- ./bin/mycc src.txt artifact
assert_content artifact "build 2
source text"
cp artifact artifact.from2
# The first artifact's step ran the compiler since replaced: stale (exit 1).
set +e
cachet show artifact.from1 > show1.txt
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "show of the artifact of the replaced compiler exited $rc, expected 1 (stale)"
grep -q "stale: program changed: bin/mycc" show1.txt || fail "show does not say the compiler changed: $(cat show1.txt)"
cachet show artifact.from2 > show2.txt || fail "show artifact.from2 failed"
grep -q "$(short mycc1)" show1.txt || fail "show of the first artifact does not name compiler build 1: $(cat show1.txt)"
grep -q "$(short mycc2)" show2.txt || fail "show of the second artifact does not name compiler build 2: $(cat show2.txt)"
! grep -v "(now)" show1.txt | grep -q "$(short mycc2)" || fail "show of the first artifact names build 2 as its program"
grep -q "toolchain:" show1.txt || fail "show prints no toolchain digest"
t1=$(grep toolchain: show1.txt) t2=$(grep toolchain: show2.txt)
[ "$t1" != "$t2" ] || fail "the two artifacts show the same toolchain digest"
echo unrelated > nobody.txt
set +e
cachet show nobody.txt > /dev/null
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "show of a file no step produced exited $rc, expected 1"
cachet show --inputs artifact.from2 | grep -q "src.txt" || fail "show --inputs does not list the source"

section "a changed header"
mkdir -p inc a b
printf '#include "x.h"\nint v(void) { return X; }\n' > a.c
echo '#define X 1' > b/x.h
run_expect miss "new step" -- gcc -Ia -Ib -c a.c -o a.o
run_expect hit "" -- gcc -Ia -Ib -c a.c -o a.o
echo '#define X 2' > b/x.h
explain_says "input changed: b/x.h" gcc -Ia -Ib -c a.c -o a.o
case "$OUT" in *"→"*"(now)"*) ;; *) fail "explain gives no recorded → now digests: $OUT" ;; esac
run_expect miss "inputs changed" -- gcc -Ia -Ib -c a.c -o a.o

section "a header that now shadows another (-Ia -Ib)"
echo '#define X 3' > a/x.h
explain_says "path now exists: a/x.h (recorded absent)" gcc -Ia -Ib -c a.c -o a.o
run_expect miss "inputs changed" -- gcc -Ia -Ib -c a.c -o a.o

section "a changed argv element"
run_expect miss "new step" -- gcc -O2 -Ia -Ib -c a.c -o a.o
explain_says "argv[1]: -O2 → -O3" gcc -O3 -Ia -Ib -c a.c -o a.o

section "a changed environment variable"
cat > opt.sh <<'SH'
#!/bin/sh
echo "level $OPT_LEVEL" > opt.out
SH
chmod +x opt.sh
OPT_LEVEL=2 run_expect miss "new step" -- ./opt.sh
OPT_LEVEL=3 explain_says "environment changed: OPT_LEVEL=2 → 3" ./opt.sh
API_TOKEN=secret1 run_expect miss "new step" -- ./opt.sh
API_TOKEN=secret2 explain_says "API_TOKEN" ./opt.sh
case "$OUT" in *secret*) fail "explain shows the value of a secret-looking variable: $OUT" ;; esac

section "a new module shadowing a Python import"
mkdir -p py/first py/second
echo 'VALUE = "second"' > py/second/helper.py
printf 'import helper\nopen("py.out", "w").write(helper.VALUE)\n' > py/gen.py
PYTHONPATH=py/first:py/second run_expect miss "new step" -- python3 py/gen.py
PYTHONPATH=py/first:py/second run_expect hit "" -- python3 py/gen.py
echo 'VALUE = "first"' > py/first/helper.py
PYTHONPATH=py/first:py/second explain_says "helper.py" python3 py/gen.py
case "$OUT" in *"py/first"*) ;; *) fail "explain does not name the shadowing directory: $OUT" ;; esac

section "a changed shared library"
mkdir -p lib
echo 'int foo(void) { return 1; }' > foo.c
gcc -shared -fPIC -o lib/libfoo.so foo.c
printf 'int foo(void);\n#include <stdio.h>\nint main(void) { FILE *f = fopen("lib.out", "w"); fprintf(f, "%%d\\n", foo()); return 0; }\n' > usefoo.c
gcc -o usefoo usefoo.c -Llib -lfoo -Wl,-rpath,"$W/lib"
run_expect miss "new step" -- ./usefoo
assert_content lib.out 1
echo 'int foo(void) { return 2; }' > foo.c
gcc -shared -fPIC -o lib/libfoo.so.new foo.c && mv lib/libfoo.so.new lib/libfoo.so
explain_says "input changed: lib/libfoo.so" ./usefoo
run_expect miss "inputs changed" -- ./usefoo
assert_content lib.out 2

section "the nearest recorded step is the one that differs least, and every difference is named"
printf 'int main(void) { return 0; }\n' > main.c
printf 'int u(void) { return 0; }\n' > util.c
run_expect miss "new step" -- gcc -O2 -c util.c -o util.o
run_expect miss "new step" -- gcc -O2 -c main.c -o main.o
explain_says "argv[2]: -g added" gcc -O2 -g -c main.c -o main.o
case "$OUT" in *"nearest recorded step: gcc -O2 -c main.c -o main.o"*) ;;
    *) fail "explain of -g added does not compare with the same file's compile: $OUT" ;; esac
case "$OUT" in *util*) fail "explain of -g added compares with another file's compile: $OUT" ;; esac
explain_says "argv[1]: -O2 → -O3" gcc -O3 -g -c util.c -o u2.o
case "$OUT" in *"argv[2]: -g added"*"argv[6]: util.o → u2.o"*) ;;
    *) fail "explain does not name every argv difference: $OUT" ;; esac
printf '#!/bin/sh\necho hi > s.out\n' > s.sh
chmod +x s.sh
run_expect miss "new step" -- ./s.sh
explain_says "no recorded step runs the same program" ls -la
long() { python3 -c 'import sys; print("x" * 1500 + sys.argv[1] + "y" * 1500)' "$1"; }
LONG=$(long A) run_expect miss "new step" -- ./s.sh
LONG=$(long B) explain_says "environment changed: LONG=" ./s.sh
case "$OUT" in *"(3001 characters)"*) ;; *) fail "a long value is not shortened: $OUT" ;; esac
[ "${#OUT}" -lt 600 ] || fail "explain prints a 3,000-character value whole in text (${#OUT} characters)"
{ LONG=$(long B) cachet explain --json ./s.sh || true; } | python3 -c '
import json, sys
o = json.load(sys.stdin)
d = [x for x in o["differences"] if x["subject"] == "LONG"][0]
assert len(d["now"]) == 3001 and d["now"][1500] == "B", d' || fail "--json does not give the long value whole"

section "the user's files first, and --json digests whole"
mkdir -p "$T/sys"
echo one > "$T/sys/tool.conf"
echo one > list.txt
printf '#!/bin/sh\ncat %s list.txt > both.out\n' "$T/sys/tool.conf" > both.sh
chmod +x both.sh
run_expect miss "new step" -- ./both.sh
echo two > "$T/sys/tool.conf"
echo two > list.txt
explain_says "input changed: list.txt" ./both.sh
case "$(echo "$OUT" | head -n 1)" in *list.txt*) ;; *) fail "explain names another file before the step's own: $OUT" ;; esac
set +e
OUT=$(cachet explain --all ./both.sh)
set -e
case "$OUT" in *list.txt*tool.conf*) ;; *) fail "explain --all does not list the step's own files first: $OUT" ;; esac
{ cachet explain --json ./both.sh || true; } | python3 -c '
import json, sys
o = json.load(sys.stdin)
d = o["differences"][0]
assert d["subject"] == "list.txt", d
assert d["now"] == "sha256 " + sys.argv[1], d' "$(sha256sum list.txt | cut -d" " -f1)" ||
    fail "--json does not give the digest whole"

section "explain on a step that would hit does not run it"
cat > marker.sh <<'SH'
#!/bin/sh
echo ran >> marker.runs
echo out > marker.out
SH
chmod +x marker.sh
run_expect miss "new step" -- ./marker.sh
rm -f marker.runs
set +e
OUT=$(cachet explain ./marker.sh)
rc=$?
set -e
[ "$rc" -eq 0 ] || fail "explain of a step that would hit exited $rc: $OUT"
[ "$OUT" = "hit" ] || fail "explain said '$OUT' for a step that would hit"
assert_absent marker.runs
cachet explain --json ./marker.sh | python3 -c 'import json,sys; o=json.load(sys.stdin); assert o["hit"] is True, o'
set +e
cachet explain --no-such-option ./marker.sh 2>/dev/null
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "explain with a bad option exited $rc, expected 2"

section "the step log"
run_expect hit "" -- ./marker.sh
cachet log -n 3 > log.txt
tail -n 1 log.txt | grep -q "hit.*marker.sh" || fail "log's last line is not the hit: $(cat log.txt)"
grep -q "miss (new step).*marker.sh" log.txt || cachet log -n 50 | grep -q "miss (new step).*marker.sh" ||
    fail "log does not show the miss with its reason"
cachet log -n 50 | grep -q "miss (inputs changed).*usefoo" || fail "log does not show the inputs-changed miss"
[ "$(cachet log -n 2 | wc -l)" -eq 2 ] || fail "log -n 2 printed another number of lines"
cachet log --json -n 5 | python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin]
assert len(rows) == 5, rows
assert rows[-1]["result"] == "hit", rows[-1]
assert all(isinstance(r["duration_ms"], int) for r in rows)'
cachet log -n 100 | grep -q "secret" && fail "the log shows a secret-looking value"
true
