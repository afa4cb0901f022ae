/*
 * Hashes a file with cachet's digest_file (the function every content
 * digest goes through) and prints the throughput of each run, for bench/run:
 *
 *   digest_bench FILE [RUNS]
 *
 * One line per run: "<seconds> <GB/s>". The file should be in the page
 * cache already (bench/run reads it once first), so that this measures
 * hashing, not the disk.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cachet/digest.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: digest_bench FILE [RUNS]\n");
		return 2;
	}
	int runs = argc > 2 ? atoi(argv[2]) : 1;
	for (int i = 0; i < runs; i++) {
		struct digest d;
		struct error e;
		uint64_t size = 0;
		double t0 = now();
		if (digest_file(argv[1], &d, &size, &e) < 0) {
			fprintf(stderr, "digest_bench: %s\n", e.msg);
			return 1;
		}
		double t = now() - t0;
		printf("%.6f %.3f\n", t, (double)size / t / 1e9);
		fflush(stdout);
	}
	return 0;
}
