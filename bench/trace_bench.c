/*
 * Runs a command under trace_run and prints what the tracer saw: its events
 * (-v), the stop count and the wall time. Used to measure the tracer's
 * overhead against a plain run:
 *
 *   trace_bench [-v] [-n RUNS] [-p] -- COMMAND [ARGS...]
 *
 * -p runs the command plainly (fork + execvp + wait) for the comparison;
 * -P traces without the preload fast path.
 * Built by `ninja cachet-bench-tools` (or `ninja trace_bench`) in the
 * build directory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cachet/trace.h"

extern char **environ;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *kind_name(enum trace_event_kind k)
{
	static const char *const names[] = {"READ",     "EXEC",  "PROBE",    "LIST",
	                                    "READLINK", "TOUCH", "SET_MTIME"};
	return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

static char *which(const char *name)
{
	if (strchr(name, '/'))
		return strdup(name);
	const char *path = getenv("PATH");
	char *copy = strdup(path ? path : "/usr/bin:/bin"), *save = NULL;
	for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		char buf[4096];
		snprintf(buf, sizeof buf, "%s/%s", dir, name);
		if (access(buf, X_OK) == 0) {
			free(copy);
			return strdup(buf);
		}
	}
	free(copy);
	return strdup(name);
}

int main(int argc, char **argv)
{
	int verbose = 0, runs = 1, plain = 0, no_preload = 0, i;
	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "-v") == 0)
			verbose = 1;
		else if (strcmp(argv[i], "-p") == 0)
			plain = 1;
		else if (strcmp(argv[i], "-P") == 0)
			no_preload = 1;
		else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
			runs = atoi(argv[++i]);
	}
	if (i + 1 >= argc) {
		fprintf(stderr,
		        "usage: trace_bench [-v] [-p] [-P] [-n RUNS] -- COMMAND [ARGS...]\n");
		return 2;
	}
	char **cmd = argv + i + 1;
	char *file = which(cmd[0]);
	struct trace_spec spec = {.file = file,
	                          .argv = cmd,
	                          .envp = environ,
	                          .stdin_fd = 0,
	                          .stdout_fd = 1,
	                          .stderr_fd = 2,
	                          .preload = no_preload ? "" : NULL};
	double total = 0;
	size_t stops = 0, exit_stops = 0, records = 0;
	for (int r = 0; r < runs; r++) {
		double t0 = now();
		if (plain) {
			pid_t pid = fork();
			if (pid == 0) {
				execv(file, cmd);
				_exit(127);
			}
			int st;
			waitpid(pid, &st, 0);
		} else {
			struct trace_result res;
			struct error e;
			if (trace_run(&spec, &res, &e) < 0) {
				fprintf(stderr, "trace_run: %s\n", e.msg);
				return 1;
			}
			stops = res.nstops;
			exit_stops = res.nexit_stops;
			records = res.nrecords;
			if (verbose && r == 0) {
				for (size_t k = 0; k < res.nevents; k++) {
					const struct trace_event *ev = &res.events[k];
					printf("%-9s f=%x err=%d pid=%d %s", kind_name(ev->kind),
					       ev->flags, ev->err, (int)ev->pid, ev->path);
					if (ev->kind == TRACE_READ || ev->kind == TRACE_EXEC)
						printf(" ino=%llu size=%llu",
						       (unsigned long long)ev->id.ino,
						       (unsigned long long)ev->id.size);
					if (ev->kind == TRACE_TOUCH)
						printf(" pre_exists=%d digest=%d", ev->pre_exists,
						       ev->has_pre_digest);
					printf("\n");
				}
				printf("status=%d exec_errno=%d uncacheable=%s nevents=%zu\n",
				       res.status, res.exec_errno,
				       res.uncacheable ? res.uncacheable : "-", res.nevents);
			}
			trace_result_free(&res);
		}
		total += now() - t0;
	}
	struct rusage self;
	getrusage(RUSAGE_SELF, &self);
	double user = (double)self.ru_utime.tv_sec + (double)self.ru_utime.tv_usec / 1e6;
	double sys = (double)self.ru_stime.tv_sec + (double)self.ru_stime.tv_usec / 1e6;
	fprintf(stderr,
	        "%s: %d runs, mean %.2f ms, %zu seccomp + %zu exit stops/run, %zu preload "
	        "records/run, tracer cpu %.2f ms/run (user %.2f, sys %.2f)\n",
	        plain ? "plain" : "traced", runs, total / runs * 1000, stops, exit_stops, records,
	        (user + sys) / runs * 1000, user / runs * 1000, sys / runs * 1000);
	free(file);
	return 0;
}
