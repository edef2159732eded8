/* SPDX-License-Identifier: MIT */
/*
 * util.h - small helpers of the base layer: UUIDs, option structs,
 * single-writer counters.
 */
#ifndef IBTRS_BASE_UTIL_H
#define IBTRS_BASE_UTIL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "ibtrs.h"

#ifndef container_of
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr)-offsetof(type, member)))
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Bytes of a UUID (the wire format's IBTRS_UUID_BYTES is checked equal). */
#define IBTRS_UUID_BYTES 16

/* Random version-4 UUID. */
void ibtrs_uuid_gen(uint8_t uuid[IBTRS_UUID_BYTES]);
/* "xxxxxxxx-xxxx-..." into @buf of at least 37 bytes. */
void ibtrs_uuid_str(const uint8_t uuid[IBTRS_UUID_BYTES], char *buf);

/*
 * Fill a caller's option struct of @size bytes (its first field is its
 * size) from @defaults of @dsize bytes: the fields both know get the
 * defaults, newer fields the caller knows of are zeroed.
 */
void ibtrs_opts_fill(void *opts, size_t size, const void *defaults,
		     size_t dsize);

/*
 * Add @v to a counter that one thread writes and others only read: a plain
 * load and store, where an atomic add would be a locked instruction on
 * every request. Readers see each value whole; a reset must run on the
 * writing thread.
 */
static inline void ibtrs_counter_add(_Atomic uint64_t *c, uint64_t v)
{
	atomic_store_explicit(c,
			      atomic_load_explicit(c, memory_order_relaxed) + v,
			      memory_order_relaxed);
}

/*
 * Wait until @fd is ready for @events (POLLIN, POLLOUT) or @deadline_ns
 * (ibtrs_now_ns()) passes: 0, -ETIMEDOUT or a negative errno. For the
 * blocking steps of a connect (the tcp hello, the TLS handshake).
 */
int ibtrs_wait_fd(int fd, short events, uint64_t deadline_ns);

/* Set @ts to @ms milliseconds from now, for pthread_cond_timedwait() on a
 * condition of the default clock (CLOCK_REALTIME). */
void ibtrs_deadline_in(struct timespec *ts, unsigned int ms);

#endif /* IBTRS_BASE_UTIL_H */
