/* SPDX-License-Identifier: MIT */
/*
 * srv_uring.h - the I/O engine of the ibnbd server (srv_uring.c): a
 * request is a few steps on one file, run inline where they cannot wait
 * for a device and by an io_uring for the rest. The engine knows files,
 * steps and buffers only; whoever submits a request is told of its end
 * through the ring's completion callback (srv_io_done_fn).
 *
 * Locking: ring->sq_lock guards the submission queue and the backlog of
 * the ring; the callback runs without it.
 */
#ifndef IBNBD_SRV_URING_H
#define IBNBD_SRV_URING_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef IBNBD_HAVE_URING
#include <liburing.h>
#endif

/* Steps of one request, run one after the other (struct srv_io). */
enum srv_step {
	SRV_STEP_FSYNC,	   /* fdatasync */
	SRV_STEP_READ,	   /* read into the chunk */
	SRV_STEP_WRITE,	   /* write from the chunk */
	SRV_STEP_PUNCH,	   /* fallocate PUNCH_HOLE | KEEP_SIZE */
	SRV_STEP_ZERO,	   /* fallocate ZERO_RANGE | KEEP_SIZE */
	SRV_STEP_ALLOC,	   /* fallocate KEEP_SIZE (after PUNCH: zeros kept) */
	SRV_STEP_SHUTDOWN, /* internal: wakes the completion thread to stop */
};

#define SRV_IO_MAX_STEPS 4

/**
 * struct srv_file - a file as the engine runs steps on it
 * @fd: the file
 * @direct: opened O_DIRECT: nothing runs inline
 * @membacked: a regular file of tmpfs or ramfs: reading and writing it is a
 *	memory copy, done inline on the submitting thread
 * @nowait: [0] reads, [1] writes: RWF_NOWAIT is worth trying inline (not
 *	O_DIRECT, and not yet refused with -EOPNOTSUPP); atomic, relaxed
 */
struct srv_file {
	int fd;
	bool direct;
	bool membacked;
	bool nowait[2];
};

/**
 * struct srv_io - one block request on its way through the engine
 * @next: the backlog of the ring (free for the submitter's use otherwise)
 * @file: the file (NULL only for the ring's own shutdown request)
 * @data: the buffer: the chunk
 * @offset: byte offset of the request
 * @len: bytes of the request (READ, WRITE, DISCARD, WRITE_ZEROES)
 * @done: bytes of the current READ or WRITE step already done
 * @steps: what to do, in order
 * @nsteps: entries of @steps
 * @step: the step running
 * @retries: times the current request met -EAGAIN or -EINTR
 * @dsync: the WRITE step is RWF_DSYNC (FUA)
 * @async: the READ or WRITE step goes to io_uring's workers at once
 *	(IOSQE_ASYNC): RWF_NOWAIT already failed inline, io_uring's own
 *	non-blocking try would fail too
 * @zero_fallback: WRITE_ZEROES may fall back to another fallocate mode
 */
struct srv_io {
	struct srv_io *next;
	struct srv_file *file;
	char *data;
	uint64_t offset;
	uint32_t len;
	uint32_t done;
	uint8_t steps[SRV_IO_MAX_STEPS];
	uint8_t nsteps;
	uint8_t step;
	uint16_t retries;
	bool dsync;
	bool async;
	bool zero_fallback;
};

/*
 * The ring's completion callback: the last step of @io finished (0) or
 * failed (a negative errno). Called on the completion thread, no lock of
 * the ring held; @io is the caller's again.
 */
typedef void srv_io_done_fn(struct srv_io *io, int err);

/**
 * struct srv_ring - the io_uring engine
 * @ring: the io_uring (its SQ under @sq_lock, its CQ the thread's)
 * @done: the completion callback
 * @sq_lock: guards the SQ, @backlog, @inflight and @reaping
 * @backlog: requests waiting for room in the ring, oldest first
 * @backlog_tail: last of @backlog
 * @inflight: SQEs submitted and not yet reaped
 * @max_inflight: bound of @inflight: the CQ never overflows
 * @reaping: the completion thread works on a batch and submits whatever
 *	is queued before it waits again: a submitter may leave its SQE queued
 * @thread: the completion thread
 * @started: @thread runs
 * @shutdown: the stop request of srv_ring_fini()
 */
struct srv_ring {
#ifdef IBNBD_HAVE_URING
	struct io_uring ring;
#endif
	srv_io_done_fn *done;
	pthread_mutex_t sq_lock;
	struct srv_io *backlog;
	struct srv_io *backlog_tail;
	unsigned int inflight;
	unsigned int max_inflight;
	bool reaping;
	pthread_t thread;
	bool started;
	struct srv_io shutdown;
};

/* Run what of @io cannot wait for a device now; true when finished. */
bool srv_io_inline(struct srv_io *io, int *err);
/* Set up the ring of @entries SQEs calling @done, start its thread. */
int srv_ring_init(struct srv_ring *r, unsigned int entries,
		  srv_io_done_fn *done);
/* Stop the thread once every request in flight completed; free. */
void srv_ring_fini(struct srv_ring *r);
/* Start the current step of @io; @r's callback reports its end. */
void srv_ring_submit(struct srv_ring *r, struct srv_io *io);

#endif /* IBNBD_SRV_URING_H */
