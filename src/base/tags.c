// SPDX-License-Identifier: MIT
/*
 * tags.c - per-CPU sharded tag allocator with stealing.
 *
 * Every id belongs to one shard, a bitmap of its free ids with its words
 * in cache lines of their own. A get tries its own CPU's shard first and
 * then the others in turn, and takes the lowest free id of the first word
 * that has one; a put sets the id's bit in its shard. A get that finds
 * nothing and may wait registers as a waiter first, then looks again
 * under wait_lock, then sleeps; a put checks for waiters after its id is
 * visible, passes through wait_lock and then wakes, so no wake-up is
 * lost. Which puts wake whom: tags.h.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tags.h"

static unsigned int my_shard(const struct ibtrs_tags *t)
{
	int cpu = sched_getcpu();

	return cpu < 0 ? 0 : (unsigned int)cpu % t->nr_shards;
}

#define MAP_WORDS(n) (((n) + 63u) / 64u)

int ibtrs_tags_init(struct ibtrs_tags *t, uint32_t nr, unsigned int nr_shards)
{
	pthread_condattr_t attr;
	unsigned int i;

	memset(t, 0, sizeof(*t));
	if (!nr)
		return -EINVAL;
	if (!nr_shards) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);

		nr_shards = cpus > 0 ? (unsigned int)cpus : 1;
	}
	if (nr_shards > IBTRS_TAGS_MAX_SHARDS)
		nr_shards = IBTRS_TAGS_MAX_SHARDS;
	/* Each shard has per consecutive ids, the last one what is left. */
	t->per = (nr + nr_shards - 1) / nr_shards;
	nr_shards = (nr + t->per - 1) / t->per;
	pthread_mutex_init(&t->wait_lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&t->wait_cond, &attr);
	pthread_condattr_destroy(&attr);
	t->shards = aligned_alloc(64, nr_shards * sizeof(*t->shards));
	if (!t->shards) {
		pthread_mutex_destroy(&t->wait_lock);
		pthread_cond_destroy(&t->wait_cond);
		return -ENOMEM;
	}
	memset(t->shards, 0, nr_shards * sizeof(*t->shards));
	t->nr_shards = nr_shards;
	t->nr = nr;
	for (i = 0; i < nr_shards; i++) {
		struct ibtrs_tag_shard *s = &t->shards[i];
		size_t bytes;
		uint32_t w;

		s->first = i * t->per;
		s->nr = nr - s->first < t->per ? nr - s->first : t->per;
		bytes = (MAP_WORDS(s->nr) * sizeof(uint64_t) + 63) &
			~(size_t)63;
		s->map = aligned_alloc(64, bytes);
		if (!s->map) {
			ibtrs_tags_destroy(t);
			return -ENOMEM;
		}
		memset((void *)s->map, 0, bytes);
		for (w = 0; w < s->nr / 64; w++)
			atomic_init(&s->map[w], UINT64_MAX);
		if (s->nr % 64)
			atomic_init(&s->map[w], (1ull << (s->nr % 64)) - 1);
	}
	/*
	 * A quarter of the ids: enough that a wake-up is rare next to the
	 * requests it lets through, while three quarters stay in flight.
	 */
	t->wake_batch = nr / 4;
	if (t->wake_batch > IBTRS_TAGS_MAX_WAKE_BATCH)
		t->wake_batch = IBTRS_TAGS_MAX_WAKE_BATCH;
	if (!t->wake_batch)
		t->wake_batch = 1;
	t->recheck_ms = IBTRS_TAGS_RECHECK_MS;
	return 0;
}

void ibtrs_tags_destroy(struct ibtrs_tags *t)
{
	unsigned int i;

	if (!t->shards)
		return;
	for (i = 0; i < t->nr_shards; i++)
		free((void *)t->shards[i].map);
	free(t->shards);
	t->shards = NULL;
	pthread_mutex_destroy(&t->wait_lock);
	pthread_cond_destroy(&t->wait_cond);
}

