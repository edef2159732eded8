// SPDX-License-Identifier: MIT
/*
 * tags.c - unit tests of the sharded tag allocator: every id exactly once,
 * exhaustion, stealing across shards, waiting, batched wake-ups, shutdown,
 * no wake-up lost between a put and a waiter going to sleep, and many
 * threads.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "tags.h"
#include "test.h"

#define NR 64

static struct ibtrs_tags tags;
static _Atomic int owner[NR];
static _Atomic int woke;

static void test_all_ids(unsigned int shards)
{
	int seen[NR] = { 0 }, ids[NR], i;

	CHECK_EQ(ibtrs_tags_init(&tags, NR, shards), 0);
	CHECK_EQ(ibtrs_tags_free_count(&tags), NR);
	/* All ids come out once, whatever shard this CPU uses (stealing). */
	for (i = 0; i < NR; i++) {
		ids[i] = ibtrs_tags_get(&tags, false);
		CHECK(ids[i] >= 0 && ids[i] < NR);
		CHECK_EQ(seen[ids[i]]++, 0);
	}
	CHECK_EQ(ibtrs_tags_get(&tags, false), -EAGAIN);
	CHECK_EQ(ibtrs_tags_free_count(&tags), 0);
	/* Put back into this CPU's shard only: still all reachable. */
	for (i = 0; i < NR; i++)
		ibtrs_tags_put(&tags, (uint32_t)ids[i], false);
	CHECK_EQ(ibtrs_tags_free_count(&tags), NR);
	for (i = 0; i < NR; i++)
		CHECK(ibtrs_tags_get(&tags, false) >= 0);
	CHECK_EQ(ibtrs_tags_get(&tags, false), -EAGAIN);
	ibtrs_tags_destroy(&tags);
}

/*
 * Sizes around the bitmap's words and uneven shards: every id once, in
 * range, none after the last, all again after they are put back (in an
 * order unlike the one they came in).
 */
static void test_sizes(void)
{
	static const struct {
		uint32_t nr;
		unsigned int shards;
	} c[] = { { 1, 1 },   { 1, 4 },	  { 5, 4 },    { 63, 2 },
		  { 64, 1 },  { 65, 1 },  { 127, 3 },  { 130, 2 },
		  { 200, 3 }, { 64, 64 }, { 1000, 7 }, { 4096, 0 } };
	static int ids[4096];
	static unsigned char seen[4096];
	unsigned int k;
	uint32_t i;

	for (k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
		struct ibtrs_tags t;

		CHECK_EQ(ibtrs_tags_init(&t, c[k].nr, c[k].shards), 0);
		CHECK(t.nr_shards >= 1 && t.nr_shards <= c[k].nr);
		CHECK_EQ(ibtrs_tags_free_count(&t), c[k].nr);
		memset(seen, 0, sizeof(seen));
		for (i = 0; i < c[k].nr; i++) {
			ids[i] = ibtrs_tags_get(&t, false);
			CHECK(ids[i] >= 0 && (uint32_t)ids[i] < c[k].nr);
			CHECK_EQ(seen[ids[i]]++, 0);
		}
		CHECK_EQ(ibtrs_tags_get(&t, false), -EAGAIN);
		CHECK_EQ(ibtrs_tags_free_count(&t), 0);
		for (i = 1; i < c[k].nr; i += 2)
			ibtrs_tags_put(&t, (uint32_t)ids[i], false);
		for (i = 0; i < c[k].nr; i += 2)
			ibtrs_tags_put(&t, (uint32_t)ids[i], false);
		CHECK_EQ(ibtrs_tags_free_count(&t), c[k].nr);
		memset(seen, 0, sizeof(seen));
		for (i = 0; i < c[k].nr; i++) {
			int id = ibtrs_tags_get(&t, false);

			CHECK(id >= 0 && (uint32_t)id < c[k].nr);
			CHECK_EQ(seen[id]++, 0);
		}
		CHECK_EQ(ibtrs_tags_get(&t, false), -EAGAIN);
		ibtrs_tags_destroy(&t);
	}
}

static _Atomic int got;

static void *waiter(void *arg)
{
	int id = ibtrs_tags_get(&tags, true);

	(void)arg;
	atomic_store(&woke, id >= 0 ? 1 : id);
	if (id >= 0)
		atomic_fetch_add(&got, 1);
	return NULL;
}

