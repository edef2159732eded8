// SPDX-License-Identifier: MIT
/*
 * tags.c - unit tests of the sharded tag allocator: every id exactly once,
 * exhaustion, stealing across shards, waiting, shutdown, and many threads.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
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
		ibtrs_tags_put(&tags, (uint32_t)ids[i]);
	CHECK_EQ(ibtrs_tags_free_count(&tags), NR);
	for (i = 0; i < NR; i++)
		CHECK(ibtrs_tags_get(&tags, false) >= 0);
	CHECK_EQ(ibtrs_tags_get(&tags, false), -EAGAIN);
	ibtrs_tags_destroy(&tags);
}

static void *waiter(void *arg)
{
	int id = ibtrs_tags_get(&tags, true);

	(void)arg;
	atomic_store(&woke, id >= 0 ? 1 : id);
	return NULL;
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
	ibtrs_tags_put(&tags, 2);
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
			ibtrs_tags_put(&tags, (uint32_t)id);
		}
	}
	while (n) {
		int id = held[--n];

		CHECK_EQ(atomic_exchange(&owner[id], 0), 1);
		ibtrs_tags_put(&tags, (uint32_t)id);
	}
	return NULL;
}

static void test_threads(void)
{
	pthread_t th[16];
	int i;

	/* 16 threads holding up to 8 each share 64 ids: some must wait. */
	CHECK_EQ(ibtrs_tags_init(&tags, NR, 0), 0);
	for (i = 0; i < 16; i++)
		CHECK_EQ(pthread_create(&th[i], NULL, hammer,
					(void *)(uintptr_t)(i + 1)),
			 0);
	for (i = 0; i < 16; i++)
		CHECK_EQ(pthread_join(th[i], NULL), 0);
	CHECK_EQ(ibtrs_tags_free_count(&tags), NR);
	ibtrs_tags_destroy(&tags);
}

int main(void)
{
	alarm(120);
	test_all_ids(1);
	test_all_ids(3);
	test_all_ids(0);
	test_wait_and_shutdown();
	test_threads();
	printf("tags: ok\n");
	return 0;
}
