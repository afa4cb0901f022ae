# cmake --install puts the binary, the manual, the bash completion and the
# Python module under the prefix, and each works from there: the installed
# cachet caches a step, man shows the page, bash completes, and the installed
# module finds the installed cachet beside it without PATH or CACHET_BIN.
source "$(dirname "$0")/lib.sh"

BUILD=$(dirname "$CACHET_BIN")
[ -f "$BUILD/cmake_install.cmake" ] ||
    fail "$BUILD (the directory of CACHET_BIN) is not a CMake build directory"
P="$T/prefix"

section "cmake --install --prefix"
cmake --install "$BUILD" --prefix "$P" > "$T/install.log" 2>&1 || { cat "$T/install.log" >&2; fail "cmake --install failed"; }
for f in bin/cachet share/man/man1/cachet.1 share/bash-completion/completions/cachet \
    share/cachet/python/cachet.py; do
    [ -f "$P/$f" ] || fail "cmake --install did not install $f"
done
[ -x "$P/bin/cachet" ] || fail "the installed cachet is not executable"

section "the installed cachet caches a step"
W=$(workdir)
cd "$W"
echo 'int main(void) { return 0; }' > m.c
grep -q '^cachet ' <<< "$("$P/bin/cachet" --version)" || fail "the installed cachet has no --version"
CACHET_BIN="$P/bin/cachet" step gcc -c m.c -o m.o
expect miss "new step"
rm m.o
CACHET_BIN="$P/bin/cachet" step gcc -c m.c -o m.o
expect hit
assert_exists m.o

section "the installed cachet finds its plugins (signatures: cachet keygen)"
for f in lib/cachet/libcachet-remote-http.so lib/cachet/libcachet-remote-redis.so \
    lib/cachet/libcachet-ed25519.so lib/cachet/libcachet-preload.so \
    lib/cachet/libcachet-audit.so; do
    [ -f "$P/$f" ] || fail "cmake --install did not install $f"
done
# A statically linked cachet hands its other subcommands (keygen below) and
# runs with remotes to the dynamic twin installed beside the plugins.
if ! readelf -d "$P/bin/cachet" 2> /dev/null | grep -q NEEDED; then
    [ -x "$P/lib/cachet/cachet-dynamic" ] || fail "a static cachet was installed without lib/cachet/cachet-dynamic"
fi
# The tracer's libraries from the prefix reach the step's programs.
"$P/bin/cachet" run -- sh -c 'echo "$LD_PRELOAD"; echo "$LD_AUDIT"' > "$W/libs.out"
[ "$(realpath "$(sed -n 1p "$W/libs.out")")" = "$(realpath "$P/lib/cachet/libcachet-preload.so")" ] ||
    fail "the step's programs do not preload the installed library: $(cat "$W/libs.out")"
[ "$(realpath "$(sed -n 2p "$W/libs.out")")" = "$(realpath "$P/lib/cachet/libcachet-audit.so")" ] ||
    fail "the step's programs do not audit with the installed library: $(cat "$W/libs.out")"
"$P/bin/cachet" keygen -f "$W/team.key" > "$W/keygen.out" || fail "the installed cachet keygen failed"
grep -Eq '[0-9a-f]{64}' "$W/keygen.out" || fail "keygen printed no public key: $(cat "$W/keygen.out")"
[ -f "$W/team.key.pub" ] || fail "keygen wrote no public key file"

section "man finds the installed page"
if command -v man > /dev/null; then
    MANPATH="$P/share/man" MANWIDTH=80 man cachet 2> "$T/man.err" > "$T/man.txt" || fail "man cachet failed: $(cat "$T/man.err")"
    grep -q '^NAME' "$T/man.txt" || fail "man cachet shows no NAME section"
    grep -q 'cachet run' "$T/man.txt" || fail "man cachet does not describe cachet run"
else
    echo "(man is not installed: checked the page with groff instead)"
    grep -q '^NAME' <<< "$(groff -man -Tascii "$P/share/man/man1/cachet.1")" || fail "the installed page does not format"
fi

section "the installed completion completes"
got=$(PATH="$P/bin:$PATH" bash -c '
    source "$1"
    COMP_WORDS=(cachet st)
    COMP_CWORD=1
    _cachet
    printf "%s\n" "${COMPREPLY[@]}"' complete "$P/share/bash-completion/completions/cachet")
grep -qx stats <<< "$got" || fail "the installed completion does not complete 'cachet st' to stats"

section "the installed module runs the installed cachet"
cat > gen.py <<'EOF'
import sys
open(sys.argv[1], "w").write("generated\n")
EOF
env -u CACHET_BIN PATH=/usr/bin:/bin PYTHONPATH="$P/share/cachet/python" python3 - "$P" <<'EOF' ||
import os, sys
import cachet
prefix = sys.argv[1]
assert os.path.dirname(cachet.__file__) == os.path.join(prefix, "share/cachet/python"), cachet.__file__
assert cachet.find_cachet() == os.path.join(prefix, "bin/cachet"), cachet.find_cachet()
r = cachet.run(["python3", "gen.py", "out.txt"], check=True)
assert r.result == "miss", r
r = cachet.run(["python3", "gen.py", "out.txt"], check=True)
assert r.cached, r
assert open("out.txt").read() == "generated\n"
EOF
    fail "the installed Python module did not work (see above)"
