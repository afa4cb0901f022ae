# Real cache servers for the remote tests (sourced after lib.sh): nginx with
# its WebDAV methods as an HTTP cache, redis-server as a Redis cache. Each
# listens on 127.0.0.1 on a free port, keeps its files in $T, and is stopped
# by the exit trap (track_pid).

command -v nginx >/dev/null || command -v /usr/sbin/nginx >/dev/null ||
    skip "nginx is not installed (scripts/setup-debian.sh)"
command -v redis-server >/dev/null ||
    skip "redis-server is not installed (scripts/setup-debian.sh)"
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

# lib.sh's helpers start python3 several times per step; a version-manager
# shim in front of it (pyenv) costs half a second a call. The system's
# python3 is all they need.
PY=python3
if [ -x /usr/bin/python3 ]; then
    PY=/usr/bin/python3
    python3() { /usr/bin/python3 "$@"; }
fi

# The cachet-remote-testtool beside the cachet binary (built with it).
TESTTOOL=$(dirname "$CACHET_BIN")/cachet-remote-testtool

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

wait_port() {
    local port=$1 i
    for i in $(seq 100); do
        if python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2).close()' "$port" 2>/dev/null; then
            return 0
        fi
        sleep 0.05
    done
    fail "nothing listens on port $port"
}

# start_nginx NAME: serves $T/NAME/root over WebDAV; sets NGINX_PORT,
# NGINX_ROOT, NGINX_PID. Under /basic/ it wants user "ci" with password
# "ci-s3cret" (Basic auth), under /bearer/ the token "tok-s3cret"; under
# /no-put/ it answers PUT with 501.
start_nginx() {
    local d="$T/$1"
    mkdir -p "$d/root" "$d/tmp"
    [ -f "$d/htpasswd" ] || printf 'ci:%s\n' "$(openssl passwd -apr1 ci-s3cret)" > "$d/htpasswd"
    NGINX_ROOT="$d/root"
    NGINX_PORT=${NGINX_PORT_WANTED:-$(free_port)}
    cat > "$d/nginx.conf" <<CONF
daemon off;
master_process off;
user root;
worker_processes 1;
pid $d/nginx.pid;
error_log $d/error.log;
events { worker_connections 256; }
http {
    access_log $d/access.log;
    client_body_temp_path $d/tmp/body;
    proxy_temp_path $d/tmp/proxy;
    fastcgi_temp_path $d/tmp/fastcgi;
    uwsgi_temp_path $d/tmp/uwsgi;
    scgi_temp_path $d/tmp/scgi;
    server {
        listen 127.0.0.1:$NGINX_PORT;
        root $d/root;
        client_max_body_size 1g;
        log_not_found off;
        location / {
            dav_methods PUT DELETE;
            create_full_put_path on;
            dav_access user:rw group:rw all:r;
        }
        location /basic/ {
            auth_basic cache;
            auth_basic_user_file $d/htpasswd;
            dav_methods PUT DELETE;
            create_full_put_path on;
        }
        # A server that refuses uploads (PUT answered 501, GET works).
        location /no-put/ {
            if (\$request_method = PUT) { return 501; }
        }
        location /bearer/ {
            if (\$http_authorization != "Bearer tok-s3cret") { return 401; }
            dav_methods PUT DELETE;
            create_full_put_path on;
        }
    }
}
CONF
    "$NGINX" -c "$d/nginx.conf" -e "$d/error.log" </dev/null >"$d/stdout.log" 2>&1 &
    NGINX_PID=$!
    track_pid "$NGINX_PID"
    wait_port "$NGINX_PORT"
}

stop_nginx() {
    kill "$NGINX_PID" 2>/dev/null || true
    wait "$NGINX_PID" 2>/dev/null || true
}

# start_redis NAME: sets REDIS_PORT, REDIS_PID.
start_redis() {
    local d="$T/$1"
    mkdir -p "$d"
    REDIS_PORT=${REDIS_PORT_WANTED:-$(free_port)}
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
        --dir "$d" --daemonize no --loglevel warning </dev/null >"$d/redis.log" 2>&1 &
    REDIS_PID=$!
    track_pid "$REDIS_PID"
    wait_port "$REDIS_PORT"
}

stop_redis() {
    kill "$REDIS_PID" 2>/dev/null || true
    wait "$REDIS_PID" 2>/dev/null || true
}

# remote_counter NAME: a remote_* counter of the current CACHET_DIR.
remote_counter() {
    cachet remote status --json | python3 -c '
import json, sys
print(json.load(sys.stdin)["counters"].get(sys.argv[1], 0))' "$1"
}

# The entry file on the nginx server (start_nginx) whose outputs include
# the path $1.
entry_with_output() {
    local f
    for f in "$NGINX_ROOT"/cache/ac/*; do
        if [ "$("$TESTTOOL" kind "$f")" = entry ] && "$TESTTOOL" paths "$f" | grep -qxF "$1"; then
            echo "$f"
            return 0
        fi
    done
    fail "no entry on the server has the output $1"
}

# share_code_base [MAX]: the C files two "machines" build, copied into
# $T/pristine: Lua's (CACHET_TEST_LUA_SRC, or the tree bench/run_core.sh
# unpacks), else the examples Debian's -dev packages ship. Sets NAME, CFLAGS
# and FILES (those that compile here without cachet, at most MAX).
share_code_base() {
    local max=${1:-0} SRC=${CACHET_TEST_LUA_SRC:-} d f b
    if [ -z "$SRC" ]; then
        for d in /tmp/cachet-bench/srcpkg/lua5.4-*/src; do
            [ -f "$d/lapi.c" ] && SRC=$d && break
        done
    fi
    mkdir -p "$T/pristine"
    if [ -n "$SRC" ] && [ -f "$SRC/lapi.c" ]; then
        NAME=lua
        cp "$SRC"/*.c "$SRC"/*.h "$T/pristine/"
        CFLAGS="-O2 -Wall -DLUA_COMPAT_5_3 -DLUA_USE_LINUX"
    else
        NAME=examples
        for f in /usr/share/doc/{zlib1g-dev,libzstd-dev,libhiredis-dev,liblzma-dev,libexpat1-dev}/examples/*.c; do
            [ -f "$f" ] || continue
            b=$(basename "$f")
            [ -e "$T/pristine/$b" ] && continue
            cp "$f" "$T/pristine/$b"
        done
        cp /usr/share/doc/libzstd-dev/examples/*.h "$T/pristine/" 2>/dev/null || true
        CFLAGS="-O2"
    fi
    FILES=()
    for f in "$T/pristine"/*.c; do
        [ "$max" -eq 0 ] || [ "${#FILES[@]}" -lt "$max" ] || break
        if gcc $CFLAGS -fsyntax-only -I"$T/pristine" "$f" 2>/dev/null; then
            FILES+=("$(basename "$f")")
        fi
    done
    echo "code base: $NAME, ${#FILES[@]} C files"
    [ "${#FILES[@]}" -ge 10 ] || fail "too few C files to build (${#FILES[@]})"
}
