/* SPDX-License-Identifier: MIT */
/*
 * srv.h - internals of the ibnbd server: the export table (srv_export.c),
 * the sessions and their devices (srv.c) and the I/O engine (srv_uring.c:
 * inline system calls where they cannot block, io_uring for the rest).
 *
 * Locking: srv->lock guards the export table and every export's open
 * counts; sess->lock guards a session's device table and its free list of
 * requests; ring->sq_lock guards the submission queue and the backlog of
 * the ring. None is held while another is taken, except sess->lock around
 * srv->lock when a device's last reference goes (srv_dev_put()).
 */
#ifndef IBNBD_SRV_H
#define IBNBD_SRV_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "ibnbd.h"
#include "proto.h"

#ifdef IBNBD_HAVE_URING
#include <liburing.h>
#endif

/* Largest DISCARD and WRITE_ZEROES the server advertises, bytes. */
#define SRV_MAX_DISCARD (1u << 30)
/* Most devices a session may hold; device ids keep the slot in 16 bits. */
#define SRV_MAX_DEVICES 65535u

/**
 * struct srv_export - one exported file or block device
 * @next: next in the table
 * @name: the name clients open
 * @path: the path given at export time, for messages
 * @fd: the file, open until ibnbd_srv_destroy()
 * @readonly: rw opens are refused
 * @blkdev: @fd is a block device (geometry from ioctls)
 * @discard: the backing store can punch holes (DISCARD advertised)
 * @direct: opened O_DIRECT (a file's logical block is then 4096)
 * @membacked: a regular file of tmpfs or ramfs: reading and writing it is a
 *	memory copy, done inline on the thread of rdma_ev
 * @nowait: [0] reads, [1] writes: RWF_NOWAIT is worth trying inline (not
 *	O_DIRECT, and not yet refused with -EOPNOTSUPP); atomic, relaxed
 * @ro_opens: read-only opens now (srv->lock)
 * @rw_opens: rw and migration opens now (srv->lock)
 */
struct srv_export {
	struct srv_export *next;
	char name[IBNBD_NAME_MAX + 1];
	char path[PATH_MAX];
	int fd;
	bool readonly;
	bool blkdev;
	bool discard;
	bool direct;
	bool membacked;
	bool nowait[2];
	unsigned int ro_opens;
	unsigned int rw_opens;
};

/**
 * struct srv_geo - the geometry of an export, probed at each OPEN
 * @size: bytes, rounded down to @lbs
 * @lbs: logical block size
 * @pbs: physical block size
 */
struct srv_geo {
	uint64_t size;
	uint32_t lbs;
	uint32_t pbs;
};

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

struct srv_dev;
struct ibnbd_srv_sess;

/**
 * struct srv_io - one block request on its way through the ring
 * @next: free list of the session, or the backlog of the ring
 * @sess: the session (its free list takes @io back)
 * @dev: the device, one reference held
 * @id: the ibtrs operation to answer
 * @data: the chunk
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
	struct ibnbd_srv_sess *sess;
	struct srv_dev *dev;
	struct ibtrs_srv_op *id;
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

/**
 * struct srv_ring - the io_uring engine
 * @ring: the io_uring (its SQ under @sq_lock, its CQ the thread's)
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

/**
 * struct ibnbd_srv - the server
 * @opts: its options
 * @lock: guards @exports and their open counts
 * @exports: the export table
 * @nr_exports: entries of @exports
 * @ring: the I/O engine
 */
struct ibnbd_srv {
	struct ibnbd_srv_opts opts;
	pthread_mutex_t lock;
	struct srv_export *exports;
	unsigned int nr_exports;
	struct srv_ring ring;
};

/**
 * struct srv_dev - one open of an export by a session
 * @exp: the export
 * @id: the device id the client names it by (slot in the low 16 bits)
 * @rw: opened rw or migration (counted in @exp->rw_opens)
 * @refs: the session table's reference plus one per request (sess->lock)
 * @geo: the geometry given in OPEN_RSP
 * @max_transfer: largest READ or WRITE
 * @max_discard: largest DISCARD (0: none)
 * @max_write_zeroes: largest WRITE_ZEROES
 */
struct srv_dev {
	struct srv_export *exp;
	uint32_t id;
	bool rw;
	unsigned int refs;
	struct srv_geo geo;
	uint32_t max_transfer;
	uint32_t max_discard;
	uint32_t max_write_zeroes;
};

/**
 * struct ibnbd_srv_sess - the ibnbd state of one ibtrs session
 * @srv: the server
 * @lock: guards everything below
 * @devs: the device table, @max_devices slots
 * @max_devices: slots of @devs
 * @nr_devs: devices open
 * @seq: counter making device ids unique within the session
 * @free_ios: requests ready for reuse
 * @nr_ios: requests allocated (all on @free_ios when idle)
 * @refs: the owner's reference plus one per request in flight
 */
struct ibnbd_srv_sess {
	struct ibnbd_srv *srv;
	pthread_mutex_t lock;
	struct srv_dev **devs;
	uint32_t max_devices;
	uint32_t nr_devs;
	uint16_t seq;
	struct srv_io *free_ios;
	unsigned int nr_ios;
	unsigned int refs;
};

/* srv_export.c */
struct srv_export *srv_export_find(struct ibnbd_srv *srv, const char *name);
int srv_export_geo(const struct srv_export *exp, struct srv_geo *geo);
void srv_exports_free(struct ibnbd_srv *srv);

/* srv_uring.c */
bool srv_io_inline(struct srv_io *io, int *err);
int srv_ring_init(struct srv_ring *r, unsigned int entries);
void srv_ring_fini(struct srv_ring *r);
void srv_ring_submit(struct srv_ring *r, struct srv_io *io);

/* srv.c: called by the ring when the last step of @io completed */
void srv_io_complete(struct srv_io *io, int err);

#endif /* IBNBD_SRV_H */