/* Wait (bounded) until @n callers sleep in ibtrs_tags_get(). */
static void wait_waiters(unsigned int n)
{
	int i;

	for (i = 0; i < 2000 && atomic_load(&tags.waiters) != n; i++)
		usleep(1000);
	CHECK_EQ(atomic_load(&tags.waiters), n);
	/* Past the count, into the sleep: every waiter blocked. */
	CHECK(t_wait_others_blocked(3, 10000));
}

static void test_wake_batch(void)
{
	pthread_t th[3];
	int ids[NR], i;

	CHECK_EQ(ibtrs_tags_init(&tags, NR, 2), 0);
	CHECK_EQ(tags.wake_batch, NR / 4);
	CHECK_EQ(tags.recheck_ms, IBTRS_TAGS_RECHECK_MS);
	/* No looking again for now: only puts wake. */
	tags.recheck_ms = 999;
	for (i = 0; i < NR; i++)
		CHECK((ids[i] = ibtrs_tags_get(&tags, false)) >= 0);
	/* While more puts follow, a waiter sleeps until a batch is back. */
	atomic_store(&woke, 0);
	atomic_store(&got, 0);
	CHECK_EQ(pthread_create(&th[0], NULL, waiter, NULL), 0);
	wait_waiters(1);
	for (i = 0; i < NR / 4 - 1; i++)
		ibtrs_tags_put(&tags, (uint32_t)ids[i], true);
	usleep(100000);
	CHECK_EQ(atomic_load(&woke), 0);
	CHECK_EQ(ibtrs_tags_free_count(&tags), NR / 4 - 1);
	ibtrs_tags_put(&tags, (uint32_t)ids[NR / 4 - 1], true);
	CHECK_EQ(pthread_join(th[0], NULL), 0);
	CHECK_EQ(atomic_load(&got), 1);
	/* Empty the pool again: the waiter holds one, take the rest. */
	for (i = 0; i < NR / 4 - 1; i++)
		CHECK(ibtrs_tags_get(&tags, false) >= 0);
	CHECK_EQ(ibtrs_tags_get(&tags, false), -EAGAIN);
	/* The put that says nothing more follows wakes every waiter. */
	for (i = 0; i < 3; i++)
		CHECK_EQ(pthread_create(&th[i], NULL, waiter, NULL), 0);
	wait_waiters(3);
	ibtrs_tags_put(&tags, (uint32_t)ids[NR / 4], true);
	ibtrs_tags_put(&tags, (uint32_t)ids[NR / 4 + 1], true);
	usleep(100000);
	CHECK_EQ(atomic_load(&got), 1);
	ibtrs_tags_put(&tags, (uint32_t)ids[NR / 4 + 2], false);
	for (i = 0; i < 3; i++)
		CHECK_EQ(pthread_join(th[i], NULL), 0);
	CHECK_EQ(atomic_load(&got), 4);
	/*
	 * A put that promises more which never come (the holders keep their
	 * tags): the waiter still finds the id when it looks again.
	 */
	CHECK_EQ(ibtrs_tags_get(&tags, false), -EAGAIN);
	tags.recheck_ms = 20;
	CHECK_EQ(pthread_create(&th[0], NULL, waiter, NULL), 0);
	wait_waiters(1);
	ibtrs_tags_put(&tags, (uint32_t)ids[NR / 4 + 3], true);
	CHECK_EQ(pthread_join(th[0], NULL), 0);
	CHECK_EQ(atomic_load(&got), 5);
	ibtrs_tags_destroy(&tags);
}

static void test_wait_and_shutdown(void)
{
	pthread_t th;
	int i, id;

	CHECK_EQ(ibtrs_tags_init(&tags, 4, 2), 0);
	for (i = 0; i < 4; i++)
		CHECK(ibtrs_tags_get(&tags, false) >= 0);
	/* A waiter sleeps until a put. */
	atomic_store(&woke, 0);
	CHECK_EQ(pthread_create(&th, NULL, waiter, NULL), 0);
	usleep(100000);
	CHECK_EQ(atomic_load(&woke), 0);
	ibtrs_tags_put(&tags, 2, true);
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK_EQ(atomic_load(&woke), 1);
	/* Shutdown wakes a waiter with -ECONNABORTED and fails later gets. */
	atomic_store(&woke, 0);
	CHECK_EQ(pthread_create(&th, NULL, waiter, NULL), 0);
	usleep(100000);
	ibtrs_tags_shutdown(&tags);
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK_EQ(atomic_load(&woke), -ECONNABORTED);
	id = ibtrs_tags_get(&tags, false);
	CHECK_EQ(id, -ECONNABORTED);
	ibtrs_tags_destroy(&tags);
}

