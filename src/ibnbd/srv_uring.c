// SPDX-License-Identifier: MIT
/*
 * srv_uring.c - the I/O engine of the ibnbd server: system calls made
 * inline by the thread of rdma_ev where they cannot wait for a device,
 * and one io_uring for the rest, fed by the ibtrs threads that run
 * rdma_ev (several at once: the submission queue is under a mutex) and
 * reaped by one completion thread, which hands each finished request to
 * the ring's completion callback (the server answers it there). Nothing
 * here knows sessions or devices: a request names its file.
 *
 * A request is a short list of steps (struct srv_io): e.g. fdatasync then
 * write for PREFLUSH, punch a hole then fdatasync for a FUA DISCARD. Data
 * moves straight between the ibtrs chunk and the file: READ reads into
 * the chunk, WRITE writes from it. A short read or write goes on with the
 * rest, -EAGAIN and -EINTR run the step again (a bounded number of times).
 *
 * Inline (srv_io_inline(), no thread hop, the answer leaves with the
 * loop's batch): every step of a request on a file of tmpfs or ramfs,
 * which is a memory copy (these file systems have no RWF_NOWAIT, so
 * io_uring would hand each one to a worker thread); and a READ or WRITE
 * of any other export not opened O_DIRECT tried with RWF_NOWAIT: page
 * cache hits. What RWF_NOWAIT cannot finish (-EAGAIN, a short transfer)
 * goes on in the ring; an export whose file system refuses RWF_NOWAIT
 * (-EOPNOTSUPP, ext4's buffered writes) is not asked again for that
 * direction, and its writes skip io_uring's own non-blocking try
 * (IOSQE_ASYNC), which would fail the same way. FUA writes and the
 * fdatasync of PREFLUSH and FLUSH wait for the device: always the ring,
 * and so is everything of an O_DIRECT export.
 *
 * Ring: each step is one SQE; when it completes the next one is queued.
 * The ring never holds more SQEs in flight than its CQ has entries, so
 * completions cannot overflow; a request that finds the ring full waits
 * in a backlog the completion thread drains as completions free room.
 *
 * Submission: while the completion thread works on a batch of
 * completions (srv_ring.reaping) a submitter only queues its SQE: the
 * thread submits everything queued with its own follow-up steps and
 * backlog in one io_uring_enter before it waits again. Otherwise (or
 * when RING_SUBMIT_BATCH SQEs are waiting) the submitter enters itself.
 * Either way the SQE is submitted by a thread that took sq_lock after
 * the submitter queued it, which orders the submitter's writes to the
 * request and the chunk before the answer, also for tools that cannot
 * see the kernel's ordering through the ring (TSan).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "srv_uring.h"

/* Times a step runs again after -EAGAIN or -EINTR before it fails. */
#define RING_MAX_RETRIES 1000

/**
 * step_fallback() - switch a WRITE_ZEROES to the other fallocate mode
 * @io: the request, its current step failed with -EOPNOTSUPP
 *
 * ZERO_RANGE (NOUNMAP) becomes PUNCH_HOLE then a plain allocation, which
 * keeps the range allocated (tmpfs has no ZERO_RANGE); PUNCH_HOLE becomes
 * ZERO_RANGE (a block device that cannot unmap).
 *
 * Return: true when @io has a new current step.
 */
static bool step_fallback(struct srv_io *io)
{
	uint8_t *s = &io->steps[io->step];

	if (!io->zero_fallback)
		return false;
	io->zero_fallback = false;
	if (*s == SRV_STEP_PUNCH) {
		*s = SRV_STEP_ZERO;
		return true;
	}
	if (*s != SRV_STEP_ZERO || io->nsteps >= SRV_IO_MAX_STEPS)
		return false;
	memmove(s + 1, s, io->nsteps - io->step);
	s[0] = SRV_STEP_PUNCH;
	s[1] = SRV_STEP_ALLOC;
	io->nsteps++;
	return true;
}

/**
 * step_done() - account the completion of the current step of @io
 * @io: the request
 * @res: the CQE's result
 * @err: set to the request's result when it is finished
 *
 * Return: true when @io has more to do (queue it again), false when it is
 * finished with *@err.
 */
