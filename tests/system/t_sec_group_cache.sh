# A cache shared by a group (umask 002, setgid root) is no weapon against its
# members: one member replacing memo/, tmp/ or blobs/ by a symlink to another
# member's directory does not make that member's clear, gc or eviction
# unlink files there; replacing index.db by a symlink does not make that
# member's cachet chmod the target; and the directories cachet makes keep
# the setgid bit, so that members store into each other's blob directories.
# Two real users in one group (created here, as root).
source "$(dirname "$0")/lib.sh"

[ "$(id -u)" -eq 0 ] || skip "needs root to create two users"
command -v useradd > /dev/null && command -v setpriv > /dev/null || skip "needs useradd and setpriv"

tag=$$
group=cgrp$tag
alice=calice$tag
bob=cbob$tag
cleanup_users() {
    userdel "$alice" 2> /dev/null || true
    userdel "$bob" 2> /dev/null || true
    groupdel "$alice" 2> /dev/null || true
    groupdel "$bob" 2> /dev/null || true
    groupdel "$group" 2> /dev/null || true
    rm -rf "${S:-/nonexistent}"
}
trap 'rc=$?; cleanup_users; (exit $rc); _lib_on_exit' EXIT
groupadd "$group"
# Each user's primary group is their own: only the setgid bit gives the
# cache's files the shared group.
useradd -M -N -s /bin/sh -g "$(groupadd "$alice" && echo "$alice")" -G "$group" "$alice"
useradd -M -N -s /bin/sh -g "$(groupadd "$bob" && echo "$bob")" -G "$group" "$bob"

# Somewhere both users can reach (the scratch directory may not be).
S=$(mktemp -d /tmp/cachet-group.XXXXXX)
chmod 755 "$S"
cache="$S/cache"
mkdir "$cache"
chgrp "$group" "$cache"
chmod 2775 "$cache"
for u in "$alice" "$bob"; do
    mkdir -p "$S/$u/work"
    chown -R "$u:$u" "$S/$u"
done

# as USER CMD...: runs CMD as that user in their work directory, on the
# group cache.
as() {
    local u=$1
    shift
    (cd "$S/$u/work" && setpriv --reuid="$u" --regid="$u" --init-groups \
        env HOME="$S/$u" CACHET_DIR="$cache" CACHET_UMASK=002 CACHET_STATUS_FILE="$S/$u/status" \
        timeout 120 "$CACHET_BIN" "$@")
}

section "the directories cachet makes keep the setgid bit"
as "$alice" run -- sh -c 'echo alice > a.out'
as "$bob" run -- sh -c 'echo alice > a.out' # his own entry, on the blob alice stored
as "$bob" run -- sh -c 'echo bob > b.out'
for d in blobs tmp memo; do
    [ -d "$cache/$d" ] || continue
    [ "$(stat -c %G "$cache/$d")" = "$group" ] || fail "$d is not in the shared group"
    [ -g "$cache/$d" ] || fail "$d lost the setgid bit: $(stat -c %A "$cache/$d")"
