/*
 * The workload of bench/run's `observe` figure: N calls of one kind of
 * observation the tracer records, in one process, so that the cost of a
 * call under the tracer can be told from the cost of starting a program:
 *
 *   observation_ops KIND N
 *
 * KIND is one of: none (the process alone), read (open and close of one
 * of 50 existing files in in/), stat (their metadata, as make reads
 * mtimes), absent (a probe of a path that does not exist), uname and
 * getuid (facts of the process, keyed where a step asks), chdir (into d/
 * and back: two calls), create (a new file in d/: its pre-state is
 * recorded). Runs in the current directory; d/ is created, in/ must hold
 * f0 ... f49.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

static int one(const char *kind, int i)
{
	char path[64];
	struct stat st;
	struct utsname u;
	if (strcmp(kind, "read") == 0) {
		snprintf(path, sizeof path, "in/f%d", i % 50);
		int fd = open(path, O_RDONLY);
		return fd < 0 ? -1 : close(fd);
	}
	if (strcmp(kind, "stat") == 0) {
		snprintf(path, sizeof path, "in/f%d", i % 50);
		return stat(path, &st);
	}
	if (strcmp(kind, "absent") == 0) {
		snprintf(path, sizeof path, "in/absent%d", i % 50);
		return stat(path, &st) == 0 ? -1 : 0;
	}
	if (strcmp(kind, "uname") == 0)
		return uname(&u);
	if (strcmp(kind, "getuid") == 0)
		return getuid() == (uid_t)-1 ? -1 : 0;
	if (strcmp(kind, "chdir") == 0)
		return chdir("d") < 0 || chdir("..") < 0 ? -1 : 0;
	if (strcmp(kind, "create") == 0) {
		snprintf(path, sizeof path, "d/c%d", i);
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		return fd < 0 ? -1 : close(fd);
	}
	return strcmp(kind, "none") == 0 ? 0 : -2;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: observation_ops KIND N\n");
		return 2;
	}
	int n = atoi(argv[2]);
	if (mkdir("d", 0755) < 0 && access("d", F_OK) < 0) {
		perror("mkdir d");
		return 1;
	}
	for (int i = 0; i < n; i++) {
		int rc = one(argv[1], i);
		if (rc == -2) {
			fprintf(stderr, "observation_ops: unknown kind %s\n", argv[1]);
			return 2;
		}
		if (rc < 0) {
			fprintf(stderr, "observation_ops: %s failed at call %d\n", argv[1], i);
			return 1;
		}
	}
	return 0;
}
