// SPDX-License-Identifier: MIT
/*
 * log.c - log sink, level and rate limiting.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "log.h"

#define LOG_BURST 10

static _Atomic int log_level = -1; /* -1: not read from the environment */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static ibtrs_log_fn *log_fn; /* under log_lock */
static void *log_arg;

static int parse_level(const char *s)
{
	static const char *const names[] = { "none", "err", "warn", "info",
					     "debug" };
	unsigned int i;
	char *end;
	long v;

	if (!s || !*s)
		return IBTRS_LOG_NONE;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcasecmp(s, names[i]))
			return (int)i;
	v = strtol(s, &end, 10);
	if (*end || v < IBTRS_LOG_NONE)
		return IBTRS_LOG_NONE;
	return v > IBTRS_LOG_DEBUG ? IBTRS_LOG_DEBUG : (int)v;
}

bool ibtrs_log_enabled(enum ibtrs_log_level level)
{
	int cur = atomic_load_explicit(&log_level, memory_order_relaxed);

	if (cur < 0) {
		int env = parse_level(getenv("IBTRS_LOG_LEVEL"));
		int expected = -1;

		atomic_compare_exchange_strong(&log_level, &expected, env);
		cur = atomic_load(&log_level);
	}
	return level != IBTRS_LOG_NONE && (int)level <= cur;
}

void ibtrs_set_log_level(enum ibtrs_log_level level)
{
	int v = (int)level;

	if (v < IBTRS_LOG_NONE)
		v = IBTRS_LOG_NONE;
	if (v > IBTRS_LOG_DEBUG)
		v = IBTRS_LOG_DEBUG;
	atomic_store(&log_level, v);
}

void ibtrs_set_log_fn(ibtrs_log_fn *fn, void *arg)
{
	pthread_mutex_lock(&log_lock);
	log_fn = fn;
	log_arg = arg;
	pthread_mutex_unlock(&log_lock);
}

void ibtrs_log_msg(enum ibtrs_log_level level, const char *fmt, ...)
{
	static const char *const tags[] = { "", "error", "warning", "info",
					    "debug" };
	ibtrs_log_fn *fn;
	char msg[512];
	va_list ap;
	void *arg;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	pthread_mutex_lock(&log_lock);
	fn = log_fn;
	arg = log_arg;
	pthread_mutex_unlock(&log_lock);
	if (fn)
		fn(arg, level, msg);
	else
		fprintf(stderr, "ibtrs %s: %s\n", tags[level], msg);
}

/*
 * State: seconds (upper bits) and count in this second (low 8 bits).
 */
bool ibtrs_log_ratelimit(_Atomic unsigned long *state)
{
	struct timespec ts;
	unsigned long old, now, next;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	now = (unsigned long)ts.tv_sec << 8;
	old = atomic_load(state);
	do {
		if ((old & ~0xfful) != now)
			next = now | 1;
		else if ((old & 0xff) >= LOG_BURST)
			return false;
		else
			next = old + 1;
	} while (!atomic_compare_exchange_weak(state, &old, next));
	return true;
}