done
for d in "$cache"/blobs/*/; do
    [ -g "$d" ] || fail "$d lost the setgid bit: $(stat -c %A "$d")"
    [ "$(stat -c %G "$d")" = "$group" ] || fail "$d is not in the shared group"
done
# A blob bob stores into a directory alice made (same first two hex digits).
for i in $(seq 40); do
    as "$alice" run -- sh -c "echo a$i > x$i.out" 2> /dev/null
done
for i in $(seq 40); do
    as "$bob" run -- sh -c "echo b$i > y$i.out" 2> /dev/null
done
errs=$(grep -c '"reason": "[^"]*\(ermission\|store failed\)' "$S/$bob/status" || true)
[ "$errs" -eq 0 ] || fail "bob could not store into the group cache: $(grep -m1 ermission "$S/$bob/status")"
bob_blobs=$(find "$cache/blobs" -type f -user "$bob" | wc -l)
[ "$bob_blobs" -gt 0 ] || fail "bob stored no blob"

# bob's own files, which alice cannot read but points the cache at.
victim="$S/$bob/private"
mkdir -p "$victim/ab"
for f in keep.txt blob.notes evict.1.2 ab/cafe; do
    echo precious > "$victim/$f"
done
printf '%064d' 0 > "$victim/$(printf '%064d' 0)"
touch -d '40 days ago' "$victim"/* "$victim/ab/cafe"
chown -R "$bob:$bob" "$victim"
chmod 700 "$victim"
victim_files() { find "$victim" -type f | sort; }
before=$(victim_files)

# swap NAME: alice replaces the cache's NAME by a symlink to bob's directory.
swap() {
    as "$alice" true 2> /dev/null || true
    setpriv --reuid="$alice" --regid="$alice" --init-groups sh -c \
        "mv '$cache/$1' '$cache/$1.moved' && ln -s '$2' '$cache/$1'" ||
        fail "alice could not replace $1"
}
unswap() {
    rm "$cache/$1"
    mv "$cache/$1.moved" "$cache/$1"
}

section "memo/ replaced by a symlink: bob's clear and eviction unlink nothing there"
swap memo "$victim"
as "$bob" clear > /dev/null 2>&1 || true
[ "$(victim_files)" = "$before" ] || fail "bob's clear deleted his files through memo/"
unswap memo

section "tmp/ replaced by a symlink: bob's gc unlinks nothing there"
swap tmp "$victim"
as "$bob" gc > /dev/null 2>&1 || true
[ "$(victim_files)" = "$before" ] || fail "bob's gc deleted his files through tmp/"
unswap tmp

section "blobs/ replaced by a symlink: bob's clear unlinks nothing there"
swap blobs "$victim"
as "$bob" clear > /dev/null 2>&1 || true
[ "$(victim_files)" = "$before" ] || fail "bob's clear deleted his files through blobs/"
unswap blobs

section "index.db replaced by a symlink: bob's cachet chmods nothing"
secret="$S/$bob/secret.db"
cp "$cache/index.db" "$secret" 2> /dev/null || : > "$secret"
chown "$bob:$bob" "$secret"
chmod 600 "$secret"
swap index.db "$secret"
as "$bob" run -- sh -c 'echo again > c.out' 2> /dev/null || fail "bob's step failed"
[ "$(cat "$S/$bob/work/c.out")" = again ] || fail "bob's step did not run"
[ "$(stat -c %a "$secret")" = 600 ] || fail "bob's cachet made his 0600 file $(stat -c %a "$secret")"
unswap index.db

section "the cache still works for both"
as "$bob" run -- sh -c 'echo bob > b.out' 2> /dev/null
tail -n 1 "$S/$bob/status" | grep -q '"result": "\(hit\|miss\)"' || fail "bob's step: $(tail -n 1 "$S/$bob/status")"

section "a zstd blob replaced by another valid frame of the same size is no hit"
python3 -c "print('the real content ' * 2000)" > "$S/$alice/work/gen.txt"
chown "$alice" "$S/$alice/work/gen.txt"
cp "$S/$alice/work/gen.txt" "$S/$bob/work/gen.txt"
chown "$bob" "$S/$bob/work/gen.txt"
as "$alice" run -- cp gen.txt copied.txt
# bob's own entry (his HOME and USER are keyed) on the blob alice stored.
as "$bob" run -- cp gen.txt copied.txt
rm "$S/$bob/work/copied.txt"
hex=$(sha256sum < "$S/$alice/work/gen.txt" | cut -c 1-64)
zst="$cache/blobs/${hex:0:2}/$hex.zst"
[ -f "$zst" ] || fail "no compressed blob stored"
real_size=$(wc -c < "$S/$alice/work/gen.txt")
python3 -c "import sys; sys.stdout.write(('the fake content ' * 2000 + '\n')[:$real_size])" > "$S/fake.txt"
zstd -q -c "$S/fake.txt" > "$S/fake.zst"
setpriv --reuid="$alice" --regid="$alice" --init-groups sh -c \
    "cp '$S/fake.zst' '$zst.new' && mv -f '$zst.new' '$zst'" || fail "alice could not replace a blob"
as "$bob" run -- cp gen.txt copied.txt 2> /dev/null
cmp -s "$S/$bob/work/gen.txt" "$S/$bob/work/copied.txt" || fail "bob's hit restored another content"
tail -n 1 "$S/$bob/status" | grep -q '"result": "miss"' || fail "a swapped blob still hit: $(tail -n 1 "$S/$bob/status")"
