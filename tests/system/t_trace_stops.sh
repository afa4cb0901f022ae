# glibc's own fstat, newfstatat(fd, "", AT_EMPTY_PATH) from the C library
# and the loader, goes through the seccomp filter without a stop in the
# cachet under test (trace/empty_name.h): a statically linked cachet has no
# libc of its own, and found no site at all, so that every such call
# stopped again. The status line counts the stops: a step whose C library
# makes 300 more of its own fstat calls (stdio's, on each new stream) takes
# none more, through a "#!" script too; 20 raw calls with "" from the
# program's own code, which the filter cannot tell from a name, take 20.
# Each run is compared with the plain one (exit status, streams, tree).
source "$(dirname "$0")/lib.sh"

[ "$(uname -m)" = x86_64 ] || skip "the fstat sites are known on x86-64 only"
case "$(getconf GNU_LIBC_VERSION 2> /dev/null || true)" in
glibc*) ;;
*) skip "the C library is not glibc" ;;
esac
command -v gcc > /dev/null || skip "gcc not installed"

B=$(workdir bin)
cat > "$B/streams.c" << 'EOF'
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
/* streams IN N RAW OUT: N streams on IN, each read once (stdio's buffer
 * takes an fstat inside libc), RAW raw fstat calls, and the sum of the
 * first bytes read into OUT. */
int main(int argc, char **argv)
{
	if (argc != 5)
		return 9;
	int fd = open(argv[1], O_RDONLY);
	if (fd < 0)
		return 1;
	long sum = 0;
	for (int i = atoi(argv[2]); i > 0; i--) {
		FILE *f = fdopen(dup(fd), "r");
		if (!f)
			return 2;
		rewind(f);
		sum += getc(f);
		fclose(f);
	}
	struct stat st;
	for (int i = atoi(argv[3]); i > 0; i--)
		if (syscall(SYS_newfstatat, fd, "", &st, AT_EMPTY_PATH))
			return 3;
	FILE *out = fopen(argv[4], "w");
	if (!out)
		return 4;
	fprintf(out, "%ld\n", sum);
	return fclose(out) ? 5 : 0;
}
EOF
gcc -O2 -o "$B/streams" "$B/streams.c"
printf '#!/bin/sh\nexec %s "$@"\n' "$B/streams" > "$B/streams.sh"
chmod +x "$B/streams.sh"
echo hello > "$B/in.txt"

W=$(workdir)
cd "$W"

# stops_of PROGRAM N RAW: the stops of a miss of PROGRAM, compared with the
# plain run; prints them.
stops_of() {
    plain_and_cached "" "$1" "$B/in.txt" "$2" "$3" out.txt > /dev/null
    local n
    n=$(status_field stops $(($(status_count) - 1)))
    [ -n "$n" ] || fail "$*: the miss's status line has no stops"
    echo "$n"
}

section "the C library's fstat"
direct=$(stops_of "$B/streams" 0 0)
many=$(stops_of "$B/streams" 300 0)
[ "$many" -eq "$direct" ] ||
    fail "300 fstat calls of the C library's own took $((many - direct)) stops ($direct without them)"

section "the same through a #! script"
none=$(stops_of "$B/streams.sh" 0 0)
many=$(stops_of "$B/streams.sh" 300 0)
[ "$many" -eq "$none" ] ||
    fail "through #!/bin/sh, 300 fstat calls of the C library's own took $((many - none)) stops"

section "\"\" from the program's own code"
raw=$(stops_of "$B/streams" 0 20)
[ "$raw" -eq "$((direct + 20))" ] ||
    fail "20 raw newfstatat(fd, \"\", AT_EMPTY_PATH) took $((raw - direct)) stops, want 20"

check_status_file_format
echo "ok: the C library's fstat takes no stop ($direct stops for the step)"
