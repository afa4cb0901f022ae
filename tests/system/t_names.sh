# Where a name led is keyed: a step that works from where a symlink led (a
# chdir, a directory descriptor, an exec whose /proc/self/exe or $ORIGIN it
# reads, a write through a final symlink) misses once the link points
# elsewhere, and gives what a plain run gives; reads through /proc/self/cwd,
# /proc/self/root and /dev/fd/N are inputs; openat2's confined lookups are
# not cached. Ordinary steps keep hitting.
source "$(dirname "$0")/lib.sh"

command -v gcc >/dev/null || skip "gcc not installed"
command -v make >/dev/null || skip "make not installed"

W=$(workdir)
cd "$W"

# same_as_plain FILE CMD...: runs CMD through cachet (RC, status line), keeps
# FILE's result, runs CMD plainly and fails unless both left the same FILE
# and exit status.
same_as_plain() {
    local file=$1
    shift
    step "$@"
    local cached_rc=$RC
    cp -P "$file" "$T/cached" 2>/dev/null || rm -f "$T/cached"
    rm -f "$file"
    set +e
    "$@"
    local plain_rc=$?
    set -e
    [ "$cached_rc" -eq "$plain_rc" ] || fail "$*: exit status $cached_rc through cachet, $plain_rc plain"
    cmp -s "$file" "$T/cached" || fail "$*: $file differs from a plain run's"
}

mkdir build-debug build-release
echo debug > build-debug/conf
echo release > build-release/conf
printf 'all:\n\tcat conf > ../make.out\n' > build-debug/Makefile
cp build-debug/Makefile build-release/Makefile

for how in shell make python; do
    section "a chdir through a symlink ($how)"
    case $how in
        shell) cmd=(sh -c 'cd build && cat conf > ../out.txt'); out=out.txt ;;
        make) cmd=(make -s -C build); out=make.out ;;
        python) cmd=(python3 -c 'import os; os.chdir("build"); open("../py.out", "w").write(open("conf").read())'); out=py.out ;;
    esac
    ln -sfn build-debug build
    same_as_plain "$out" "${cmd[@]}"
    expect miss "new step"
    assert_content "$out" debug
    same_as_plain "$out" "${cmd[@]}"
    expect hit
    ln -sfn build-release build
    same_as_plain "$out" "${cmd[@]}"
    expect miss "inputs changed"
    assert_content "$out" release
    ln -sfn build-debug build
    same_as_plain "$out" "${cmd[@]}"
    expect hit
    assert_content "$out" debug
done

section "a directory descriptor opened through a symlink"
dirfd=(python3 -c 'import os
fd = os.open("build", os.O_RDONLY | os.O_DIRECTORY)
f = os.open("conf", os.O_RDONLY, dir_fd=fd)
open("fd.out", "w").write(os.read(f, 100).decode())')
same_as_plain fd.out "${dirfd[@]}"
expect miss "new step"
ln -sfn build-release build
same_as_plain fd.out "${dirfd[@]}"
expect miss "inputs changed"
assert_content fd.out release

section "an identical program reached through a retargeted link reads by /proc/self/exe"
cat > prog.c <<'EOF'
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>
int main(void)
{
	char exe[PATH_MAX], data[PATH_MAX + 32], line[64] = "";
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n < 0)
		return 2;
	exe[n] = '\0';
	snprintf(data, sizeof data, "%s/../share/data", dirname(exe));
	FILE *f = fopen(data, "r");
	if (!f || !fgets(line, sizeof line, f))
		return 3;
	fputs(line, stdout);
	return 0;
}
EOF
gcc -O0 -o prog prog.c
for v in v1 v2; do
    mkdir -p $v/bin $v/share
    cp prog $v/bin/prog
    echo "data of $v" > $v/share/data
