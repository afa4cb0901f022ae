# A digest is trusted while a file's fingerprint holds, but on a read-only
# image (squashfs) another image mounted at the same point can show the same
# device, inode numbers, sizes and times for other bytes: fingerprints on
# such file systems are not trusted, so swapping the image misses and gives
# what a plain run gives. Needs root, mksquashfs and loop mounts, in a
# private mount namespace.
source "$(dirname "$0")/lib.sh"

command -v mksquashfs >/dev/null || skip "mksquashfs not installed (squashfs-tools)"
command -v unshare >/dev/null || skip "unshare not installed"
[ "$(id -u)" -eq 0 ] || skip "mounting an image needs root"
unshare -m --propagation private true 2>/dev/null || skip "no private mount namespace here"

W=$(workdir)
cd "$W"
for v in a b; do
    mkdir -p src-$v/sub
    # Same size, other bytes; the same times in both images.
    printf '%s\n' "content $v" > src-$v/sub/data
    mksquashfs src-$v img-$v.sqfs -quiet -no-progress -all-root -all-time 1000000000 \
        -mkfs-time 1000000000 >/dev/null
done
mkdir mnt

cat > swap.sh <<'EOF2'
set -eu
mount -o loop,ro img-a.sqfs mnt || exit 77
"$CACHET_BIN" run -- sh -c 'cat mnt/sub/data > out.txt'
cp out.txt out-a1.txt
"$CACHET_BIN" run -- sh -c 'cat mnt/sub/data > out.txt'
cp out.txt out-a2.txt
stat -c '%d %i %s %Y %Z' mnt/sub/data > id-a.txt
umount mnt
mount -o loop,ro img-b.sqfs mnt
stat -c '%d %i %s %Y %Z' mnt/sub/data > id-b.txt
"$CACHET_BIN" run -- sh -c 'cat mnt/sub/data > out.txt'
cp out.txt out-b.txt
cat mnt/sub/data > plain-b.txt
umount mnt
EOF2
set +e
unshare -m --propagation private bash swap.sh
rc=$?
set -e
[ "$rc" -ne 77 ] || skip "loop mounts are not permitted here"
[ "$rc" -eq 0 ] || fail "the image swap script failed ($rc)"
section "the first image: a miss, then a hit"
[ "$(status_field result 1)" = miss ] || fail "first run: $(status_field result 1)"
[ "$(status_field result 2)" = hit ] || fail "second run: $(status_field result 2)"
assert_content out-a2.txt "content a"
section "the other image at the same point misses"
if cmp -s id-a.txt id-b.txt; then
    echo "both images show the same fingerprint: $(cat id-a.txt)"
fi
[ "$(status_field result 3)" = miss ] || fail "after the swap: $(status_field result 3)"
assert_same out-b.txt plain-b.txt
assert_content out-b.txt "content b"
