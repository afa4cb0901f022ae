# Two machines as real ones differ, through one remote cache, set up as the
# README's "Sharing across machines" says: CI (root here) signs and writes;
# the developer is another user (nobody's uid, through setpriv) who reads
# only what CI signed, with their own HOME, cache, config file and checkout
# path, a PATH with one more directory that holds no tool, no CI variables
# (CI has GITHUB_RUN_ID, CI_JOB_ID and a hyperfine offset), and, in a
# private mount namespace, another /etc/ld.so.cache (ldconfig -C over the
# system's directories and one more holding an unrelated library). With
# hermetic_env = PATH,LANG,LC_ALL and base_dir at each checkout, the
# developer's build hits at least 31 of Lua's 32 compiles with
# byte-identical objects; with an ld.so.cache that maps a library the
# compiler loads (cc1's libz.so.1) to another file, it misses. Without
# hermetic_env, two shells of one user that differ only in PATH, checkout
# and per-run variables share too; a program that PATH now finds elsewhere
# misses.
#
# Sources: Lua 5.4 (CACHET_TEST_LUA_SRC, else Debian's lua5.4 source
# package, shared with t_build_make through build_lib.sh).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/remote_lib.sh"
source "$(dirname "$0")/build_lib.sh"

[ "$(id -u)" -eq 0 ] || skip "the developer's side needs root to become another user"
for tool in setpriv unshare ldconfig mount; do
    command -v "$tool" > /dev/null || skip "$tool is not installed"
done
unshare -m --propagation private true 2> /dev/null || skip "no private mount namespace here"
[ -s /etc/ld.so.cache ] || skip "no /etc/ld.so.cache"
DEV_UID=$(id -u nobody 2> /dev/null || echo 65534)
DEV_GID=$(id -g nobody 2> /dev/null || echo 65534)
DEV_USER=$(id -un "$DEV_UID" 2> /dev/null || echo nobody)
[ "$DEV_UID" -ne 0 ] || skip "nobody is root here"

start_nginx web
URL="http://127.0.0.1:$NGINX_PORT/cache timeout=2s"

if [ -z "${CACHET_TEST_LUA_SRC:-}" ]; then
    CACHET_TEST_LUA_SRC=$(debian_source --skip-patches lua5.4)/src
fi
share_code_base 32
[ "$NAME" = lua ] || fail "Lua's sources are not where share_code_base looks"
# -O0: a third of -O2's time, for three builds; what is keyed is the same.
CFLAGS=${CFLAGS/-O2/-O0}
mkdir -p "$T/empty-bin"
# The developer reaches the test's files as the other user: nothing else.
chmod 755 "$T"

# ---- the developer's machine ----
DEV_HOME=$T/dev
mkdir -p "$DEV_HOME" "$T/ld"
cachet keygen -f "$T/ci.key" > /dev/null
chmod 644 "$T/ci.key.pub"
DEV_STATUS=$DEV_HOME/status.jsonl
: > "$DEV_STATUS"
chown -R "$DEV_UID:$DEV_GID" "$DEV_HOME"
# dev_config KEY VALUE: in the developer's own config file.
dev_config() {
    setpriv --reuid="$DEV_UID" --regid="$DEV_GID" --clear-groups -- \
        env -i HOME="$DEV_HOME" "$CACHET_BIN" config "$@" || fail "cachet config $1 as the developer failed"
}
dev_config remote "$URL read-only"
dev_config trusted_keys "$T/ci.key.pub"
dev_config hermetic_env PATH,LANG,LC_ALL

# ld_cache OUT DIR...: an ld.so.cache of the system's directories after
# DIRs, made in a private mount namespace so that ldconfig's aux-cache
# (/var/cache/ldconfig) stays the system's.
ld_cache() {
    local out=$1 conf=$1.conf
    shift
    printf '%s\n' "$@" > "$conf"
    echo "include /etc/ld.so.conf.d/*.conf" >> "$conf"
    unshare -m --propagation private sh -c '
        [ ! -d /var/cache/ldconfig ] || mount -t tmpfs tmpfs /var/cache/ldconfig
        exec ldconfig -C "$1" -f "$2"' sh "$out" "$conf" ||
        fail "test setup: ldconfig -C $out failed"
    chmod 644 "$out"
}
# One more library installed, for nothing the build runs.
mkdir -p "$T/ld/extra"
echo 'int unrelated(void) { return 1; }' > "$T/ld/unrelated.c"
gcc -shared -fPIC -Wl,-soname,libcachet-unrelated.so.1 -o "$T/ld/extra/libcachet-unrelated.so.1" \
    "$T/ld/unrelated.c"
