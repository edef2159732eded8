/* SPDX-License-Identifier: MIT */
/*
 * seqcount.h - a sequence count for data that is read far more often than
 * written: writers (serialized by a lock of their own) make the count odd
 * while they change the data; readers take no lock, read the data with
 * relaxed atomic loads and read it again if the count moved meanwhile.
 */
#ifndef IBTRS_SEQCOUNT_H
#define IBTRS_SEQCOUNT_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

typedef _Atomic unsigned int ibtrs_seqcount_t;

/*
 * ThreadSanitizer does not model fences (GCC warns, -Wtsan): under it the
 * fences become read-modify-writes of the count with the same ordering,
 * which it does model. Slower, and only in that build.
 */
#if defined(__SANITIZE_THREAD__)
#define IBTRS_SEQ_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define IBTRS_SEQ_TSAN 1
#endif
#endif

/* Begin a read: waits out a write under way; returns the count to check. */
static inline unsigned int ibtrs_seq_read_begin(ibtrs_seqcount_t *sc)
{
	unsigned int seq;

	while ((seq = atomic_load_explicit(sc, memory_order_acquire)) & 1)
		sched_yield();
	return seq;
}

/* Whether what was read since ibtrs_seq_read_begin() returned @seq is torn. */
static inline bool ibtrs_seq_read_retry(ibtrs_seqcount_t *sc, unsigned int seq)
{
#ifdef IBTRS_SEQ_TSAN
	return atomic_fetch_add_explicit(sc, 0, memory_order_acq_rel) != seq;
#else
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(sc, memory_order_relaxed) != seq;
#endif
}

/* Open and close a write; the writers' lock held. */
static inline void ibtrs_seq_write_begin(ibtrs_seqcount_t *sc)
{
#ifdef IBTRS_SEQ_TSAN
	atomic_fetch_add_explicit(sc, 1, memory_order_acq_rel);
#else
	atomic_store_explicit(
		sc, atomic_load_explicit(sc, memory_order_relaxed) + 1,
		memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
#endif
}

static inline void ibtrs_seq_write_end(ibtrs_seqcount_t *sc)
{
	atomic_store_explicit(
		sc, atomic_load_explicit(sc, memory_order_relaxed) + 1,
		memory_order_release);
}

#endif /* IBTRS_SEQCOUNT_H */
