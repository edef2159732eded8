/* SPDX-License-Identifier: MIT */
/*
 * test.h - tiny helpers shared by the test programs.
 *
 * A test program exits 0 when it passed, 1 when a check failed and 77 when
 * it cannot run here (CTest SKIP_RETURN_CODE).
 */
#ifndef IBTRS_TEST_H
#define IBTRS_TEST_H

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define T_SKIP 77

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
			exit(1);                                               \
		}                                                              \
	} while (0)

#define CHECK_EQ(a, b)                                                    \
	do {                                                              \
		long long a_ = (long long)(a), b_ = (long long)(b);       \
		if (a_ != b_) {                                           \
			fprintf(stderr,                                   \
				"%s:%d: %s == %s failed: %lld != %lld\n", \
				__FILE__, __LINE__, #a, #b, a_, b_);      \
			exit(1);                                          \
		}                                                         \
	} while (0)

static inline double t_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline void t_watchdog_fire(int sig)
{
	static const char msg[] = "watchdog: the test hung, failing it\n";
	ssize_t r;

	(void)sig;
	r = write(STDERR_FILENO, msg, sizeof(msg) - 1);
	(void)r;
	_exit(1);
}

/* Fail the process if it still runs after @sec seconds (0: 120 s). */
static inline void t_watchdog(unsigned int sec)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = t_watchdog_fire;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	alarm(sec ? sec : 120);
}

/* Absolute CLOCK_MONOTONIC time @ms from now, for t_cond_init() waits. */
static inline struct timespec t_deadline(unsigned int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

/* A condition variable that waits on CLOCK_MONOTONIC. */
static inline void t_cond_init(pthread_cond_t *cond)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(cond, &a);
	pthread_condattr_destroy(&a);
}

/* Whether task @name of this process (under /proc/self/task) runs or
 * waits for a CPU. */
static inline bool t_task_runs(const char *name)
{
	char path[300], buf[256], *p;
	bool runs = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%s/stat", name);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (fgets(buf, sizeof(buf), f)) {
		p = strrchr(buf, ')');
		runs = p && p[1] == ' ' && (p[2] == 'R' || p[2] == 'D');
	}
	fclose(f);
	return runs;
}

/* Whether a thread of this process other than the caller runs. */
static inline bool t_others_run(void)
{
	char self[16];
	struct dirent *d;
	bool runs = false;
	DIR *dir;

	snprintf(self, sizeof(self), "%d", (int)gettid());
	dir = opendir("/proc/self/task");
	if (!dir)
		return false;
	while (!runs && (d = readdir(dir)))
		runs = d->d_name[0] != '.' && strcmp(d->d_name, self) &&
		       t_task_runs(d->d_name);
	closedir(dir);
	return runs;
}

/*
 * Wait until every other thread of the process is blocked (sleeps in a
 * system call: no thread runs or waits for a CPU) in @looks looks in a
 * row, 1 ms apart; at most @max_ms. Returns whether it saw them so. The
 * condition a fixed pause only hopes for ("the other thread is asleep by
 * now"), which a busy machine may not have given it the CPU to reach.
 */
static inline bool t_wait_others_blocked(unsigned int looks,
					 unsigned int max_ms)
{
	double end = t_now() + max_ms / 1000.0;
	unsigned int seen = 0;

	while (seen < looks && t_now() < end) {
		seen = t_others_run() ? 0 : seen + 1;
		if (seen < looks)
			usleep(1000);
	}
	return seen >= looks;
}

/* xorshift64*: deterministic data for integrity checks. */
static inline unsigned long long t_rand(unsigned long long *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* @order becomes 0..@n-1 in a random order drawn from @seed. */
static inline void t_shuffle(unsigned int *order, unsigned int n,
			     unsigned long long *seed)
{
	unsigned int i, j, t;

	for (i = 0; i < n; i++)
		order[i] = i;
	for (i = n; i > 1; i--) {
		j = (unsigned int)(t_rand(seed) % i);
		t = order[i - 1];
		order[i - 1] = order[j];
		order[j] = t;
	}
}

static inline void t_fill(void *buf, size_t len, unsigned long long seed)
{
	unsigned char *p = buf;
	unsigned long long s = seed | 1;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(t_rand(&s) >> 56);
}

/*
 * Threads of this process: all of them (@prefix NULL), or those named
 * @prefix (@exact) or whose name starts with it.
 */
static inline unsigned int t_threads(const char *prefix, bool exact)
{
	char path[300], comm[32];
	unsigned int n = 0;
	struct dirent *d;
	DIR *dir = opendir("/proc/self/task");
	FILE *f;

	CHECK(dir);
	while ((d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		if (!prefix) {
			n++;
			continue;
		}
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f)) {
			comm[strcspn(comm, "\n")] = 0;
			n += exact ? !strcmp(comm, prefix)
				   : !strncmp(comm, prefix, strlen(prefix));
		}
		fclose(f);
	}
	closedir(dir);
	return n;
}

/*
 * Until t_threads(@prefix, @exact) is @n, at most 10 s: a joined thread may
 * still be listed for a moment after it cleared its id.
 */
static inline bool t_threads_become(const char *prefix, bool exact,
				    unsigned int n)
{
	double deadline = t_now() + 10.0;

	while (t_threads(prefix, exact) != n && t_now() < deadline)
		usleep(1000);
	return t_threads(prefix, exact) == n;
}

#endif /* IBTRS_TEST_H */