static bool step_done(struct srv_io *io, int res, int *err)
{
	uint8_t step = io->steps[io->step];

	if (res == -EAGAIN || res == -EINTR) {
		if (++io->retries <= RING_MAX_RETRIES)
			return true;
		*err = -EIO;
		return false;
	}
	if (res < 0) {
		if (res == -EOPNOTSUPP && step_fallback(io))
			return true;
		*err = res;
		return false;
	}
	if (step == SRV_STEP_READ || step == SRV_STEP_WRITE) {
		if (!res) {
			if (step == SRV_STEP_WRITE) {
				*err = -EIO;
				return false;
			}
			/* The file shrank under us: past its end is zeros. */
			memset(io->data + io->done, 0, io->len - io->done);
			res = (int)(io->len - io->done);
		}
		io->done += (uint32_t)res;
		if (io->done < io->len)
			return true;
	}
	if (++io->step < io->nsteps) {
		io->done = 0;
		return true;
	}
	*err = 0;
	return false;
}

/**
 * step_sync() - run the current step of @io as a system call, now
 * @io: the request
 * @rwf: RWF_ flags of a READ or WRITE (RWF_NOWAIT or 0)
 *
 * Return: what the CQE of the step would hold: bytes moved, 0, or a
 * negative errno.
 */
static int step_sync(struct srv_io *io, int rwf)
{
	int fd = io->file->fd, mode;
	struct iovec iov = {
		.iov_base = io->data + io->done,
		.iov_len = io->len - io->done,
	};
	off_t off = (off_t)(io->offset + io->done);
	ssize_t n;

	switch (io->steps[io->step]) {
	case SRV_STEP_READ:
		n = preadv2(fd, &iov, 1, off, rwf);
		return n < 0 ? -errno : (int)n;
	case SRV_STEP_WRITE:
		n = pwritev2(fd, &iov, 1, off,
			     rwf | (io->dsync ? RWF_DSYNC : 0));
		return n < 0 ? -errno : (int)n;
	case SRV_STEP_FSYNC:
		return fdatasync(fd) ? -errno : 0;
	case SRV_STEP_PUNCH:
		mode = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
		break;
	case SRV_STEP_ZERO:
		mode = FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE;
		break;
	case SRV_STEP_ALLOC:
		mode = FALLOC_FL_KEEP_SIZE;
		break;
	default:
		return -EINVAL;
	}
	return fallocate(fd, mode, (off_t)io->offset, (off_t)io->len) ? -errno
								      : 0;
}

/**
 * srv_io_inline() - run what of @io cannot wait for a device, now
 * @io: the request, steps laid out, none run
 * @err: set to the request's result when it is finished
 *
 * A file of tmpfs or ramfs runs every step here (memory copies, hole
 * punching; fdatasync is a no-op). Any other export not opened O_DIRECT
 * tries its READ or WRITE (not a FUA one: RWF_DSYNC waits for the
 * device) with RWF_NOWAIT; whatever that cannot do, from the step it
 * stopped at, is left to the ring: srv_ring_submit(). A failure of
 * RWF_NOWAIT is never the request's: the ring runs the step again and
 * its result is the answer.
 *
 * Context: the thread of rdma_ev; does not wait for a device.
 *
 * Return: true when @io is finished (answer it with *@err), false when
 * the ring is to go on with it.
 */
bool srv_io_inline(struct srv_io *io, int *err)
{
	struct srv_file *f = io->file;

	if (f->direct)
		return false;
	for (;;) {
		uint8_t step = io->steps[io->step];
		bool write = step == SRV_STEP_WRITE;
		bool *nowait = &f->nowait[write];
		int res;

		if (f->membacked) {
			res = step_sync(io, 0);
		} else {
			if ((step != SRV_STEP_READ && !write) ||
			    (write && io->dsync))
				return false;
			/* io_uring's own RWF_NOWAIT try of a buffered write
			 * fails as ours did: go to a worker at once. */
			io->async = write;
			if (!__atomic_load_n(nowait, __ATOMIC_RELAXED))
				return false;
			res = step_sync(io, RWF_NOWAIT);
			if (res <= 0) {
				/* The file system has no RWF_NOWAIT. */
				if (res == -EOPNOTSUPP || res == -EINVAL)
					__atomic_store_n(nowait, false,
							 __ATOMIC_RELAXED);
				return false;
			}
			io->async = false;
		}
		if (!step_done(io, res, err))
			return true;
	}
}

#ifdef IBNBD_HAVE_URING

/* CQEs reaped at once by the completion thread. */
#define RING_BATCH 64
/* SQEs a submitter leaves queued for the completion thread at most. */
#define RING_SUBMIT_BATCH 16

/**
 * ring_prep() - fill an SQE with the current step of @io
 * @sqe: the SQE
 * @io: the request
 */
