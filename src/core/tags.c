// SPDX-License-Identifier: MIT
/*
 * tags.c - per-CPU sharded tag allocator with stealing.
 *
 * A put goes to the shard of the CPU it runs on, a get tries its own CPU's
 * shard first and then the others in turn. A get that finds nothing and
 * may wait registers as a waiter first, then looks again under wait_lock,
 * then sleeps; a put checks for waiters after its id is visible and wakes
 * under wait_lock, so no wake-up is lost. Which puts wake whom: tags.h.
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

int ibtrs_tags_init(struct ibtrs_tags *t, uint32_t nr, unsigned int nr_shards)
{
	pthread_condattr_t attr;
	unsigned int i;
	uint32_t id;

	memset(t, 0, sizeof(*t));
	if (!nr)
		return -EINVAL;
	if (!nr_shards) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);

		nr_shards = cpus > 0 ? (unsigned int)cpus : 1;
	}
	if (nr_shards > IBTRS_TAGS_MAX_SHARDS)
		nr_shards = IBTRS_TAGS_MAX_SHARDS;
	t->shards = aligned_alloc(64, nr_shards * sizeof(*t->shards));
	if (!t->shards)
		return -ENOMEM;
	memset(t->shards, 0, nr_shards * sizeof(*t->shards));
	t->nr_shards = nr_shards;
	t->nr = nr;
	for (i = 0; i < nr_shards; i++) {
		t->shards[i].ids = calloc(nr, sizeof(uint32_t));
		if (!t->shards[i].ids) {
			t->nr_shards = i + 1;
			ibtrs_tags_destroy(t);
			return -ENOMEM;
		}
		pthread_mutex_init(&t->shards[i].lock, NULL);
	}
	/* Low ids first, spread over the shards. */
	for (id = nr; id-- > 0;) {
		struct ibtrs_tag_shard *s = &t->shards[id % nr_shards];

		s->ids[s->nr++] = id;
	}
	pthread_mutex_init(&t->wait_lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&t->wait_cond, &attr);
	pthread_condattr_destroy(&attr);
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
	for (i = 0; i < t->nr_shards; i++) {
		if (!t->shards[i].ids)
			continue;
		pthread_mutex_destroy(&t->shards[i].lock);
		free(t->shards[i].ids);
	}
	free(t->shards);
	t->shards = NULL;
	pthread_mutex_destroy(&t->wait_lock);
	pthread_cond_destroy(&t->wait_cond);
}

/* Own shard first, then steal. */
static int try_get(struct ibtrs_tags *t)
{
	unsigned int i, first = my_shard(t);

	for (i = 0; i < t->nr_shards; i++) {
		struct ibtrs_tag_shard *s =
			&t->shards[(first + i) % t->nr_shards];
		int id = -1;

		pthread_mutex_lock(&s->lock);
		if (s->nr)
			id = (int)s->ids[--s->nr];
		pthread_mutex_unlock(&s->lock);
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
	struct ibtrs_tag_shard *s = &t->shards[my_shard(t)];

	pthread_mutex_lock(&s->lock);
	s->ids[s->nr++] = id;
	pthread_mutex_unlock(&s->lock);
	if (!atomic_load(&t->waiters))
		return;
	if (more && atomic_fetch_add_explicit(&t->wake_pending, 1,
					      memory_order_relaxed) +
				    1 <
			    t->wake_batch)
		return;
	atomic_store_explicit(&t->wake_pending, 0, memory_order_relaxed);
	pthread_mutex_lock(&t->wait_lock);
	if (more)
		pthread_cond_signal(&t->wait_cond);
	else
		pthread_cond_broadcast(&t->wait_cond);
	pthread_mutex_unlock(&t->wait_lock);
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
		pthread_mutex_lock(&t->shards[i].lock);
		n += t->shards[i].nr;
		pthread_mutex_unlock(&t->shards[i].lock);
	}
	return n;
}
