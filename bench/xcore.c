// SPDX-License-Identifier: MIT
/*
 * xcore.c - how fast two CPUs hand 4 KiB blocks to each other.
 *
 * A producer thread pinned to one CPU copies a 4 KiB block into a ring of 64
 * slots; a consumer thread pinned to another copies each slot out and frees
 * it. Every block crosses from one CPU's cache to the other's, as every
 * payload of a loopback TCP connection does (the sender's copy into the
 * socket, the receiver's copy out of it, on the other CPU). It prints one
 * JSON line: the CPUs and the bytes per second handed over.
 *
 * On a virtual machine the figure says where the host put the two vCPUs:
 * seen on a 2-vCPU KVM guest, 3.5-8.7 GB/s for minutes, then 0.5-2.2 GB/s
 * for tens of seconds to minutes (the vCPUs most likely no longer sharing a
 * cache), while each CPU alone copied as fast as before; loopback traffic of
 * ibtrs and of its peers ran at half speed or less in the second state.
 * bench/compare runs it before and after each measurement.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BLOCK 4096
#define SLOTS 64

struct ring {
	char slot[SLOTS][BLOCK];
	_Alignas(64) atomic_uint_fast64_t head; /* blocks written */
	_Alignas(64) atomic_uint_fast64_t tail; /* blocks read */
	_Alignas(64) atomic_bool stop;
	atomic_int ready; /* 1: the consumer runs on its CPU, -1: it cannot */
	int cpu;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

/* The consumer: copy each block out as soon as it is there. */
static void *consume(void *arg)
{
	static char out[BLOCK];
	struct ring *r = arg;
	uint_fast64_t i = 0;

	if (pin(r->cpu)) {
		atomic_store(&r->ready, -1);
		return NULL;
	}
	atomic_store(&r->ready, 1);
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		if (atomic_load_explicit(&r->head, memory_order_acquire) <= i)
			continue;
		memcpy(out, r->slot[i % SLOTS], BLOCK);
		/* The copy must happen although nobody reads it. */
		__asm__ volatile("" : : "r"(out) : "memory");
		atomic_store_explicit(&r->tail, ++i, memory_order_release);
	}
	return NULL;
}

/* Produce for @secs; the number of blocks the consumer took. */
static uint_fast64_t produce(struct ring *r, double secs, double *took)
{
	static char in[BLOCK];
	uint_fast64_t i = 0;
	double t0 = now_s(), t = t0;

	memset(in, 0x5a, sizeof(in));
	while (t - t0 < secs) {
		/* The clock is read once per ring's worth of blocks. */
		for (int n = 0; n < SLOTS; n++) {
			while (i - atomic_load_explicit(&r->tail,
							memory_order_acquire) >=
			       SLOTS)
				;
			memcpy(r->slot[i % SLOTS], in, BLOCK);
			atomic_store_explicit(&r->head, ++i,
					      memory_order_release);
		}
		t = now_s();
	}
	while (atomic_load_explicit(&r->tail, memory_order_acquire) < i)
		;
	*took = now_s() - t0;
	return i;
}

/* The first two CPUs this process may run on, in @a and @b. */
static int two_cpus(int *a, int *b)
{
	cpu_set_t set;
	int n = 0;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -errno;
	for (int c = 0; c < CPU_SETSIZE && n < 2; c++) {
		if (!CPU_ISSET(c, &set))
			continue;
		if (n++ == 0)
			*a = c;
		else
			*b = c;
	}
	return n == 2 ? 0 : -ENOENT;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ibtrs-xcore [--ms N] [--cpus A,B]\n"
		   "Hands 4 KiB blocks from a thread on CPU A to one on CPU B "
		   "for N ms\n(default 50; CPUs: the first two allowed) and "
		   "prints {\"gbps\"} as one JSON line.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "ms", required_argument, NULL, 'm' },
		{ "cpus", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct ring ring;
	int a = -1, b = -1, o, err;
	long ms = 50;
	uint_fast64_t blocks;
	double took;
	pthread_t thr;
	char *end, extra;

	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case 'm':
			ms = strtol(optarg, &end, 10);
			if (*end || ms < 1 || ms > 10000) {
				fprintf(stderr,
					"ibtrs-xcore: bad --ms %s (1..10000)\n",
					optarg);
				return 2;
			}
			break;
		case 'c':
			if (sscanf(optarg, "%d,%d%c", &a, &b, &extra) != 2 ||
			    a < 0 || b < 0 || a >= CPU_SETSIZE ||
			    b >= CPU_SETSIZE || a == b) {
				fprintf(stderr,
					"ibtrs-xcore: bad --cpus %s (two "
					"different CPUs, e.g. 0,1)\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ibtrs-xcore: unexpected argument %s\n",
			argv[optind]);
		usage(stderr);
		return 2;
	}
	if (a < 0 && (err = two_cpus(&a, &b))) {
		fprintf(stderr, "ibtrs-xcore: %s\n",
			err == -ENOENT ? "fewer than two CPUs to run on"
				       : strerror(-err));
		return 1;
	}
	if ((err = pin(a))) {
		fprintf(stderr, "ibtrs-xcore: CPU %d: %s\n", a, strerror(-err));
		return 1;
	}
	ring.cpu = b;
	if ((err = pthread_create(&thr, NULL, consume, &ring))) {
		fprintf(stderr, "ibtrs-xcore: thread: %s\n", strerror(err));
		return 1;
	}
	/* A consumer that could not pin itself would never take a block. */
	while (!atomic_load(&ring.ready))
		sched_yield();
	if (atomic_load(&ring.ready) < 0) {
		pthread_join(thr, NULL);
		fprintf(stderr, "ibtrs-xcore: CPU %d: cannot run there\n", b);
		return 1;
	}
	blocks = produce(&ring, (double)ms / 1e3, &took);
	atomic_store(&ring.stop, true);
	pthread_join(thr, NULL);
	printf("{\"cpus\": [%d, %d], \"ms\": %ld, \"blocks\": %llu, "
	       "\"gbps\": %.3f}\n",
	       a, b, ms, (unsigned long long)blocks,
	       (double)blocks * BLOCK / took / 1e9);
	return 0;
}