static void ring_prep(struct io_uring_sqe *sqe, struct srv_io *io)
{
	int fd = io->file ? io->file->fd : -1;

	switch (io->steps[io->step]) {
	case SRV_STEP_FSYNC:
		io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
		break;
	case SRV_STEP_READ:
		io_uring_prep_read(sqe, fd, io->data + io->done,
				   io->len - io->done, io->offset + io->done);
		if (io->async)
			sqe->flags |= IOSQE_ASYNC;
		break;
	case SRV_STEP_WRITE:
		io_uring_prep_write(sqe, fd, io->data + io->done,
				    io->len - io->done, io->offset + io->done);
		if (io->dsync)
			sqe->rw_flags = RWF_DSYNC;
		if (io->async)
			sqe->flags |= IOSQE_ASYNC;
		break;
	case SRV_STEP_PUNCH:
		io_uring_prep_fallocate(
			sqe, fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			(off_t)io->offset, (off_t)io->len);
		break;
	case SRV_STEP_ZERO:
		io_uring_prep_fallocate(
			sqe, fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
			(off_t)io->offset, (off_t)io->len);
		break;
	case SRV_STEP_ALLOC:
		io_uring_prep_fallocate(sqe, fd, FALLOC_FL_KEEP_SIZE,
					(off_t)io->offset, (off_t)io->len);
		break;
	default:
		io_uring_prep_nop(sqe);
		break;
	}
	io_uring_sqe_set_data(sqe, io);
}

/**
 * ring_queue() - put the current step of @io into the SQ
 * @r: the ring
 * @io: the request
 *
 * Context: r->sq_lock held.
 *
 * Return: true when queued, false when the ring has no room.
 */
static bool ring_queue(struct srv_ring *r, struct srv_io *io)
{
	struct io_uring_sqe *sqe;

	if (r->inflight >= r->max_inflight)
		return false;
	sqe = io_uring_get_sqe(&r->ring);
	if (!sqe) {
		/* The SQ is full of queued SQEs: hand them over first. */
		io_uring_submit(&r->ring);
		sqe = io_uring_get_sqe(&r->ring);
		if (!sqe)
			return false;
	}
	ring_prep(sqe, io);
	r->inflight++;
	return true;
}

/* Append @io to the backlog. Context: r->sq_lock held. */
static void ring_backlog(struct srv_ring *r, struct srv_io *io)
{
	io->next = NULL;
	if (r->backlog_tail)
		r->backlog_tail->next = io;
	else
		r->backlog = io;
	r->backlog_tail = io;
}

/**
 * ring_drain() - move the backlog into the ring while it has room
 * @r: the ring
 *
 * Context: r->sq_lock held.
 *
 * Return: true when something was queued.
 */
static bool ring_drain(struct srv_ring *r)
{
	bool queued = false;

	while (r->backlog && ring_queue(r, r->backlog)) {
		r->backlog = r->backlog->next;
		if (!r->backlog)
			r->backlog_tail = NULL;
		queued = true;
	}
	return queued;
}

/**
 * srv_ring_submit() - start the current step of a request
 * @r: the ring
 * @io: the request
 *
 * The SQE is left queued while the completion thread is reaping: it
 * submits everything queued before it waits again.
 *
 * Context: any thread; takes r->sq_lock; does not block on I/O.
 */
void srv_ring_submit(struct srv_ring *r, struct srv_io *io)
{
	pthread_mutex_lock(&r->sq_lock);
	/* Keep the order: nothing overtakes the backlog. */
	if (r->backlog || !ring_queue(r, io))
		ring_backlog(r, io);
	else if (!r->reaping ||
		 io_uring_sq_ready(&r->ring) >= RING_SUBMIT_BATCH)
		io_uring_submit(&r->ring);
	pthread_mutex_unlock(&r->sq_lock);
}

/**
 * ring_thread() - the completion thread
 * @arg: the ring
 *
 * Reaps CQEs in batches; finished requests are answered outside the lock,
 * the rest, the backlog and what submitters queued meanwhile are
 * submitted once per batch.
 *
 * Return: NULL.
 */
