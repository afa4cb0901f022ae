# The values keyed for a step's lookups are the values the step saw, never
# values taken after it ended: a directory listing, a stat's size and a
# symlink's target that another process changes while the step still runs
# must not become the key of an output computed from what was there before.
# Stored that way, the next run with the changed file system would hit and
# replay the old output: a wrong hit.
#
# Each race is replayed with FIFOs so that it happens every time: the step
# makes its lookup, prints what it found, signals sync/ready and waits on
# sync/go while the test changes the file system. The FIFOs live under
# ignore_paths, so the waits are neither inputs nor outputs; a step waits
# only while sync/wait exists.
#
# Each lookup is made by a dynamically linked program (stat and readlink of
# an absolute path then take the preload fast path: the tracer learns of
# them later, from the ring) and by a statically linked one (every call
# stops).
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"
mkdir sync
export CACHET_IGNORE_PATHS="$W/sync"
mkfifo sync/ready sync/go

cat > obs.c <<'EOF'
/* obs MODE PATH: list (every name, sorted), first (the first name readdir
 * returns: a partial read), size (stat), target (readlink).
 *
 * Between its lookup and its end it makes no call that stops under the
 * tracer when dynamically linked: sync/ready is opened before the lookup,
 * and sync/go by absolute path for reading (the preload fast path). The
 * tracer then learns of a fast-pathed lookup only when the step ends, after
 * the test changed the file system. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	const char *mode = argv[1], *path = argv[2];
	char out[8192];
	int len = 0;
	int ready = -1;
	char go[PATH_MAX + 16];
	if (argc < 3)
		return 2;
	if (access("sync/wait", F_OK) == 0) {
		ready = open("sync/ready", O_WRONLY);
		if (ready < 0 || !getcwd(go, PATH_MAX))
			return 3;
		strcat(go, "/sync/go");
	}
	if (!strcmp(mode, "list") || !strcmp(mode, "first")) {
		DIR *d = opendir(path);
		if (!d)
			return 2;
		char *names[256];
		int n = 0;
		struct dirent *de;
		while (n < 256 && (de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			names[n++] = strdup(de->d_name);
			if (!strcmp(mode, "first"))
				break;
		}
		qsort(names, (size_t)n, sizeof *names, cmp);
		for (int i = 0; i < n; i++)
			len += snprintf(out + len, sizeof out - (size_t)len, "%s\n", names[i]);
		/* The descriptor stays open: a partial read is not finished by
		 * closing it. */
	} else if (!strcmp(mode, "size")) {
		struct stat st;
		if (stat(path, &st) < 0)
			return 2;
		len = snprintf(out, sizeof out, "%lld\n", (long long)st.st_size);
	} else if (!strcmp(mode, "target")) {
		char t[4096];
		ssize_t n = readlink(path, t, sizeof t - 1);
		if (n < 0)
			return 2;
		t[n] = '\0';
		len = snprintf(out, sizeof out, "%s\n", t);
	}
	if (ready >= 0) {
		if (write(ready, "ready\n", 6) != 6)
			return 3;
		close(ready);
		int g = open(go, O_RDONLY);
		char line[16];
		if (g < 0 || read(g, line, sizeof line) <= 0)
			return 3;
		close(g);
	}
	return write(1, out, (size_t)len) == len ? 0 : 3;
}
EOF
gcc -O1 -o obs-dyn obs.c
gcc -O1 -static -o obs-static obs.c
# The compile's own files are no business of the steps below.
rm -f obs.c

# A failed check must not leave a step waiting on its FIFO (ctest would wait
# for it): release the waiter on the way out.
release_waiters() {
    rm -f sync/wait
    timeout 2 bash -c "echo go > sync/go" 2> /dev/null || true
}
trap 'rc=$?; release_waiters; (exit $rc); _lib_on_exit' EXIT

# raced NAME CHANGE -- CMD...: runs `cachet run -- CMD` (stdout to NAME.out)
# and runs the shell command CHANGE after the step made its lookup and
# before it ends. Sets RACED_RESULT and RACED_REASON from its status line.
raced() {
    local name=$1 change=$2
    shift 3
    # The names repeat for the static program: a status file left by the
    # dynamic one would end the wait below before this step has finished.
    rm -f "$name.rc"
    touch sync/wait
    ( set +e; cachet run -- "$@" > "$name.out"; echo $? > "$name.rc" ) &
    track_pid $!
    read -r _ < sync/ready
    eval "$change"
    echo go > sync/go
    local i
    for i in $(seq 600); do
        [ -s "$name.rc" ] && break
        sleep 0.1
    done
    rm -f sync/wait
    [ -s "$name.rc" ] || fail "step $name did not finish"
    [ "$(cat "$name.rc")" = 0 ] || fail "step $name exited $(cat "$name.rc")"
    status_last
    RACED_RESULT=$LAST_RESULT
    RACED_REASON=$LAST_REASON
}