ld_cache "$T/ld/dev.cache" "$T/ld/extra"
# (Whole outputs read: grep -q would stop the pipe early, and pipefail.)
[[ "$(ldconfig -p -C "$T/ld/dev.cache")" == *libcachet-unrelated.so.1* ]] ||
    fail "test setup: the developer's ld.so.cache lacks the extra library"
# A library the compiler loads, found at another path: the same bytes, but
# nothing tells the cache that, as after an upgrade that moved it.
ZLIB=$(ldd "$(gcc -print-prog-name=cc1)" | awk '$1 == "libz.so.1" { print $3 }')
[ -n "$ZLIB" ] || skip "cc1 loads no libz.so.1 here"
mkdir -p "$T/ld/moved"
cp -L "$ZLIB" "$T/ld/moved/libz.so.1"
ld_cache "$T/ld/moved.cache" "$T/ld/moved"
[ "$(ldconfig -p -C "$T/ld/moved.cache" | awk '$1 == "libz.so.1" && !n++ { print $NF }')" = \
    "$T/ld/moved/libz.so.1" ] ||
    fail "test setup: the second ld.so.cache does not map libz.so.1 to the moved copy"

# as_dev LDCACHE CMD...: CMD as the developer runs it, on their machine
# whose /etc/ld.so.cache is LDCACHE (a private mount namespace each call).
# The sanitizer build's options pass through env -i: LeakSanitizer cannot
# stop the world of a process that changed its uid, and the suite leaves
# leaks to the unit tests (detect_leaks=0).
as_dev() {
    local ldcache=$1
    shift
    unshare -m --propagation private sh -c 'mount --bind "$1" /etc/ld.so.cache && shift && exec "$@"' \
        sh "$ldcache" setpriv --reuid="$DEV_UID" --regid="$DEV_GID" --clear-groups -- \
        env -i PATH="$T/empty-bin:/usr/local/bin:/usr/bin:/bin" LANG=C.UTF-8 LC_ALL=C \
        ${ASAN_OPTIONS:+ASAN_OPTIONS="$ASAN_OPTIONS"} HOME="$DEV_HOME" USER="$DEV_USER" LOGNAME="$DEV_USER" CACHET_STATUS_FILE="$DEV_STATUS" \
        CACHET_BASE_DIR="$CHECKOUT" "$@"
}

# as_ci CMD...: CMD as CI runs it (as_ci shell2: another shell of the same
# user, with its own cache, without CI's variables and with the developer's
# PATH).
as_ci() {
    local path=/usr/local/bin:/usr/bin:/bin extra=()
    local cache=$T/ci/.cache/cachet
    if [ "$1" = shell2 ]; then
        shift
        path=$T/empty-bin:$path
        cache=$T/shell2/.cache/cachet
    else
        # Not CI=true: tools switch behaviour on it (output, colours),
        # so it stays keyed; the hermetic mode leaves it out.
        extra=(GITHUB_RUN_ID="$RANDOM$RANDOM" CI_JOB_ID="$RANDOM"
               HYPERFINE_RANDOMIZED_ENVIRONMENT_OFFSET=XXXXXXX)
    fi
    env -i PATH="$path" LANG=C.UTF-8 LC_ALL=C HOME="$T/ci" USER=ci LOGNAME=ci \
        ${ASAN_OPTIONS:+ASAN_OPTIONS="$ASAN_OPTIONS"} \
        CACHET_DIR="$cache" CACHET_STATUS_FILE="$CACHET_STATUS_FILE" \
        CACHET_REMOTE="$URL" CACHET_SIGN_KEY="$T/ci.key" CACHET_TRUSTED_KEYS="$T/ci.key.pub" \
        CACHET_BASE_DIR="$CHECKOUT" ${HERMETIC:+CACHET_HERMETIC_ENV="$HERMETIC"} \
        "${extra[@]}" "$@"
}

