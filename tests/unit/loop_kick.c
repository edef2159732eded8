// SPDX-License-Identifier: MIT
/*
 * loop_kick.c - waking the event loop for queued work.
 *
 * Work queued from another thread while the loop sleeps wakes it with one
 * system call; work queued while it is running needs none, because the
 * loop looks at its queue before it sleeps again: also work queued at the
 * last moment, after the loop ran out of work. No work is left queued
 * while the loop sleeps, however the queueing threads race with it.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "loop.h"
#include "test.h"

#define NR_ITEMS 100
#define NR_THREADS 4
#define RACE_ROUNDS 300

static atomic_uint ran;
static atomic_bool release;

static void count_fn(struct ibtrs_work *w)
{
	(void)w;
	atomic_fetch_add(&ran, 1);
}

/* Runs on the loop thread until the main thread lets it go. */
static void hold_fn(struct ibtrs_work *w)
{
	double deadline = t_now() + 10.0;

	(void)w;
	atomic_fetch_add(&ran, 1);
	while (!atomic_load(&release) && t_now() < deadline)
		usleep(100);
}

/* Queues @late once, as the loop is about to sleep (the sleep hook). */
static struct ibtrs_work late = { .fn = count_fn };
static atomic_bool late_queued;

static void queue_late(struct ibtrs_loop *loop)
{
	if (!atomic_exchange(&late_queued, true))
		ibtrs_loop_queue(loop, &late);
}

/* Wait up to 5 s until @n work items ran in all. */
static bool ran_reaches(unsigned int n)
{
	double deadline = t_now() + 5.0;

	while (atomic_load(&ran) < n && t_now() < deadline)
		usleep(100);
	return atomic_load(&ran) >= n;
}

/*
 * Wait until the loop ran dry and sleeps: its thread (the only other one
 * now) blocked in three looks in a row, at most 10 s. A fixed pause is not
 * enough on a busy machine, where the loop thread may not have run at all
 * meanwhile.
 */
static void settle(void)
{
	CHECK(t_wait_others_blocked(3, 10000));
}

/* Runs on the loop thread for about 50 us. */
static void spin_fn(struct ibtrs_work *w)
{
	double end = t_now() + 50e-6;

	(void)w;
	atomic_fetch_add(&ran, 1);
	while (t_now() < end)
		;
}

/*
 * struct racer - a thread that queues one item @delay_us (0..99) after
 * the loop thread was given a 50 us item: some items land while that one
 * runs, some as the loop runs dry and goes to sleep, some while it sleeps.
 */
struct racer {
	struct ibtrs_loop *loop;
	struct ibtrs_work work;
	pthread_barrier_t *start;
	unsigned int delay_us;
};

static void *race_thread(void *arg)
{
	struct racer *r = arg;
	double at;

	pthread_barrier_wait(r->start);
	at = t_now() + r->delay_us * 1e-6;
	while (t_now() < at)
		;
	ibtrs_loop_queue(r->loop, &r->work);
	return NULL;
}

int main(void)
{
	static struct ibtrs_work items[NR_ITEMS];
	struct ibtrs_work hold = { .fn = hold_fn }, one = { .fn = count_fn };
	struct ibtrs_work spin = { .fn = spin_fn };
	struct racer racers[NR_THREADS];
	pthread_t th[NR_THREADS];
	pthread_barrier_t start;
	struct ibtrs_loop *loop;
	unsigned long long seed = 1;
	uint64_t k0, k1;
	unsigned int i, r, want;

	t_watchdog(60);
	CHECK_EQ(ibtrs_loop_create(&loop, "t-kick", NULL, NULL, 0), 0);

	/* A sleeping loop: one kick, and the work runs. */
	settle();
	k0 = ibtrs_loop_kicks(loop);
	ibtrs_loop_queue(loop, &one);
	CHECK(ran_reaches(1));
	k1 = ibtrs_loop_kicks(loop);
	printf("work queued to a sleeping loop: %llu kick(s)\n",
	       (unsigned long long)(k1 - k0));
	CHECK_EQ(k1 - k0, 1);

	/* A running loop: work queued meanwhile runs after it, unkicked. */
	settle();
	k0 = ibtrs_loop_kicks(loop);
	ibtrs_loop_queue(loop, &hold);
	CHECK(ran_reaches(2));
	for (i = 0; i < NR_ITEMS; i++) {
		items[i].fn = count_fn;
		ibtrs_loop_queue(loop, &items[i]);
	}
	atomic_store(&release, true);
	CHECK(ran_reaches(2 + NR_ITEMS));
	k1 = ibtrs_loop_kicks(loop);
	printf("%u items queued while the loop ran: %llu kick(s) in all\n",
	       NR_ITEMS, (unsigned long long)(k1 - k0));
	/* The one that woke it for the held item, none for the others. */
	CHECK_EQ(k1 - k0, 1);

	/* Work queued after the loop's last look at its queue but before
	 * it sleeps: it looks again, runs it, and nobody kicks it. */
	settle();
	k0 = ibtrs_loop_kicks(loop);
	ibtrs_set_test_sleep_hook(queue_late);
	ibtrs_loop_queue(loop, &one);
	CHECK(ran_reaches(2 + NR_ITEMS + 2));
	ibtrs_set_test_sleep_hook(NULL);
	k1 = ibtrs_loop_kicks(loop);
	printf("work queued as the loop went to sleep ran, %llu kick(s) in all\n",
	       (unsigned long long)(k1 - k0));
	CHECK(atomic_load(&late_queued));
	CHECK_EQ(k1 - k0, 1);

	/* Threads racing with the loop going to sleep lose no work. */
	pthread_barrier_init(&start, NULL, NR_THREADS + 1);
	want = 2 + NR_ITEMS + 2;
	for (r = 0; r < RACE_ROUNDS; r++) {
		for (i = 0; i < NR_THREADS; i++) {
			racers[i] = (struct racer){
				.loop = loop,
				.work.fn = count_fn,
				.start = &start,
				.delay_us = (unsigned int)(t_rand(&seed) % 100),
			};
			CHECK_EQ(pthread_create(&th[i], NULL, race_thread,
						&racers[i]),
				 0);
		}
		ibtrs_loop_queue(loop, &spin);
		pthread_barrier_wait(&start);
		for (i = 0; i < NR_THREADS; i++)
			pthread_join(th[i], NULL);
		want += NR_THREADS + 1;
		if (!ran_reaches(want))
			break;
	}
	printf("%u rounds of %u racing threads: %u of %u items ran\n", r,
	       NR_THREADS, atomic_load(&ran), want);
	CHECK_EQ(r, RACE_ROUNDS);
	CHECK_EQ(atomic_load(&ran), want);
	pthread_barrier_destroy(&start);

	ibtrs_loop_destroy(loop);
	printf("loop_kick: ok\n");
	return 0;
}