static _Atomic unsigned int handoffs;

#define HANDOFFS 2000

/*
 * Two threads hand one tag to each other: each takes it (waiting), holds
 * it a little, puts it back and waits for the other to take it. The
 * taker is either asleep already or still on its way, as the random hold
 * decides; a wake-up lost in between leaves it asleep until it looks
 * again (recheck_ms, set long), which the bounded wait reports.
 */
static void *pingpong(void *arg)
{
	unsigned long long s = (unsigned long long)(uintptr_t)arg;
	unsigned int i, seen;

	for (i = 0; i < HANDOFFS / 2; i++) {
		int id = ibtrs_tags_get(&tags, true), k;

		CHECK_EQ(id, 0);
		seen = atomic_fetch_add(&handoffs, 1) + 1;
		if (t_rand(&s) & 1)
			usleep((unsigned int)(t_rand(&s) % 100));
		ibtrs_tags_put(&tags, 0, false);
		if (seen == HANDOFFS)
			break;
		for (k = 0; k < 5000 && atomic_load(&handoffs) == seen; k++)
			usleep(1000);
		CHECK(atomic_load(&handoffs) != seen);
	}
	return NULL;
}

/* Run @fn on @n threads (at most 16), each with its own seed, to the end. */
static void run_threads(void *(*fn)(void *), int n, int seed)
{
	pthread_t th[16];
	int i;

	CHECK(n <= 16);
	for (i = 0; i < n; i++)
		CHECK_EQ(pthread_create(&th[i], NULL, fn,
					(void *)(uintptr_t)(seed + i)),
			 0);
	for (i = 0; i < n; i++)
		CHECK_EQ(pthread_join(th[i], NULL), 0);
}

static void test_handoff(void)
{
	CHECK_EQ(ibtrs_tags_init(&tags, 1, 1), 0);
	tags.recheck_ms = 60000;
	atomic_store(&handoffs, 0);
	run_threads(pingpong, 2, 7);
	CHECK_EQ(atomic_load(&handoffs), HANDOFFS);
	CHECK_EQ(ibtrs_tags_free_count(&tags), 1);
	ibtrs_tags_destroy(&tags);
}

static void *hammer(void *arg)
{
	unsigned long long s = (unsigned long long)(uintptr_t)arg;
	int held[8], n = 0, i;

	for (i = 0; i < 20000; i++) {
		if (n < 8 && (t_rand(&s) & 1)) {
			/*
			 * Wait only with empty hands: waiting while holding
			 * tags could deadlock all threads, as it would any
			 * user of a bounded allocator.
			 */
			int id = ibtrs_tags_get(&tags, n == 0);

			if (id == -EAGAIN)
				continue;
			CHECK(id >= 0 && id < NR);
			/* Nobody else holds it. */
			CHECK_EQ(atomic_exchange(&owner[id], 1), 0);
			held[n++] = id;
		} else if (n) {
			int id = held[--n];

			CHECK_EQ(atomic_exchange(&owner[id], 0), 1);
			/* True: the ones still held come back later. */
			ibtrs_tags_put(&tags, (uint32_t)id, n > 0);
		}
	}
	while (n) {
		int id = held[--n];

		CHECK_EQ(atomic_exchange(&owner[id], 0), 1);
		ibtrs_tags_put(&tags, (uint32_t)id, n > 0);
	}
	return NULL;
}

static void test_threads(void)
{
	/* 16 threads holding up to 8 each share 64 ids: some must wait. */
	CHECK_EQ(ibtrs_tags_init(&tags, NR, 0), 0);
	run_threads(hammer, 16, 1);
	CHECK_EQ(ibtrs_tags_free_count(&tags), NR);
	ibtrs_tags_destroy(&tags);
}

int main(void)
{
	alarm(120);
	test_all_ids(1);
	test_all_ids(3);
	test_all_ids(0);
	test_sizes();
	test_wait_and_shutdown();
	test_wake_batch();
	test_handoff();
	test_threads();
	printf("tags: ok\n");
	return 0;
}
