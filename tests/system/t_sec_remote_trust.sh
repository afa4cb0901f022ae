# What an unsigned remote can make a reader do (no trusted_keys): a path set
# naming a file outside the step's roots and toolchain is refused before any
# lookup (else the reader would hash a file of the writer's choosing and tell
# it, by the key it asks for next, what the file holds); a path set with no
# observation is refused (its entry would hit whatever the sources hold); a
# record of 1.8 million observations costs no more than a refusal and trips
# the breaker. An honest record still hits.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/remote_lib.sh"

start_nginx web
export CACHET_REMOTE="http://127.0.0.1:$NGINX_PORT/cache"
W=$(workdir)
cd "$W"
mkdir -p "$T/secret"
echo "ssh-ed25519 private" > "$T/secret/id_key"
echo input > in.txt

export CACHET_DIR="$T/writer"
step sh -c 'cat in.txt > out.txt'
expect miss
cachet remote flush -q || fail "flush failed"
record=
for f in "$NGINX_ROOT"/cache/ac/*; do
    [ "$("$TESTTOOL" kind "$f")" = pathsets ] && record=$f
done
[ -n "$record" ] || fail "no path-set record on the server"
cp "$record" "$T/honest.rec"
rm out.txt

# reader NAME: a new machine runs the step; prints the counter named.
n=0
reader() {
    n=$((n + 1))
    export CACHET_DIR="$T/reader$n"
    step sh -c 'cat in.txt > out.txt'
    rm -f out.txt
}

section "an unsigned path set naming a file outside the step's roots is refused"
"$TESTTOOL" pathsets-read "$record" "$T/secret/id_key"
reader
expect miss
[ "$(remote_counter remote_refused)" -ge 1 ] || fail "a path set naming $T/secret/id_key was evaluated"
cp "$T/honest.rec" "$record"
"$TESTTOOL" pathsets-read "$record" "$W/../secret/id_key"
reader
expect miss
[ "$(remote_counter remote_refused)" -ge 1 ] || fail "a path set climbing out with .. was evaluated"

section "a path set with no observation is refused"
cp "$T/honest.rec" "$record"
"$TESTTOOL" pathsets-empty "$record"
reader
expect miss
[ "$(remote_counter remote_refused)" -ge 1 ] || fail "a path set with no observation was evaluated"

section "a record of 1.8 million observations is refused before it costs"
cp "$T/honest.rec" "$record"
"$TESTTOOL" pathsets-bloat "$record" 1800000
t0=$(date +%s%3N)
reader
ms=$(($(date +%s%3N) - t0))
echo "figure: 1.8 M observations: $ms ms"
expect miss
[ "$(remote_counter remote_corrupt)" -ge 1 ] || fail "the bloated record was not refused"
[ "$ms" -lt 3000 ] || fail "the bloated record cost $ms ms"
t0=$(date +%s%3N)
step sh -c 'cat in.txt > out2.txt'
ms=$(($(date +%s%3N) - t0))
echo "figure: 1.8 M observations, next step: $ms ms"
[ "$(remote_counter remote_skipped)" -ge 1 ] || fail "the server was not skipped after its garbage"

section "an honest record still hits"
cp "$T/honest.rec" "$record"
reader
expect hit remote
