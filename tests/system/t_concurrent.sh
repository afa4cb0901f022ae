# Concurrent cachet processes on one cache: identical steps racing, many
# different steps at once, many hits at once. Every command finishes with
# correct outputs and the cache stays usable.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"

# A C file big enough that two compiles overlap.
python3 - <<'EOF'
with open("big.c", "w") as f:
    for i in range(400):
        f.write("int f%d(int x) { int s = 0; for (int i = 0; i < x; i++) s += (i * %d) ^ (s >> 3); return s; }\n" % (i, i + 1))
    f.write("const char tag[] = \"BIG_END\";\n")
EOF
mkdir ref
gcc -O2 -c big.c -o ref/big.o

# Runs N copies of `cachet run -- CMD...` at once; fails if any fails.
parallel_same() {
    local n=$1
    shift
    local pids=() i rc=0
    for i in $(seq "$n"); do
        cachet run -- "$@" &
        pids+=($!)
    done
    for i in "${pids[@]}"; do
        wait "$i" || rc=$?
    done
    [ "$rc" -eq 0 ] || fail "a concurrent cachet run -- $* failed with status $rc"
}

section "two identical steps at once"
before=$(status_count)
parallel_same 2 gcc -O2 -c big.c -o big.o
[ "$(status_count)" -eq $((before + 2)) ] || fail "expected two status lines from the racing steps"
assert_same big.o ref/big.o
r1=$(status_field result $((before + 1)))
r2=$(status_field result $((before + 2)))
echo "racing steps: $r1 ($(status_field reason $((before + 1)))), $r2 ($(status_field reason $((before + 2))))"
stored=0
for n in $((before + 1)) $((before + 2)); do
    case "$(status_field result $n)/$(status_field reason $n)" in
        hit/*|"miss/new step") stored=1 ;;
        "miss/input modified during run") ;;
        *) fail "racing step $n: unexpected $(status_field result $n) ($(status_field reason $n))" ;;
    esac
done
if [ "$stored" -eq 1 ]; then
    run_expect hit "" -- gcc -O2 -c big.c -o big.o
else
    # Both saw the other one writing big.o and refused to store: allowed, but
    # then a lone run must store.
    echo "note: both racing steps declined to store (input modified during run)"
    run_expect miss "" -- gcc -O2 -c big.c -o big.o
    run_expect hit "" -- gcc -O2 -c big.c -o big.o
fi
assert_same big.o ref/big.o
rm big.o
run_expect hit "" -- gcc -O2 -c big.c -o big.o
assert_same big.o ref/big.o
cachet stats --json > stats.json || fail "cachet stats --json failed after the race"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' stats.json || fail "stats --json is not JSON"

section "eight different steps at once"
for i in $(seq 8); do
    printf 'int g%d(int x) { return x * %d; }\nconst char tag[] = "UNIT_%d_END";\n' "$i" "$i" "$i" > "u$i.c"
    gcc -O1 -c "u$i.c" -o "ref/u$i.o"
done
pids=()
before=$(status_count)
for i in $(seq 8); do
    cachet run -- gcc -O1 -c "u$i.c" -o "u$i.o" &
    pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=$?; done
[ "$rc" -eq 0 ] || fail "a parallel compile failed with status $rc"
[ "$(status_count)" -eq $((before + 8)) ] || fail "expected 8 status lines"
for i in $(seq 8); do
    assert_same "u$i.o" "ref/u$i.o"
    [ "$(status_field result $((before + i)))" = miss ] || fail "parallel step $i: $(status_field result $((before + i)))"
done

section "eight hits at once restore the deleted objects"
rm u*.o
pids=()
before=$(status_count)
for i in $(seq 8); do
    cachet run -- gcc -O1 -c "u$i.c" -o "u$i.o" &
    pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=$?; done
[ "$rc" -eq 0 ] || fail "a parallel hit failed with status $rc"
for i in $(seq 8); do
    assert_same "u$i.o" "ref/u$i.o"
    [ "$(status_field result $((before + i)))" = hit ] || fail "parallel hit $i: $(status_field result $((before + i))) ($(status_field reason $((before + i))))"
done

section "the cache is consistent afterwards"
hits=$(stats_field hits)
entries=$(stats_field entries)
errors=$(stats_field errors)
[ "$hits" -ge 10 ] || fail "stats: hits = $hits, expected at least 10"
[ "$entries" -ge 9 ] || fail "stats: entries = $entries, expected at least 9"
[ "$errors" -eq 0 ] || fail "stats: errors = $errors after a clean concurrent run"

check_status_file_format
