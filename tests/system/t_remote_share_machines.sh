# Two machines as real ones differ, through one remote cache: CI and a
# developer with their own user, HOME, cache and checkout path, a PATH with
# one more directory that holds no tool on the developer's side, and CI's
# per-run variables (GITHUB_RUN_ID, CI_JOB_ID, a hyperfine offset) on the
# other; and the same machine's ld.so.cache (which is still keyed by its
# bytes). With the README's recipe (hermetic_env = PATH,LANG,LC_ALL and
# base_dir at the checkout) the developer's build hits every compile with
# byte-identical objects; without hermetic_env, between two shells of one
# user that differ only in PATH, checkout and per-run variables, too. A
# program that PATH now finds elsewhere still misses.
#
# Sources: Lua's (CACHET_TEST_LUA_SRC, or the tree bench/run_core.sh
# unpacks), else the C examples that Debian's -dev packages ship.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/remote_lib.sh"

start_nginx web
URL="http://127.0.0.1:$NGINX_PORT/cache timeout=2s"

# A dozen files tell as much as all of them (t_remote_share builds them
# all), in a test that builds three times.
share_code_base 12
mkdir -p "$T/empty-bin"

# as_machine ci|dev CMD...: CMD as that machine runs it.
as_machine() {
    local m=$1
    shift
    local path=/usr/local/bin:/usr/bin:/bin extra=()
    if [ "$m" = dev ]; then
        path=$T/empty-bin:$path
    else
        # Not CI=true: tools switch behaviour on it (output, colours),
        # so it stays keyed; the hermetic mode leaves it out.
        extra=(GITHUB_RUN_ID="$RANDOM$RANDOM" CI_JOB_ID="$RANDOM"
               HYPERFINE_RANDOMIZED_ENVIRONMENT_OFFSET=XXXXXXX)
    fi
    env -i PATH="$path" LANG=C.UTF-8 LC_ALL=C HOME="$HOME_OF" USER="$USER_OF" \
        LOGNAME="$USER_OF" CACHET_DIR="$T/$m/.cache/cachet" \
        CACHET_STATUS_FILE="$CACHET_STATUS_FILE" CACHET_REMOTE="$URL" \
        CACHET_BASE_DIR="$CHECKOUT" ${HERMETIC:+CACHET_HERMETIC_ENV="$HERMETIC"} \
        "${extra[@]}" "$@"
}

# build MACHINE CHECKOUT: compiles every file there; prints the remote hits.
build() {
    local m=$1
    CHECKOUT=$2
    rm -rf "$CHECKOUT"
    mkdir -p "$CHECKOUT"
    cp "$T/pristine"/* "$CHECKOUT/"
    local before
    before=$(status_count)
    (cd "$CHECKOUT" && printf '%s\n' "${FILES[@]}" |
        as_machine "$m" xargs -P2 -I{} "$CACHET_BIN" run -- gcc $CFLAGS -c {} -o {}.o) ||
        fail "$m's build failed"
    tail -n +$((before + 1)) "$CACHET_STATUS_FILE" | grep -c '"reason": "remote"' || true
}

share() {
    local what=$1 ci_dir=$2 dev_dir=$3 hits total=${#FILES[@]}
    rm -rf "$T/ci" "$T/dev"
    hits=$(HOME_OF=$T/ci USER_OF=ci build ci "$ci_dir")
    [ "$hits" -eq 0 ] || fail "$what: CI's first build hit the remote"
    HOME_OF=$T/ci USER_OF=ci CHECKOUT=$ci_dir as_machine ci "$CACHET_BIN" remote flush -q ||
        fail "CI's uploads failed"
    hits=$(HOME_OF=$HOME_DEV USER_OF=$USER_DEV build dev "$dev_dir")
    echo "$what ($NAME): the developer hit $hits of $total"
    for f in "${FILES[@]}"; do
        assert_same "$ci_dir/$f.o" "$dev_dir/$f.o"
    done
    [ "$hits" -eq "$total" ] || fail "$what: only $hits of $total steps hit"
}

section "hermetic_env and base_dir: another user, HOME, checkout and PATH"
HERMETIC="PATH,LANG,LC_ALL"
HOME_DEV=$T/dev USER_DEV=dev
share "two users" "$T/builds/ws1/$NAME" "$T/dev/src/deep/er/$NAME"

section "without hermetic_env: one user, another checkout, PATH and CI variables"
HERMETIC=
HOME_DEV=$T/ci USER_DEV=ci
share "two shells" "$T/builds/ws1/$NAME" "$T/builds/ws2/x/$NAME"

section "a compiler that PATH now finds elsewhere misses"
printf '#!/bin/sh\nexec gcc "$@"\n' > "$T/empty-bin/cc"
chmod +x "$T/empty-bin/cc"
CHECKOUT="$T/builds/ws2/x/$NAME"
(cd "$CHECKOUT" && HOME_OF=$T/ci USER_OF=ci as_machine ci "$CACHET_BIN" run -- sh -c "cc $CFLAGS -c ${FILES[0]} -o ${FILES[0]}.o")
HOME_OF=$T/ci USER_OF=ci as_machine ci "$CACHET_BIN" remote flush -q || fail "flush failed"
(cd "$CHECKOUT" && HOME_OF=$T/ci USER_OF=ci as_machine dev "$CACHET_BIN" run -- sh -c "cc $CFLAGS -c ${FILES[0]} -o ${FILES[0]}.o")
expect miss ""
check_status_file_format