done
ln -sfn v1 current
run=(sh -c 'current/bin/prog > exe.out')
same_as_plain exe.out "${run[@]}"
expect miss "new step"
assert_content exe.out "data of v1"
same_as_plain exe.out "${run[@]}"
expect hit
ln -sfn v2 current
same_as_plain exe.out "${run[@]}"
expect miss "inputs changed"
assert_content exe.out "data of v2"

section "an identical program reached through a retargeted link loads \$ORIGIN/../lib"
echo 'const char *which(void) { return VERSION; }' > lib.c
printf '#include <stdio.h>\nconst char *which(void);\nint main(void) { puts(which()); return 0; }\n' > useslib.c
for v in v1 v2; do
    mkdir -p $v/lib
    gcc -shared -fPIC -DVERSION="\"lib of $v\"" -o $v/lib/libwhich.so lib.c
done
gcc -o v1/bin/useslib useslib.c -Lv1/lib -lwhich -Wl,-rpath,'$ORIGIN/../lib'
cp v1/bin/useslib v2/bin/useslib
ln -sfn v1 current
origin=(sh -c 'current/bin/useslib > origin.out')
same_as_plain origin.out "${origin[@]}"
expect miss "new step"
assert_content origin.out "lib of v1"
same_as_plain origin.out "${origin[@]}"
expect hit
ln -sfn v2 current
same_as_plain origin.out "${origin[@]}"
expect miss "inputs changed"
assert_content origin.out "lib of v2"

section "an output written through a final symlink"
mkdir d1 d2
ln -s d1/o.txt out
write=(sh -c 'echo written > out')
same_as_plain d1/o.txt "${write[@]}"
expect miss "new step"
rm d1/o.txt
ln -sfn d2/o.txt out
step "${write[@]}"
expect miss "inputs changed"
assert_content d2/o.txt written
assert_absent d1/o.txt

section "reads through a process's cwd, root and descriptors"
echo A > in.txt
for p in "/proc/self/cwd/in.txt" "/proc/self/root$W/in.txt" "/dev/fd/3/in.txt"; do
    magic=(bash -c "exec 3<.; cat $p > magic.out")
    echo A > in.txt
    same_as_plain magic.out "${magic[@]}"
    expect_rc 0
    assert_content magic.out A
    echo B > in.txt
    same_as_plain magic.out "${magic[@]}"
    expect miss "inputs changed"
    assert_content magic.out B
    same_as_plain magic.out "${magic[@]}"
    expect hit
done
# Python opens through the preload fast path.
pymagic=(python3 -c 'open("pym.out", "w").write(open("/proc/self/cwd/in.txt").read())')
same_as_plain pym.out "${pymagic[@]}"
echo C > in.txt
same_as_plain pym.out "${pymagic[@]}"
expect miss "inputs changed"
assert_content pym.out C

section "openat2 with resolve flags is not cached"
cat > beneath.c <<'EOF'
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	struct open_how how;
	memset(&how, 0, sizeof how);
	how.flags = O_RDONLY;
	how.resolve = RESOLVE_BENEATH;
	long fd = syscall(SYS_openat2, AT_FDCWD, argv[1], &how, sizeof how);
	puts(fd < 0 ? "refused" : "opened");
	return argc > 2;
}
EOF
gcc -O0 -o beneath beneath.c
ln -sfn "$W/in.txt" abs-link
same_as_plain o2.out sh -c './beneath abs-link > o2.out'
expect uncacheable "openat2 resolve flags"
assert_content o2.out refused
cachet stats | grep -q "openat2 resolve flags" || fail "cachet stats does not name the reason"

section "an ordinary compile in a directory entered by cd still hits"
mkdir -p src
printf 'int f(void) { return 1; }\n' > src/a.c
# A file written within the last second is not trusted to stay put.
touch -d '-5 seconds' src/a.c src
compile=(sh -c 'cd src && gcc -c a.c -o a.o')
run_expect miss "new step" -- "${compile[@]}"
cp src/a.o a.o.first
rm src/a.o
run_expect hit "" -- "${compile[@]}"
assert_same src/a.o a.o.first
