#!/usr/bin/env bash
# cachet show FILE: is this artifact still what its step would make now?
# current (exit 0), stale naming the input that changed, or modified since
# cachet wrote it (exit 1); the step that wrote this very file comes first.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"

# show_says WANT_RC WANT_TEXT FILE: show's exit status and a text it prints.
show_says() {
    local want_rc=$1 want=$2 file=$3
    set +e
    OUT=$(cachet show "$file" 2>&1)
    local rc=$?
    set -e
    [ "$rc" -eq "$want_rc" ] || fail "show $file exited $rc, expected $want_rc; output: $OUT"
    case "$OUT" in
        *"$want"*) ;;
        *) fail "show $file does not say '$want'; it says: $OUT" ;;
    esac
}

show_json() {
    set +e
    cachet show --json "$1" > show.json
    set -e
    python3 - "$2" "$3" <<'PY'
import json, sys
o = json.load(open("show.json"))
assert o["state"] == sys.argv[1], o
assert sys.argv[2] in (o["reason"] or ""), o
for s in o["steps"]:
    assert len(s["weak"]) == 64 and len(s["program_sha256"]) == 64, s
PY
}

section "a step that concatenates a list of inputs"
cat > link.sh <<'SH'
#!/bin/sh
: > repro.elf
while read -r f; do cat "$f" >> repro.elf; done < runlist.txt
SH
chmod +x link.sh
echo a > a.o
echo b > b.o
printf 'a.o\n' > runlist.txt
sh ./link.sh && cp repro.elf plain.elf && rm repro.elf
run_expect miss "new step" -- ./link.sh
assert_same plain.elf repro.elf
show_says 0 "current" repro.elf
show_json repro.elf current ""
grep -q '"steps": \[{' show.json || fail "show --json lists no step: $(cat show.json)"

section "an input changed since: stale, naming it"
printf 'a.o\nb.o\n' > runlist.txt
show_says 1 "stale: input changed: runlist.txt" repro.elf
show_json repro.elf stale "runlist.txt"
printf 'a.o\n' > runlist.txt
show_says 0 "current" repro.elf
echo a2 > a.o
show_says 1 "stale: input changed: a.o" repro.elf
echo a > a.o
show_says 0 "current" repro.elf

section "edited since cachet wrote it"
echo tampered >> repro.elf
show_says 1 "modified since cachet wrote it" repro.elf
case "$OUT" in *"link.sh"*) ;; *) fail "show of a modified file does not name the step that wrote it: $OUT" ;; esac
show_json repro.elf modified ""
echo nobody > other.txt
show_says 1 "no step in this cache produced this content" other.txt
show_json other.txt unknown "no step"

section "the same content made by two checkouts: this file's step first"
mkdir -p co1 co2
for d in co1 co2; do
    cp link.sh a.o runlist.txt "$d/"
done
(cd co1 && run_expect miss "" -- ./link.sh)
(cd co2 && run_expect miss "" -- ./link.sh)
assert_same co1/repro.elf co2/repro.elf
cachet show --json co1/repro.elf > show.json
python3 - "$W/co1" <<'PY'
import json, sys
o = json.load(open("show.json"))
assert len(o["steps"]) >= 2, o
assert o["steps"][0]["cwd"] == sys.argv[1], o["steps"][0]
PY
cachet show co1/repro.elf | grep -m1 "cwd:" | grep -q "co1" || fail "show lists another checkout's step first"
echo b > co1/a.o
show_says 1 "stale: input changed: a.o" co1/repro.elf
show_says 0 "current" co2/repro.elf