# plain NAME -- CMD...: runs `cachet run -- CMD` (stdout to NAME.out).
plain() {
    local name=$1
    shift 2
    step "$@" > "$name.out"
    [ "$RC" -eq 0 ] || fail "cachet run -- $* exited $RC"
}

for kind in dyn static; do
    obs="$W/obs-$kind"

    section "$kind: a name added while the step runs is not in the key of its listing"
    rm -rf d && mkdir d && echo a > d/a
    raced list1 'echo b > d/b' -- "$obs" list d
    assert_content list1.out a
    [ "$RACED_RESULT" = miss ] || fail "expected a miss, got $RACED_RESULT ($RACED_REASON)"
    plain list2 -- "$obs" list d
    assert_content list2.out "$(printf 'a\nb')"
    section "$kind: ... and the run was stored, keyed on the listing it saw"
    rm d/b
    plain list3 -- "$obs" list d
    assert_content list3.out a
    expect hit

    section "$kind: an undisturbed listing is stored and hits"
    rm -rf d2 && mkdir d2 && echo x > d2/x && echo y > d2/y
    run_expect miss "" -- "$obs" list d2 > /dev/null
    plain list4 -- "$obs" list d2
    expect hit
    assert_content list4.out "$(printf 'x\ny')"

    section "$kind: a partial listing disturbed while the step runs is not stored"
    rm -rf d3 && mkdir d3 && echo a > d3/a
    raced first1 'echo b > d3/b' -- "$obs" first d3
    [ "$RACED_RESULT" = miss ] || fail "expected a miss, got $RACED_RESULT ($RACED_REASON)"
    [ "$RACED_REASON" = "input modified during run" ] ||
        fail "a disturbed partial listing was stored ($RACED_REASON)"

    section "$kind: a size changed while the step runs is not in the key of its stat"
    printf 12345 > "f-$kind"
    raced size1 "printf 67890 >> f-$kind" -- "$obs" size "$W/f-$kind"
    assert_content size1.out 5
    [ "$RACED_REASON" = "input modified during run" ] ||
        fail "a stat whose size changed during the run was stored ($RACED_RESULT: $RACED_REASON)"
    plain size2 -- "$obs" size "$W/f-$kind"
    assert_content size2.out 10
    plain size3 -- "$obs" size "$W/f-$kind"
    expect hit
    assert_content size3.out 10

    section "$kind: a symlink retargeted while the step runs is not in the key of its readlink"
    ln -sfn one "l-$kind"
    raced link1 "ln -sfn two l-$kind" -- "$obs" target "$W/l-$kind"
    assert_content link1.out one
    [ "$RACED_REASON" = "input modified during run" ] ||
        fail "a readlink whose target changed during the run was stored ($RACED_RESULT: $RACED_REASON)"
    plain link2 -- "$obs" target "$W/l-$kind"
    assert_content link2.out two
    plain link3 -- "$obs" target "$W/l-$kind"
    expect hit
    assert_content link3.out two
done

section "ls: a name added while ls runs is not in the key of its listing"
rm -rf d4 && mkdir d4 && echo a > d4/a
cat > ls.sh <<'EOF'
ls d4
if [ -e sync/wait ]; then
    echo ready > sync/ready
    read -r _ < sync/go
fi
EOF
raced ls1 'echo b > d4/b' -- sh ls.sh
assert_content ls1.out a
plain ls2 -- sh ls.sh
assert_content ls2.out "$(printf 'a\nb')"

section "the memo does not vouch for a listing the directory no longer holds"
# Stored a second after the sibling's change, the directory is settled and
# gets a fingerprint in the step's memo; the listing recorded is the one
# the step saw, not the one the fingerprint describes.
rm -rf d6 && mkdir d6 && echo a > d6/a
raced memo1 'echo b > d6/b; sleep 1.5' -- "$W/obs-dyn" list d6
assert_content memo1.out a
plain memo2 -- "$W/obs-dyn" list d6
assert_content memo2.out "$(printf 'a\nb')"

section "explain still shows the names of a listing that changed"
rm -rf d5 && mkdir d5 && echo a > d5/a
run_expect miss "" -- "$W/obs-dyn" list d5 > /dev/null
echo b > d5/b
cachet explain -- "$W/obs-dyn" list d5 > explain.out 2>&1 || true
grep -q "d5" explain.out || fail "explain does not name the listing: $(cat explain.out)"
grep -q "added: b" explain.out || fail "explain does not name the new entry b: $(cat explain.out)"