static void *ring_thread(void *arg)
{
	struct srv_ring *r = arg;
	struct io_uring_cqe *cqes[RING_BATCH], *cqe;
	struct srv_io *ios[RING_BATCH];
	int res[RING_BATCH];
	bool stop = false;

	for (;;) {
		struct srv_io *again = NULL, *last = NULL;
		unsigned int i, n;
		int ret, err;
		bool queued;

		if (stop) {
			pthread_mutex_lock(&r->sq_lock);
			ret = !r->inflight && !r->backlog;
			pthread_mutex_unlock(&r->sq_lock);
			if (ret)
				break;
		}
		ret = io_uring_wait_cqe(&r->ring, &cqe);
		if (ret == -EINTR || ret == -EAGAIN)
			continue;
		if (ret)
			break;
		n = io_uring_peek_batch_cqe(&r->ring, cqes, RING_BATCH);
		for (i = 0; i < n; i++) {
			ios[i] = io_uring_cqe_get_data(cqes[i]);
			res[i] = cqes[i]->res;
		}
		io_uring_cq_advance(&r->ring, n);
		/*
		 * Taking the lock the submitter released orders its writes to
		 * the request (and the chunk) before ours, also for tools that
		 * cannot see the kernel's ordering through the ring (TSan).
		 */
		pthread_mutex_lock(&r->sq_lock);
		r->inflight -= n;
		r->reaping = true;
		pthread_mutex_unlock(&r->sq_lock);

		for (i = 0; i < n; i++) {
			struct srv_io *io = ios[i];

			if (io == &r->shutdown) {
				stop = true;
				continue;
			}
			if (step_done(io, res[i], &err)) {
				io->next = NULL;
				if (last)
					last->next = io;
				else
					again = io;
				last = io;
				continue;
			}
			r->done(io, err);
		}

		pthread_mutex_lock(&r->sq_lock);
		/* Follow-up steps go first: they are older than the backlog. */
		if (again) {
			last->next = r->backlog;
			if (!r->backlog)
				r->backlog_tail = last;
			r->backlog = again;
		}
		queued = ring_drain(r);
		if (queued || io_uring_sq_ready(&r->ring))
			io_uring_submit(&r->ring);
		/* From here on submitters enter themselves. */
		r->reaping = false;
		pthread_mutex_unlock(&r->sq_lock);
	}
	return NULL;
}

/**
 * srv_ring_init() - set up the ring and start its completion thread
 * @r: the ring, zeroed
 * @entries: SQ size
 * @done: called on the completion thread for each finished request
 *
 * Return: 0, or a negative errno.
 */
int srv_ring_init(struct srv_ring *r, unsigned int entries,
		  srv_io_done_fn *done)
{
	struct io_uring_params p;
	int ret;

	memset(&p, 0, sizeof(p));
	ret = io_uring_queue_init_params(entries, &r->ring, &p);
	if (ret)
		return ret;
	r->max_inflight = p.cq_entries;
	r->done = done;
	pthread_mutex_init(&r->sq_lock, NULL);
	r->shutdown.steps[0] = SRV_STEP_SHUTDOWN;
	r->shutdown.nsteps = 1;
	ret = pthread_create(&r->thread, NULL, ring_thread, r);
	if (ret) {
		pthread_mutex_destroy(&r->sq_lock);
		io_uring_queue_exit(&r->ring);
		return -ret;
	}
	r->started = true;
	return 0;
}

/**
 * srv_ring_fini() - stop the completion thread and free the ring
 * @r: the ring; nothing is submitted any more
 *
 * The thread stops once every request in flight has completed.
 */
void srv_ring_fini(struct srv_ring *r)
{
	if (!r->started)
		return;
	srv_ring_submit(r, &r->shutdown);
	pthread_join(r->thread, NULL);
	pthread_mutex_destroy(&r->sq_lock);
	io_uring_queue_exit(&r->ring);
	r->started = false;
}

#else /* !IBNBD_HAVE_URING */

/**
 * srv_ring_init() - without liburing there is no I/O engine
 * @r: the ring
 * @entries: SQ size
 * @done: the completion callback
 *
 * Return: -EOPNOTSUPP.
 */
int srv_ring_init(struct srv_ring *r, unsigned int entries,
		  srv_io_done_fn *done)
{
	r->done = done;
	(void)entries;
	return -EOPNOTSUPP;
}

/**
 * srv_ring_fini() - nothing to free without liburing
 * @r: the ring
 */
void srv_ring_fini(struct srv_ring *r)
{
	(void)r;
}

/**
 * srv_ring_submit() - unreachable without liburing (no server exists)
 * @r: the ring
 * @io: the request, failed at once
 */
void srv_ring_submit(struct srv_ring *r, struct srv_io *io)
{
	r->done(io, -EOPNOTSUPP);
}

#endif /* IBNBD_HAVE_URING */
