# io_uring runs opens, reads and writes without a syscall the tracer sees.
# A program that uses it must run as it does without cachet (no ENOSYS that
# it may have no fallback for) and its step is uncacheable, with the reason.
source "$(dirname "$0")/lib.sh"

W=$(workdir)
cd "$W"
cat > ring.c <<'EOF'
#include <errno.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	long fd = syscall(__NR_io_uring_setup, 4, &p);
	if (fd < 0) {
		printf("io_uring_setup: %s\n", strerror(errno));
		return 1;
	}
	printf("io_uring ready, %u entries\n", p.sq_entries);
	return 0;
}
EOF
gcc -O1 -o ring ring.c
set +e
./ring > plain.out
want=$?
set -e
[ "$want" -eq 0 ] || skip "io_uring is not available here: $(cat plain.out)"

section "the program runs as without cachet, and the step is uncacheable"
step ./ring > got.out
expect_rc 0
assert_same plain.out got.out
expect uncacheable "io_uring"
step ./ring > got.out
expect uncacheable "io_uring"
assert_same plain.out got.out
