# Processes cachet cannot trace faithfully, nesting, and hosts where tracing
# is not permitted:
#  - a command that uses ptrace itself (strace, gdb, a program built with
#    LeakSanitizer), a setuid one: recognised before it starts, run
#    directly, exactly as without cachet, never cached;
#  - the same deeper in a step's tree, a foreign seccomp filter, a process
#    left running: never cached (and where the run differs from a plain one,
#    that is the documented limitation);
#  - `cachet run -- make` whose compiler is `cachet gcc`: the inner cachet
#    runs its command directly, the outer one caches the whole step;
#  - ptrace or seccomp not permitted (a seccomp filter that makes them fail
#    with EPERM, as some container runtimes do): misses run uncached with one
#    warning, hits are still served.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"

# deny SYSCALL CMD...: runs CMD with a seccomp filter that fails SYSCALL
# (ptrace or seccomp) with EPERM.
cat > deny.c <<'EOF'
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int nr = !strcmp(argv[1], "ptrace") ? __NR_ptrace : !strcmp(argv[1], "seccomp") ? __NR_seccomp : -1;
	if (nr < 0)
		return 2;
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof f / sizeof f[0], f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
		perror("deny: seccomp");
		return 2;
	}
	execvp(argv[2], argv + 2);
	perror(argv[2]);
	return 127;
}
EOF
# ownfilter: installs its own filter that fails mkdir with EPERM, then
# reports what mkdir does and writes a file.
cat > ownfilter.c <<'EOF'
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
int main(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mkdir, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof f / sizeof f[0], f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		return 2;
	int rc = syscall(__NR_mkdir, "madedir", 0755);
	printf("mkdir: %d %s\n", rc, rc ? strerror(errno) : "ok");
	FILE *o = fopen("ownfilter.out", "w");
	fprintf(o, "written\n");
	return fclose(o) != 0;
}
EOF
# traceme: asks to be traced by its parent, as debuggers' children do.
cat > traceme.c <<'EOF'
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
int main(void)
{
	long r = ptrace(PTRACE_TRACEME, 0, 0, 0);
	printf("traceme: %s\n", r == 0 ? "ok" : strerror(errno));
	return 0;
}
EOF
cat > euid.c <<'EOF'
#include <stdio.h>
#include <unistd.h>
int main(void) { printf("euid %d\n", (int)geteuid()); return 0; }
EOF
printf '#include <stdio.h>\nint main(void) { puts("hello from a program"); return 0; }\n' > hello.c
printf '#include <stdlib.h>\n#include <stdio.h>\nvoid *keep;\nint main(void) { keep = malloc(7); keep = 0; puts("leaky"); return 0; }\n' > leaky.c
for p in deny ownfilter traceme euid hello; do
    gcc -O1 "$p.c" -o "$p" || fail "test setup: cannot build $p"
done
gcc -fsanitize=address -g hello.c -o hello_asan || fail "test setup: no ASan"
gcc -fsanitize=address -g leaky.c -o leaky_asan || fail "test setup: no ASan"

# plain_vs_cachet NAME CMD...: runs CMD plainly and under cachet (twice);
# exit status and stdout must agree; sets RC and leaves the last status.
plain_vs_cachet() {
    local name=$1
    shift
    set +e
    "$@" > "$name.plain" 2> /dev/null
    local prc=$?
    set -e
    local i
    for i in 1 2; do
        step "$@" > "$name.cachet" 2> "$name.err"
        [ "$RC" -eq "$prc" ] || { cat "$name.err" >&2; fail "$name: exit status $RC under cachet, $prc plain"; }
        cmp -s "$name.plain" "$name.cachet" ||
            fail "$name: stdout under cachet differs: '$(cat "$name.cachet")' vs '$(cat "$name.plain")'"
    done
}

section "a command that traces processes itself: strace"
plain_vs_cachet strace strace -f -o strace.log ./hello
expect uncacheable "ptrace by the step"
grep -q execve strace.log || fail "strace recorded nothing"

if command -v gdb > /dev/null; then
    section "a command that traces processes itself: gdb -batch"
    # (Only the program's own line is compared: gdb's chatter varies.)
    step gdb -batch -ex run --args ./hello > gdb.out 2>&1
    expect_rc 0
    expect uncacheable "ptrace by the step"
    grep -q "hello from a program" gdb.out || { cat gdb.out >&2; fail "gdb did not run the program"; }
else
    echo "note: gdb not installed, its case skipped"
fi

section "programs built with AddressSanitizer (LeakSanitizer ptraces at exit)"
# (The ASan build of the tests runs with detect_leaks=0: not these steps.)
export ASAN_OPTIONS=detect_leaks=1
plain_vs_cachet asan-clean ./hello_asan
expect uncacheable "ptrace by the step (LeakSanitizer)"
plain_vs_cachet asan-leaky ./leaky_asan
expect_rc 1
expect uncacheable "ptrace by the step (LeakSanitizer)"
# With leak detection off there is no ptrace: traced and cached as usual.
ASAN_OPTIONS=detect_leaks=0 run_expect miss "" -- ./hello_asan
ASAN_OPTIONS=detect_leaks=0 run_expect hit "" -- ./hello_asan
# The program is only read for this just before it would run: with leak
# detection on again, the entry stored without it is not served (the
# environment is keyed), and the step still runs directly.
ASAN_OPTIONS=detect_leaks=1 run_expect uncacheable "ptrace by the step (LeakSanitizer)" -- ./hello_asan
export ASAN_OPTIONS=detect_leaks=0

section "ptrace deeper in the tree: never cached"
for i in 1 2; do
    step sh -c './traceme'
    expect_rc 0
    expect uncacheable "ptrace by the step"
done