# checkout DIR [OWNER]: a fresh copy of the sources at DIR; sets CHECKOUT.
checkout() {
    CHECKOUT=$1
    rm -rf "$CHECKOUT"
    mkdir -p "$CHECKOUT"
    cp "$T/pristine"/* "$CHECKOUT/"
    [ -z "${2:-}" ] || chown -R "$2" "$CHECKOUT"
}

# compile_all STATUSFILE RUNNER... : compiles the checkout's files, two at a
# time, each through `RUNNER... cachet run`; prints the remote hits.
compile_all() {
    local status=$1 before
    shift
    before=$(wc -l < "$status")
    (cd "$CHECKOUT" && printf '%s\n' "${FILES[@]}" |
        "$@" xargs -P2 -I{} "$CACHET_BIN" run -- gcc $CFLAGS -c {} -o {}.o) ||
        fail "the build through $1 failed"
    tail -n +$((before + 1)) "$status" | grep -c '"reason": "remote"' || true
}

section "two machines: another user, HOME, checkout, PATH and ld.so.cache"
HERMETIC="PATH,LANG,LC_ALL"
CI_DIR=$T/builds/ws1/$NAME
checkout "$CI_DIR"
hits=$(compile_all "$CACHET_STATUS_FILE" as_ci)
[ "$hits" -eq 0 ] || fail "CI's first build hit the remote"
as_ci "$CACHET_BIN" remote flush -q || fail "CI's uploads failed"
DEV_DIR=$DEV_HOME/src/deep/er/$NAME
checkout "$DEV_DIR" "$DEV_UID:$DEV_GID"
hits=$(compile_all "$DEV_STATUS" as_dev "$T/ld/dev.cache")
echo "two machines ($NAME): the developer hit $hits of ${#FILES[@]}"
for f in "${FILES[@]}"; do
    assert_same "$CI_DIR/$f.o" "$DEV_DIR/$f.o"
done
[ "$hits" -ge $((${#FILES[@]} - 1)) ] || fail "the developer hit only $hits of ${#FILES[@]}"

section "a library the compiler loads maps elsewhere: the developer's compile misses"
f=${FILES[0]}
rm -f "$DEV_DIR/$f.o"
(cd "$DEV_DIR" && as_dev "$T/ld/moved.cache" "$CACHET_BIN" run -- gcc $CFLAGS -c "$f" -o "$f.o") ||
    fail "the compile under the moved libz failed"
line=$(tail -n 1 "$DEV_STATUS")
case $line in
*'"result": "miss"'*) ;;
*) fail "a compile whose libz.so.1 maps elsewhere did not miss: $line" ;;
esac
assert_same "$CI_DIR/$f.o" "$DEV_DIR/$f.o"
# The lines the other user wrote, for the format check at the end.
cat "$DEV_STATUS" >> "$CACHET_STATUS_FILE"

section "without hermetic_env: one user, another checkout, PATH and CI variables"
HERMETIC=
FILES=("${FILES[@]:0:12}")
rm -rf "$T/ci"
CI_DIR=$T/builds/ws1/$NAME
checkout "$CI_DIR"
hits=$(compile_all "$CACHET_STATUS_FILE" as_ci)
[ "$hits" -eq 0 ] || fail "CI's first build hit the remote"
as_ci "$CACHET_BIN" remote flush -q || fail "CI's uploads failed"
checkout "$T/builds/ws2/x/$NAME"
hits=$(compile_all "$CACHET_STATUS_FILE" as_ci shell2)
echo "two shells ($NAME): the second hit $hits of ${#FILES[@]}"
for f in "${FILES[@]}"; do
    assert_same "$CI_DIR/$f.o" "$CHECKOUT/$f.o"
done
[ "$hits" -eq "${#FILES[@]}" ] || fail "two shells: only $hits of ${#FILES[@]} steps hit"

section "a compiler that PATH now finds elsewhere misses"
printf '#!/bin/sh\nexec gcc "$@"\n' > "$T/empty-bin/cc"
chmod +x "$T/empty-bin/cc"
f=${FILES[0]}
(cd "$CHECKOUT" && as_ci "$CACHET_BIN" run -- sh -c "cc $CFLAGS -c $f -o $f.o")
as_ci "$CACHET_BIN" remote flush -q || fail "flush failed"
(cd "$CHECKOUT" && as_ci shell2 "$CACHET_BIN" run -- sh -c "cc $CFLAGS -c $f -o $f.o")
expect miss ""
check_status_file_format
