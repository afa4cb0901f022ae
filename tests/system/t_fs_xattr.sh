# Extended attributes that a step reads are inputs: a setfattr on the input
# makes `getfattr -d f > out` miss and give what a plain run gives; a step
# that reads them (ls -l reads ACLs and labels) keeps hitting while nobody
# sets them.
source "$(dirname "$0")/lib.sh"

command -v getfattr >/dev/null && command -v setfattr >/dev/null || skip "attr tools not installed"

W=$(workdir)
cd "$W"
mkdir d
echo data > d/f
setfattr -n user.colour -v red d/f 2>/dev/null || skip "no user extended attributes on $W"
touch -d '-5 seconds' d/f d

get=(sh -c 'getfattr -d d/f > attrs.out')
section "getfattr: a miss, then a hit"
run_expect miss "new step" -- "${get[@]}"
run_expect hit "" -- "${get[@]}"
grep -q 'user.colour="red"' attrs.out || fail "attrs.out lacks the attribute"

section "a changed attribute misses"
setfattr -n user.colour -v blu d/f
run_expect miss "inputs changed" -- "${get[@]}"
cp attrs.out "$T/cached"
"${get[@]}"
assert_same attrs.out "$T/cached"
grep -q 'user.colour="blu"' attrs.out || fail "attrs.out lacks the new value"

section "a removed attribute misses too"
setfattr -x user.colour d/f
run_expect miss "inputs changed" -- "${get[@]}"
[ ! -s attrs.out ] || fail "attrs.out should be empty: $(cat attrs.out)"

section "ls -l keeps hitting"
listing=(sh -c 'ls -l --time-style=+ d > ls.out')
run_expect miss "new step" -- "${listing[@]}"
run_expect hit "" -- "${listing[@]}"
