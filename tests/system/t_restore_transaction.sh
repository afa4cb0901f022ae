# A hit leaves the tree a plain run leaves, or nothing of itself: a restore
# is one transaction. Outputs written through a symlinked directory come
# back where the step wrote them; a restore that fails part-way (a damaged
# blob found while writing) puts back everything it had placed, and the step
# then runs in the tree as it was.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"

section "writes through a symlink the step makes: the hit leaves the plain run's tree"
plain_and_cached 'mkdir real' sh -c 'ln -s real link; echo x > link/f'
[ "$(readlink link)" = real ] && assert_content real/f x

section "writes through a symlink that was there: the hit writes where it leads"
plain_and_cached 'mkdir -p elsewhere/out && ln -s elsewhere/out out' sh -c 'echo y > out/g; echo z > out/h'
assert_content elsewhere/out/g y

section "a restore that fails part-way is undone before the step runs"
# The step notes whether "gone" was there before it removes it: a restore
# that had already removed it (and then failed) would change what it does.
setup='echo old-a > a; echo precious > gone; echo start > log'
script='if [ -e gone ]; then echo had-gone >> log; fi; rm -f gone; echo new-a > a; echo bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb > b'
find "$W" -mindepth 1 -delete
eval "$setup"
sh -c "$script"
PLAIN=$(tree_state "$W")
find "$W" -mindepth 1 -delete
eval "$setup"
run_expect miss "new step" -- sh -c "$script"
assert_same_tree miss "$PLAIN" "$(tree_state "$W")"
# Damage b's blob (same name, other bytes): found only while writing b,
# after "gone" was removed and "a" placed.
hex=$(printf 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\n' | sha256sum | cut -c1-64)
blob=$(ls "$CACHET_DIR"/blobs/"${hex:0:2}"/"$hex"* 2>/dev/null | head -n1)
[ -n "$blob" ] || fail "b's blob is not in the cache"
chmod u+w "$blob"
python3 - "$blob" <<'PY'
import sys
p = sys.argv[1]
d = bytearray(open(p, "rb").read())
d[len(d) // 2] ^= 0xff
open(p, "wb").write(bytes(d))
PY
find "$W" -mindepth 1 -delete
eval "$setup"
step sh -c "$script"
expect_rc 0
[ "$(last_result)" != hit ] || fail "a damaged blob was served"
assert_same_tree "failed restore" "$PLAIN" "$(tree_state "$W")"
assert_content log "start
had-gone"
[ -z "$(find "$W" -name '.cachet-*')" ] || fail "temporary files were left: $(find "$W" -name '.cachet-*')"

section "the ordinary case still hits"
find "$W" -mindepth 1 -delete
eval "$setup"
run_expect hit "" -- sh -c "$script"
assert_same_tree hit "$PLAIN" "$(tree_state "$W")"