section "a step that installs its own seccomp filter"
rm -rf madedir
plain_vs_cachet ownfilter ./ownfilter
expect uncacheable "foreign seccomp filter"
assert_content ownfilter.out "written"
grep -q "mkdir: -1 Operation not permitted" ownfilter.cachet || fail "the step's own filter did not act"
[ ! -e madedir ] || fail "the step's filter was bypassed"

section "setuid executables"
cp euid suid
if chown 65534 suid 2> /dev/null && chmod 4755 suid && [ "$(./suid)" = "euid 65534" ]; then
    plain_vs_cachet suid ./suid
    expect uncacheable "setuid executable"
    # Found on PATH: the search's own stat of it tells.
    mkdir -p suidbin && cp -p suid suidbin/suid-on-path
    PATH="$PWD/suidbin:$PATH" step suid-on-path
    expect_rc 0
    expect uncacheable "setuid executable"
    # Deeper in the tree: runs without privilege elevation (documented), and
    # is never cached.
    step sh -c './suid'
    expect_rc 0
    expect uncacheable "setuid executable"
else
    echo "note: setuid does not work here (nosuid mount or not root), its case skipped"
fi

section "a step that leaves a process running"
rm -f daemon.out
start=$(date +%s%N)
step sh -c '(sleep 1; echo done > daemon.out) > /dev/null 2>&1 & echo started'
expect_rc 0
expect uncacheable "process left running"
assert_content daemon.out "done"
# Listed in uncacheable_commands, it runs untraced and returns at once.
# (The leftover waits for a file that the test creates only afterwards.)
rm -f daemon.out go
CACHET_UNCACHEABLE_COMMANDS='sh' step sh -c \
    '(while [ ! -e go ]; do sleep 0.05; done; echo done > daemon.out) > /dev/null 2>&1 & echo started'
expect uncacheable "uncacheable_commands"
[ ! -e daemon.out ] || fail "uncacheable_commands: cachet waited for the leftover process"
touch go
for _ in $(seq 200); do [ -s daemon.out ] && break; sleep 0.05; done
assert_content daemon.out "done"

section "nesting: cachet run -- make, with CC = cachet gcc"
mkdir -p nest && cd nest
printf '#define N 1\n' > n.h
printf '#include "n.h"\nint f(void) { return N; }\n' > a.c
printf '#include "n.h"\nint g(void) { return N + 1; }\n' > b.c
cat > Makefile <<EOF
CC = $CACHET_BIN gcc
all: a.o b.o
%.o: %.c n.h
	\$(CC) -c \$< -o \$@
EOF
gcc -c a.c -o ref_a.o
gcc -c b.c -o ref_b.o
before=$(status_count)
entries_before=$(stats_field entries)
step make -s
expect_rc 0
expect miss
[ "$(status_count)" -eq $((before + 1)) ] || fail "the inner cachet wrote status lines (it must not look up or store)"
cmp -s a.o ref_a.o && cmp -s b.o ref_b.o || fail "nested build: objects differ from plain gcc"
entries=$(stats_field entries)
[ "$entries" -eq $((entries_before + 1)) ] ||
    fail "nested build: $((entries - entries_before)) new entries, expected only the outer step's"
rm a.o b.o
run_expect hit "" -- make -s
cmp -s a.o ref_a.o || fail "nested build hit: a.o differs"
# The inner compiler's reads are the outer step's inputs.
printf '#define N 2\n' > n.h
gcc -c a.c -o ref_a.o
rm a.o b.o
run_expect miss "" -- make -s
cmp -s a.o ref_a.o || fail "nested build after a header change: a.o is stale"
# env -i drops every variable: the inner cachet still sees its tracer.
before=$(status_count)
step env -i PATH=/usr/bin:/bin "$CACHET_BIN" gcc -c b.c -o b2.o
expect_rc 0
[ "$(status_count)" -eq $((before + 1)) ] || fail "env -i: the inner cachet wrote a status line"
cd "$W"

# denied SYSCALL CMD...: `cachet run -- CMD` under deny (not itself under
# cachet); sets RC, stderr in denied.err, one status line expected.
denied() {
    local sys=$1 before
    shift
    before=$(status_count)
    set +e
    ./deny "$sys" "$CACHET_BIN" run -- "$@" 2> denied.err
    RC=$?
    set -e
    [ "$(status_count)" -eq $((before + 1)) ] || fail "denied $sys: expected one status line"
}

section "tracing not permitted: ptrace fails with EPERM"
printf 'input\n' > np.txt
denied ptrace cp np.txt np.out
expect_rc 0
expect uncacheable "tracing not permitted"
assert_content np.out "input"
# One clear warning, no more.
[ "$(grep -c '^cachet: ' denied.err)" -eq 1 ] || { cat denied.err >&2; fail "expected exactly one warning"; }
grep -q "not permitted" denied.err || { cat denied.err >&2; fail "the warning does not say tracing is not permitted"; }
# A step stored where tracing works is a hit where it does not.
run_expect miss "" -- cp np.txt np2.out
rm np2.out
denied ptrace cp np.txt np2.out
expect_rc 0
expect hit
assert_content np2.out "input"
[ ! -s denied.err ] || { cat denied.err >&2; fail "a hit without ptrace warned"; }

section "tracing not permitted: seccomp fails with EPERM"
denied seccomp cp np.txt np3.out
expect_rc 0
expect uncacheable "tracing not permitted"
assert_content np3.out "input"
[ "$(grep -c '^cachet: ' denied.err)" -eq 1 ] || { cat denied.err >&2; fail "expected exactly one warning"; }
rm np2.out
denied seccomp cp np.txt np2.out
expect hit
assert_content np2.out "input"
check_status_file_format
