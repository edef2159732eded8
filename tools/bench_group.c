// SPDX-License-Identifier: MIT
/*
 * bench_group.c - the sessions of "ibtrs bench --sessions N" open one
 * after the other, start together once every one is open, and end
 * together on one signal. bench_run() (bench_engine.c) reports and waits
 * here; bench_run_sessions() (bench_sessions.c) counts and signals.
 */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "bench.h"

void bench_group_init(struct bench_group *g, unsigned int n)
{
	pthread_condattr_t ca;

	g->n = n;
	g->ready = 0;
	g->signal = 0;
	pthread_mutex_init(&g->lock, NULL);
	pthread_condattr_init(&ca);
	/* bench_group_wait()'s deadline is on the monotonic clock. */
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->cond, &ca);
	pthread_condattr_destroy(&ca);
}

void bench_group_destroy(struct bench_group *g)
{
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->lock);
}

void bench_group_ready(struct bench_group *g)
{
	pthread_mutex_lock(&g->lock);
	g->ready++;
	pthread_cond_broadcast(&g->cond);
	while (g->ready < g->n && !g->signal)
		pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

void bench_group_wait_ready(struct bench_group *g, unsigned int n)
{
	pthread_mutex_lock(&g->lock);
	while (g->ready < n)
		pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

int bench_group_wait(struct bench_group *g, uint64_t ns)
{
	struct timespec ts;
	uint64_t t;
	int sig;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	t = (uint64_t)ts.tv_nsec + ns;
	ts.tv_sec += (time_t)(t / 1000000000ull);
	ts.tv_nsec = (long)(t % 1000000000ull);
	pthread_mutex_lock(&g->lock);
	while (!g->signal &&
	       pthread_cond_timedwait(&g->cond, &g->lock, &ts) != ETIMEDOUT)
		;
	sig = g->signal;
	pthread_mutex_unlock(&g->lock);
	return sig;
}

void bench_group_signal(struct bench_group *g, int sig)
{
	pthread_mutex_lock(&g->lock);
	g->signal = sig;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

int bench_group_signalled(struct bench_group *g)
{
	int sig;

	pthread_mutex_lock(&g->lock);
	sig = g->signal;
	pthread_mutex_unlock(&g->lock);
	return sig;
}
