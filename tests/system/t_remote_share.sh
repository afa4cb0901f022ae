# Sharing across users: two users (two HOMEs, two USERs, different
# environments) build the same sources, each in a checkout under their own
# HOME, through one remote cache. Without the hermetic mode nothing is
# shared (HOME, USER and the rest are keyed); with hermetic_env the steps run
# with only the listed variables, paths under HOME are keyed relative to it,
# and the second user's build hits the first one's results, byte for byte.
#
# Sources: Lua's (CACHET_TEST_LUA_SRC, or the tree bench/run_core.sh
# unpacks), else the C examples that Debian's -dev packages ship.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/remote_lib.sh"

start_nginx web
URL="http://127.0.0.1:$NGINX_PORT/cache timeout=2s"

# ---- the code base ----
share_code_base

# as_user NAME CMD...: CMD with NAME's HOME, USER, cache and habits.
as_user() {
    local u=$1
    shift
    env -i PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 LC_ALL=C \
        HOME="$T/home/$u" USER="$u" LOGNAME="$u" EDITOR="$u-editor" SESSION_ID="$RANDOM$u" \
        CACHET_DIR="$T/home/$u/.cache/cachet" CACHET_STATUS_FILE="$CACHET_STATUS_FILE" \
        CACHET_REMOTE="$URL" ${HERMETIC:+CACHET_HERMETIC_ENV="$HERMETIC"} "$@"
}

# build NAME: compiles every file in NAME's checkout, two at a time; prints
# how many steps hit the remote.
build() {
    local u=$1 dir="$T/home/$1/src/$NAME"
    rm -rf "$dir"
    mkdir -p "$dir"
    cp "$T/pristine"/* "$dir/"
    local before
    before=$(status_count)
    (cd "$dir" && printf '%s\n' "${FILES[@]}" |
        as_user "$u" xargs -P2 -I{} "$CACHET_BIN" run -- gcc $CFLAGS -c {} -o {}.o) ||
        fail "$u's build failed"
    tail -n +$((before + 1)) "$CACHET_STATUS_FILE" | grep -c '"reason": "remote"' || true
}

section "without the hermetic mode, users share nothing"
mkdir -p "$T/home/alice" "$T/home/bob"
(cd "$T/home/alice" && printf 'int x;\n' > one.c && as_user alice "$CACHET_BIN" run -- gcc -c one.c)
as_user alice "$CACHET_BIN" remote flush -q || fail "flush failed"
(cd "$T/home/bob" && printf 'int x;\n' > one.c && as_user bob "$CACHET_BIN" run -- gcc -c one.c)
expect miss "new step"

section "the hermetic mode runs steps with only the listed variables"
HERMETIC="PATH,LANG,LC_ALL"
(cd "$T/home/alice" && as_user alice "$CACHET_BIN" run -- sh -c 'echo "${EDITOR:-unset} ${HOME:-unset} $LC_ALL" > env.txt')
assert_content "$T/home/alice/env.txt" "unset unset C"

section "with the hermetic mode, the second user hits the first one's build"
t0=$(date +%s%N)
hits=$(build alice)
alice_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$hits" -eq 0 ] || fail "alice's first build hit the remote"
as_user alice "$CACHET_BIN" remote flush -q || fail "alice's uploads failed"
t0=$(date +%s%N)
hits=$(build bob)
bob_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
total=${#FILES[@]}
echo "cross-user hit rate ($NAME, $total files): $hits/$total = $((100 * hits / total))%;" \
    "alice's build ${alice_ms} ms, bob's ${bob_ms} ms"
for f in "${FILES[@]}"; do
    assert_same "$T/home/alice/src/$NAME/$f.o" "$T/home/bob/src/$NAME/$f.o"
done
[ "$hits" -eq "$total" ] || fail "only $hits of $total steps hit across users"
# Bob's remote hits were stored in his own cache: his next build is local.
(cd "$T/home/bob/src/$NAME" && as_user bob "$CACHET_BIN" run -- gcc $CFLAGS -c "${FILES[0]}" -o "${FILES[0]}.o")
expect hit ""
# A file bob edits is his own: the step misses, and runs.
echo '/* bob was here */' >> "$T/home/bob/src/$NAME/${FILES[1]}"
(cd "$T/home/bob/src/$NAME" && as_user bob "$CACHET_BIN" run -- gcc $CFLAGS -c "${FILES[1]}" -o "${FILES[1]}.o")
expect miss ""

check_status_file_format
