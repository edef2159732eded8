/* SPDX-License-Identifier: MIT */
/*
 * tags.h - the tag allocator: ids 0..nr-1 in per-CPU shards, taken from
 * the caller's CPU first and stolen from the others when it is empty, so
 * that many submitting threads do not queue on one lock. A shard is a
 * bitmap of its free ids: a get clears a bit, a put sets one, each with
 * one atomic instruction and no lock.
 *
 * Waiters are woken in batches. While more puts are on the way (requests
 * still in flight), one waiter is woken per wake_batch puts: it then takes
 * the batch with gets that do not sleep, where a wake-up per put would
 * cost a context switch per request. The put that leaves nothing in flight
 * wakes every waiter. A waiter also looks again every IBTRS_TAGS_RECHECK_MS,
 * for ids put back while other tags stay with holders that put nothing:
 * no id stays free while one sleeps for good.
 */
#ifndef IBTRS_TAGS_H
#define IBTRS_TAGS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define IBTRS_TAGS_MAX_SHARDS 64
/* Most puts that go by before a waiter is woken. */
#define IBTRS_TAGS_MAX_WAKE_BATCH 32
/* A waiter looks for a free id at least this often (ms). */
#define IBTRS_TAGS_RECHECK_MS 200

struct ibtrs_tag_shard {
	_Atomic uint64_t *map; /* bit set: id first + bit index is free */
	uint32_t first;	       /* the shard's ids: first..first+nr-1 */
	uint32_t nr;
} __attribute__((aligned(64)));

struct ibtrs_tags {
	struct ibtrs_tag_shard *shards;
	unsigned int nr_shards;
	uint32_t nr;
	uint32_t per; /* ids of a shard, but the last */
	/* Sleepers: counted before they look, so a put never misses one. */
	pthread_mutex_t wait_lock;
	pthread_cond_t wait_cond;
	_Atomic unsigned int waiters;
	uint32_t wake_batch;	       /* puts per wake-up while more follow */
	_Atomic uint32_t wake_pending; /* puts since the last wake-up */
	uint32_t recheck_ms;   /* IBTRS_TAGS_RECHECK_MS; a test may change it */
	_Atomic bool shutdown; /* set under wait_lock */
};

/* @nr ids over @nr_shards shards (0: one per online CPU). */
int ibtrs_tags_init(struct ibtrs_tags *t, uint32_t nr, unsigned int nr_shards);
void ibtrs_tags_destroy(struct ibtrs_tags *t);
/* An id, or -EAGAIN (none free, !wait) or -ECONNABORTED (shut down). */
int ibtrs_tags_get(struct ibtrs_tags *t, bool wait);
/*
 * Give @id back. @more: more puts are on the way (requests still in
 * flight); a waiter may then be left for a later put to wake.
 */
void ibtrs_tags_put(struct ibtrs_tags *t, uint32_t id, bool more);
/* Whether a caller sleeps in ibtrs_tags_get(): only then does @more count. */
static inline bool ibtrs_tags_have_waiters(struct ibtrs_tags *t)
{
	return atomic_load_explicit(&t->waiters, memory_order_relaxed);
}
/* Fail every waiting and future get; returns when no caller waits. */
void ibtrs_tags_shutdown(struct ibtrs_tags *t);
/* Free ids now (a snapshot). */
uint32_t ibtrs_tags_free_count(struct ibtrs_tags *t);

#endif /* IBTRS_TAGS_H */