/* The lowest free id of @s, taken; -1 if it has none. */
static int shard_get(struct ibtrs_tag_shard *s)
{
	uint32_t w;

	for (w = 0; w < MAP_WORDS(s->nr); w++) {
		uint64_t v =
			atomic_load_explicit(&s->map[w], memory_order_relaxed);

		while (v) {
			uint64_t bit = 1ull << __builtin_ctzll(v);

			v = atomic_fetch_and(&s->map[w], ~bit);
			if (v & bit)
				return (int)(s->first + w * 64 +
					     (uint32_t)__builtin_ctzll(bit));
			/* Taken by another getter: v is what is left. */
		}
	}
	return -1;
}

/* Own shard first, then steal. */
static int try_get(struct ibtrs_tags *t)
{
	unsigned int i, first = my_shard(t);

	for (i = 0; i < t->nr_shards; i++) {
		int id = shard_get(&t->shards[(first + i) % t->nr_shards]);

		if (id >= 0)
			return id;
	}
	return -EAGAIN;
}

int ibtrs_tags_get(struct ibtrs_tags *t, bool wait)
{
	struct timespec ts;
	int id;

	if (atomic_load(&t->shutdown))
		return -ECONNABORTED;
	id = try_get(t);
	if (id >= 0 || !wait)
		return id;

	pthread_mutex_lock(&t->wait_lock);
	atomic_fetch_add(&t->waiters, 1);
	for (;;) {
		if (t->shutdown) {
			id = -ECONNABORTED;
			break;
		}
		id = try_get(t);
		if (id >= 0)
			break;
		/*
		 * A put that says more follow may be the last one for long
		 * (the other tags stay with their holders): look again now
		 * and then, so such a tag does not stay free while we sleep.
		 */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += (long)t->recheck_ms * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&t->wait_cond, &t->wait_lock, &ts);
	}
	atomic_fetch_sub(&t->waiters, 1);
	/* ibtrs_tags_shutdown() waits for the last waiter to leave. */
	if (t->shutdown)
		pthread_cond_broadcast(&t->wait_cond);
	pthread_mutex_unlock(&t->wait_lock);
	return id;
}

void ibtrs_tags_put(struct ibtrs_tags *t, uint32_t id, bool more)
{
	struct ibtrs_tag_shard *s = &t->shards[id / t->per];

	id -= s->first;
	atomic_fetch_or(&s->map[id / 64], 1ull << (id % 64));
	if (!atomic_load(&t->waiters))
		return;
	if (more && atomic_fetch_add_explicit(&t->wake_pending, 1,
					      memory_order_relaxed) +
				    1 <
			    t->wake_batch)
		return;
	atomic_store_explicit(&t->wake_pending, 0, memory_order_relaxed);
	/*
	 * A waiter holds wait_lock from its last look until it sleeps, so
	 * taking the lock here orders this put after that look or the look
	 * after the put. The signal follows the unlock: a waiter woken under
	 * the lock would only block again on it.
	 */
	pthread_mutex_lock(&t->wait_lock);
	pthread_mutex_unlock(&t->wait_lock);
	if (more)
		pthread_cond_signal(&t->wait_cond);
	else
		pthread_cond_broadcast(&t->wait_cond);
}

void ibtrs_tags_shutdown(struct ibtrs_tags *t)
{
	pthread_mutex_lock(&t->wait_lock);
	t->shutdown = true;
	pthread_cond_broadcast(&t->wait_cond);
	while (atomic_load(&t->waiters))
		pthread_cond_wait(&t->wait_cond, &t->wait_lock);
	pthread_mutex_unlock(&t->wait_lock);
}

uint32_t ibtrs_tags_free_count(struct ibtrs_tags *t)
{
	uint32_t n = 0;
	unsigned int i;

	for (i = 0; i < t->nr_shards; i++) {
		struct ibtrs_tag_shard *s = &t->shards[i];
		uint32_t w;

		for (w = 0; w < MAP_WORDS(s->nr); w++)
			n += (uint32_t)__builtin_popcountll(
				atomic_load(&s->map[w]));
	}
	return n;
}
