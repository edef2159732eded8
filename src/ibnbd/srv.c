// SPDX-License-Identifier: MIT
/*
 * srv.c - the ibnbd server: sessions, devices, access modes and the
 * checks of every request, in front of the I/O engine (srv_uring.c: inline
 * where nothing waits for a device, io_uring for the rest) and the export
 * table (srv_export.c).
 *
 * Every field of a request is checked before anything runs: a request
 * that fails a check is answered with its errno at once (the rdma_ev
 * return value) and the session goes on. A device is referenced by its
 * session's table and by each request running on it, so a CLOSE or the
 * end of the session while I/O runs frees it only after the last request
 * (and gives its rw slot back then).
 *
 * Access modes as RNBD: any number of ro opens of an export; one rw open
 * at a time (a second is refused -EBUSY) unless it asks for migration,
 * which is granted beside the rw open; rw asked of a read-only export is
 * refused -EROFS. The counts are server wide, under srv->lock.
 *
 * An OPEN by an identity the allow list does not name for the export is
 * refused -EACCES, whether the export exists or not: a stranger learns no
 * export names by trying them.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "srv.h"

/* Defaults of struct ibnbd_srv_opts. */
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr)-offsetof(type, member)))

static srv_io_done_fn io_done;

#define SRV_DEFAULT_MAX_DEVICES 64u
#define SRV_DEFAULT_RING_ENTRIES 256u
/* io_uring's largest SQ. */
#define SRV_MAX_RING_ENTRIES 32768u

/**
 * ibnbd_srv_opts_init() - fill @opts with the defaults
 * @opts: options to fill
 * @size: sizeof(*opts) as the caller knows it
 */
void ibnbd_srv_opts_init(struct ibnbd_srv_opts *opts, size_t size)
{
	struct ibnbd_srv_opts d = {
		.size = size,
		.direct = false,
		.max_io_size = IBTRS_DEFAULT_MAX_IO_SIZE,
		.max_devices = SRV_DEFAULT_MAX_DEVICES,
		.ring_entries = SRV_DEFAULT_RING_ENTRIES,
	};

	if (!opts || size < sizeof(opts->size))
		return;
	memset(opts, 0, size);
	memcpy(opts, &d, size < sizeof(d) ? size : sizeof(d));
}

/**
 * ibnbd_srv_create() - an ibnbd server with no exports yet
 * @opts: options, or NULL for the defaults
 *
 * Return: the server, or NULL with errno set.
 */
struct ibnbd_srv *ibnbd_srv_create(const struct ibnbd_srv_opts *opts)
{
	struct ibnbd_srv_opts o;
	struct ibnbd_srv *srv;
	int ret;

	ibnbd_srv_opts_init(&o, sizeof(o));
	if (opts) {
		if (opts->size < sizeof(opts->size) || opts->size > sizeof(o)) {
			errno = EINVAL;
			return NULL;
		}
		memcpy(&o, opts, opts->size);
		o.size = sizeof(o);
	}
	if (o.max_io_size < 512 || !o.max_devices ||
	    o.max_devices > SRV_MAX_DEVICES || !o.ring_entries ||
	    o.ring_entries > SRV_MAX_RING_ENTRIES) {
		errno = EINVAL;
		return NULL;
	}
	srv = calloc(1, sizeof(*srv));
	if (!srv) {
		errno = ENOMEM;
		return NULL;
	}
	srv->opts = o;
	pthread_mutex_init(&srv->lock, NULL);
	ret = srv_ring_init(&srv->ring, o.ring_entries, io_done);
	if (ret) {
		pthread_mutex_destroy(&srv->lock);
		free(srv);
		errno = -ret;
		return NULL;
	}
	return srv;
}

/**
 * ibnbd_srv_destroy() - close every export and free the server
 * @srv: the server, or NULL; no session state left
 */
void ibnbd_srv_destroy(struct ibnbd_srv *srv)
{
	if (!srv)
		return;
	srv_ring_fini(&srv->ring);
	srv_exports_free(srv);
	srv_allow_free(srv);
	pthread_mutex_destroy(&srv->lock);
	free(srv);
}

/**
 * ibnbd_is_request() - whether a request's user message is ibnbd's
 * @usr: the user message
 * @usrlen: its length
 *
 * Return: true when it starts with the ibnbd magic.
 */
bool ibnbd_is_request(const void *usr, size_t usrlen)
{
	return ibnbd_is_msg(usr, usrlen);
}

/**
 * sess_destroy() - free a session's state, its last reference gone
 * @s: the state
 */
static void sess_destroy(struct ibnbd_srv_sess *s)
{
	struct srv_req *r;

	while ((r = s->free_reqs)) {
		s->free_reqs = r->next;
		free(r);
	}
	pthread_mutex_destroy(&s->lock);
	free(s->devs);
	free(s);
}

/**
 * sess_get() - the state of an ibtrs session, created at its first request
 * @srv: the server
 * @sessp: the caller's pointer to it
 * @sess: the ibtrs session, whose identity the state keeps
 *
 * Two first requests of one session may race on two threads: the one
 * that loses the exchange frees its copy.
 *
 * Return: the state, or NULL when out of memory.
 */
static struct ibnbd_srv_sess *sess_get(struct ibnbd_srv *srv,
				       struct ibnbd_srv_sess **sessp,
				       struct ibtrs_srv *sess)
{
	struct ibnbd_srv_sess *s, *expected = NULL;

	s = __atomic_load_n(sessp, __ATOMIC_ACQUIRE);
	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->devs = calloc(srv->opts.max_devices, sizeof(*s->devs));
	if (!s->devs) {
		free(s);
		return NULL;
	}
	/* A truncated identity would match patterns the real one does not. */
	if (!sess ||
	    ibtrs_srv_get_identity(sess, s->identity, sizeof(s->identity)))
		s->identity[0] = '\0';
	s->srv = srv;
	s->max_devices = srv->opts.max_devices;
	s->refs = 1;
	pthread_mutex_init(&s->lock, NULL);
	if (!__atomic_compare_exchange_n(sessp, &expected, s, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		sess_destroy(s);
		return expected;
	}
	return s;
}

/**
 * dev_lookup() - the device of @id in @s
 * @s: the session
 * @id: the device id from the request
 *
 * Context: s->lock held.
 *
 * Return: the device, or NULL.
 */
static struct srv_dev *dev_lookup(struct ibnbd_srv_sess *s, uint32_t id)
{
	uint32_t slot = id & 0xffffu;
	struct srv_dev *dev;

	if (slot >= s->max_devices)
		return NULL;
	dev = s->devs[slot];
	return dev && dev->id == id ? dev : NULL;
}

/**
 * dev_put() - drop a reference of a device
 * @dev: the device
 *
 * The last one gives the export's open back and frees @dev.
 *
 * Context: the session's lock held (srv->lock is taken inside).
 */
static void dev_put(struct ibnbd_srv *srv, struct srv_dev *dev)
{
	if (--dev->refs)
		return;
	pthread_mutex_lock(&srv->lock);
	if (dev->rw)
		dev->exp->rw_opens--;
	else
		dev->exp->ro_opens--;
	pthread_mutex_unlock(&srv->lock);
	free(dev);
}

/**
 * do_sess_info() - answer SESS_INFO
 * @srv: the server
 * @id: the operation
 * @dir: must be IBTRS_READ
 * @data: where the answer goes
 * @datalen: at least sizeof(struct ibnbd_msg_sess_info_rsp)
 * @req: the request
 *
 * Return: 0 (answered), -EINVAL, -EPROTONOSUPPORT.
 */
static int do_sess_info(struct ibnbd_srv *srv, struct ibtrs_srv_op *id, int dir,
			void *data, size_t datalen, const struct ibnbd_req *req)
{
	struct ibnbd_sess_info info;

	if (dir != IBTRS_READ || !data ||
	    datalen < sizeof(struct ibnbd_msg_sess_info_rsp))
		return -EINVAL;
	if (req->ver_major != IBNBD_PROTO_VER_MAJOR)
		return -EPROTONOSUPPORT;
	info.ver_major = IBNBD_PROTO_VER_MAJOR;
	info.ver_minor = IBNBD_PROTO_VER_MINOR;
	/* The lower minor of the two (ours is 0 for now). */
	if (info.ver_minor > req->ver_minor)
		info.ver_minor = req->ver_minor;
	info.max_devices = srv->opts.max_devices;
	memset(data, 0, datalen);
	ibnbd_enc_sess_info_rsp(data, datalen, &info);
	ibtrs_srv_resp_rdma(id, 0);
	return 0;
}

/**
 * dev_info() - the OPEN_RSP of a new device
 * @srv: the server
 * @dev: the device, geometry filled
 * @info: filled
 *
 * Return: 0, or -EINVAL when max_io_size is below the logical block.
 */
static int dev_info(struct ibnbd_srv *srv, struct srv_dev *dev,
		    struct ibnbd_open_info *info)
{
	uint32_t lbs = dev->geo.lbs;

	memset(info, 0, sizeof(*info));
	dev->max_transfer = srv->opts.max_io_size - srv->opts.max_io_size % lbs;
	if (!dev->max_transfer)
		return -EINVAL;
	info->device_id = dev->id;
	info->size = dev->geo.size;
	info->logical_block_size = lbs;
	info->physical_block_size = dev->geo.pbs;
	info->max_transfer = dev->max_transfer;
	info->max_segments = IBTRS_DEFAULT_MAX_SEGMENTS;
	/* Files have a page cache; RWF_DSYNC makes FUA native. */
	info->flags = IBNBD_WIRE_DEV_FUA | IBNBD_WIRE_DEV_WRITE_CACHE |
		      IBNBD_WIRE_DEV_WRITE_ZEROES;
	dev->max_write_zeroes = SRV_MAX_DISCARD - SRV_MAX_DISCARD % lbs;
	info->max_write_zeroes = dev->max_write_zeroes;
	if (dev->exp->discard) {
		dev->max_discard = dev->max_write_zeroes;
		info->flags |= IBNBD_WIRE_DEV_DISCARD;
		info->max_discard = dev->max_discard;
	}
	info->discard_granularity = dev->geo.pbs;
	if (!dev->rw)
		info->flags |= IBNBD_WIRE_DEV_READONLY;
	return 0;
}

/**
 * do_open() - answer OPEN
 * @srv: the server
 * @s: the session
 * @id: the operation
 * @dir: must be IBTRS_READ
 * @data: where the answer goes
 * @datalen: at least sizeof(struct ibnbd_msg_open_rsp)
 * @req: the request
 *
 * Return: 0 (answered), -EINVAL, -EACCES (the allow list refuses the
 * session's identity), -ENOENT, -EROFS, -EBUSY, -EMFILE, -ENOMEM, or the
 * errno of probing the export.
 */
static int do_open(struct ibnbd_srv *srv, struct ibnbd_srv_sess *s,
		   struct ibtrs_srv_op *id, int dir, void *data, size_t datalen,
		   const struct ibnbd_req *req)
{
	bool rw = req->access_mode != IBNBD_WIRE_ACCESS_RO;
	struct ibnbd_open_info info;
	struct srv_export *exp;
	struct srv_dev *dev;
	bool allowed;
	uint32_t slot;
	int ret;

	if (dir != IBTRS_READ || !data ||
	    datalen < sizeof(struct ibnbd_msg_open_rsp))
		return -EINVAL;
	pthread_mutex_lock(&srv->lock);
	allowed = srv_allowed(srv, s->identity, req->name);
	exp = allowed ? srv_export_find(srv, req->name) : NULL;
	pthread_mutex_unlock(&srv->lock);
	if (!allowed)
		return -EACCES;
	/* Exports are never removed while the server runs. */
	if (!exp)
		return -ENOENT;
	if (rw && exp->readonly)
		return -EROFS;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->exp = exp;
	dev->rw = rw;
	dev->refs = 1;
	ret = srv_export_geo(exp, &dev->geo);
	if (ret)
		goto err;

	pthread_mutex_lock(&s->lock);
	ret = -EMFILE;
	if (s->nr_devs >= s->max_devices)
		goto err_unlock;
	for (slot = 0; slot < s->max_devices && s->devs[slot]; slot++)
		;
	if (slot >= s->max_devices)
		goto err_unlock;
	dev->id = (uint32_t)++s->seq << 16 | slot;
	ret = dev_info(srv, dev, &info);
	if (ret)
		goto err_unlock;
	pthread_mutex_lock(&srv->lock);
	if (req->access_mode == IBNBD_WIRE_ACCESS_RW && exp->rw_opens) {
		pthread_mutex_unlock(&srv->lock);
		ret = -EBUSY;
		goto err_unlock;
	}
	if (rw)
		exp->rw_opens++;
	else
		exp->ro_opens++;
	pthread_mutex_unlock(&srv->lock);
	s->devs[slot] = dev;
	s->nr_devs++;
	pthread_mutex_unlock(&s->lock);

	memset(data, 0, datalen);
	ibnbd_enc_open_rsp(data, datalen, &info);
	ibtrs_srv_resp_rdma(id, 0);
	return 0;
err_unlock:
	pthread_mutex_unlock(&s->lock);
err:
	free(dev);
	return ret;
}

/**
 * do_close() - answer CLOSE
 * @srv: the server
 * @s: the session
 * @id: the operation
 * @dir: must be IBTRS_WRITE
 * @datalen: must be 0
 * @req: the request
 *
 * Requests still running on the device finish; the device goes with the
 * last of them.
 *
 * Return: 0 (answered), -EINVAL, -ENODEV.
 */
static int do_close(struct ibnbd_srv *srv, struct ibnbd_srv_sess *s,
		    struct ibtrs_srv_op *id, int dir, size_t datalen,
		    const struct ibnbd_req *req)
{
	struct srv_dev *dev;

	if (dir != IBTRS_WRITE || datalen)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	dev = dev_lookup(s, req->device_id);
	if (!dev) {
		pthread_mutex_unlock(&s->lock);
		return -ENODEV;
	}
	s->devs[dev->id & 0xffffu] = NULL;
	s->nr_devs--;
	dev_put(srv, dev);
	pthread_mutex_unlock(&s->lock);
	ibtrs_srv_resp_rdma(id, 0);
	return 0;
}

/**
 * io_check() - check an IO request against its device
 * @dev: the device
 * @dir: the ibtrs direction
 * @datalen: the ibtrs data length
 * @req: the request
 *
 * The order of the checks is docs/ibnbd.md's (section 2.5).
 *
 * Return: 0, -EINVAL (direction, data length, alignment, range, flags),
 * -EMSGSIZE (over the limit of the op), -EROFS (a write on an ro open),
 * -EOPNOTSUPP (DISCARD the export cannot do).
 */
static int io_check(const struct srv_dev *dev, int dir, size_t datalen,
		    const struct ibnbd_req *req)
{
	uint32_t lbs = dev->geo.lbs;
	uint16_t allowed = IBNBD_WIRE_F_PREFLUSH;
	uint32_t max;

	if (dir != (req->op == IBNBD_WIRE_OP_READ ? IBTRS_READ : IBTRS_WRITE))
		return -EINVAL;
	switch (req->op) {
	case IBNBD_WIRE_OP_READ:
	case IBNBD_WIRE_OP_WRITE:
		if (req->len != datalen)
			return -EINVAL;
		max = dev->max_transfer;
		break;
	case IBNBD_WIRE_OP_FLUSH:
		if (req->offset || req->len || datalen || req->flags & ~allowed)
			return -EINVAL;
		return 0;
	case IBNBD_WIRE_OP_DISCARD:
		max = dev->max_discard;
		break;
	default:
		max = dev->max_write_zeroes;
		allowed |= IBNBD_WIRE_F_NOUNMAP;
		break;
	}
	if (req->op != IBNBD_WIRE_OP_READ)
		allowed |= IBNBD_WIRE_F_FUA;
	if (req->op > IBNBD_WIRE_OP_WRITE && datalen)
		return -EINVAL;
	if (req->flags & ~allowed)
		return -EINVAL;
	if (!max)
		return -EOPNOTSUPP;
	if (!req->len || req->len % lbs || req->offset % lbs ||
	    req->offset > dev->geo.size ||
	    req->len > dev->geo.size - req->offset)
		return -EINVAL;
	if (req->len > max)
		return -EMSGSIZE;
	if (req->op != IBNBD_WIRE_OP_READ && !dev->rw)
		return -EROFS;
	return 0;
}

/**
 * io_steps() - lay out the steps of a checked IO request
 * @io: the request
 * @req: the decoded message
 */
static void io_steps(struct srv_io *io, const struct ibnbd_req *req)
{
	bool fua = req->flags & IBNBD_WIRE_F_FUA;
	uint8_t n = 0;

	io->dsync = false;
	io->async = false;
	io->zero_fallback = false;
	if (req->flags & IBNBD_WIRE_F_PREFLUSH &&
	    req->op != IBNBD_WIRE_OP_FLUSH)
		io->steps[n++] = SRV_STEP_FSYNC;
	switch (req->op) {
	case IBNBD_WIRE_OP_READ:
		io->steps[n++] = SRV_STEP_READ;
		break;
	case IBNBD_WIRE_OP_WRITE:
		io->steps[n++] = SRV_STEP_WRITE;
		io->dsync = fua;
		fua = false;
		break;
	case IBNBD_WIRE_OP_FLUSH:
		io->steps[n++] = SRV_STEP_FSYNC;
		break;
	case IBNBD_WIRE_OP_DISCARD:
		io->steps[n++] = SRV_STEP_PUNCH;
		break;
	default:
		io->steps[n++] = req->flags & IBNBD_WIRE_F_NOUNMAP
					 ? SRV_STEP_ZERO
					 : SRV_STEP_PUNCH;
		io->zero_fallback = true;
		break;
	}
	if (fua)
		io->steps[n++] = SRV_STEP_FSYNC;
	io->nsteps = n;
	io->step = 0;
	io->done = 0;
	io->retries = 0;
}

/**
 * do_io() - check an IO request and run it
 * @srv: the server
 * @s: the session
 * @id: the operation
 * @dir: the ibtrs direction
 * @data: the chunk
 * @datalen: bytes of data
 * @req: the request
 *
 * What can run without waiting for a device runs here and is answered
 * from this thread (srv_io_inline()), within the batch of the loop that
 * called rdma_ev; the ring goes on with the rest and answers it from its
 * completion thread.
 *
 * Return: 0 (answered, or the ring answers it), or the errno of a failed
 * check (-ENODEV for an unknown device, see io_check()), -ENOMEM.
 */
static int do_io(struct ibnbd_srv *srv, struct ibnbd_srv_sess *s,
		 struct ibtrs_srv_op *id, int dir, void *data, size_t datalen,
		 const struct ibnbd_req *req)
{
	struct srv_dev *dev;
	struct srv_req *r;
	int ret;

	pthread_mutex_lock(&s->lock);
	dev = dev_lookup(s, req->device_id);
	if (!dev) {
		pthread_mutex_unlock(&s->lock);
		return -ENODEV;
	}
	ret = io_check(dev, dir, datalen, req);
	if (ret) {
		pthread_mutex_unlock(&s->lock);
		return ret;
	}
	r = s->free_reqs;
	if (r) {
		s->free_reqs = r->next;
	} else {
		/* Grows to the session's queue depth, then reused. */
		r = calloc(1, sizeof(*r));
		if (!r) {
			pthread_mutex_unlock(&s->lock);
			return -ENOMEM;
		}
		s->nr_ios++;
	}
	dev->refs++;
	s->refs++;
	pthread_mutex_unlock(&s->lock);

	r->next = NULL;
	r->sess = s;
	r->dev = dev;
	r->id = id;
	r->io.next = NULL;
	r->io.file = &dev->exp->file;
	r->io.data = data;
	r->io.offset = req->offset;
	r->io.len = req->len;
	io_steps(&r->io, req);
	if (srv_io_inline(&r->io, &ret))
		io_done(&r->io, ret);
	else
		srv_ring_submit(&srv->ring, &r->io);
	return 0;
}

/**
 * io_done() - answer a finished request: the ring's completion callback
 * @io: the request's engine part
 * @err: 0 or its negative errno
 *
 * Gives the request back to its session and drops its references first:
 * nothing of the session is touched after the answer, after which the
 * session may end.
 *
 * Context: the ring's completion thread, or the thread of rdma_ev for a
 * request run inline.
 */
static void io_done(struct srv_io *io, int err)
{
	struct srv_req *r = container_of(io, struct srv_req, io);
	struct ibnbd_srv_sess *s = r->sess;
	struct ibtrs_srv_op *id = r->id;
	bool last;

	pthread_mutex_lock(&s->lock);
	dev_put(s->srv, r->dev);
	r->dev = NULL;
	r->next = s->free_reqs;
	s->free_reqs = r;
	last = !--s->refs;
	pthread_mutex_unlock(&s->lock);
	if (last)
		sess_destroy(s);
	ibtrs_srv_resp_rdma(id, err);
}

/**
 * ibnbd_srv_rdma_ev() - serve one ibnbd request of an ibtrs server
 * @srv: the server
 * @sessp: the ibnbd state of the ibtrs session (created when NULL)
 * @sess: the ibtrs session
 * @id: the operation
 * @dir: IBTRS_READ or IBTRS_WRITE
 * @data: the chunk
 * @datalen: bytes at @data
 * @usr: the user message
 * @usrlen: its length
 *
 * Return: 0 when @id is or will be answered, or a negative errno.
 */
int ibnbd_srv_rdma_ev(struct ibnbd_srv *srv, struct ibnbd_srv_sess **sessp,
		      struct ibtrs_srv *sess, struct ibtrs_srv_op *id, int dir,
		      void *data, size_t datalen, const void *usr,
		      size_t usrlen)
{
	struct ibnbd_srv_sess *s;
	struct ibnbd_req req;
	int ret;

	if (!srv || !sessp || !id)
		return -EINVAL;
	if (datalen && !data)
		return -EINVAL;
	ret = ibnbd_dec_req(usr, usrlen, &req);
	if (ret)
		return ret;
	s = sess_get(srv, sessp, sess);
	if (!s)
		return -ENOMEM;
	switch (req.type) {
	case IBNBD_MSG_SESS_INFO:
		return do_sess_info(srv, id, dir, data, datalen, &req);
	case IBNBD_MSG_OPEN:
		return do_open(srv, s, id, dir, data, datalen, &req);
	case IBNBD_MSG_CLOSE:
		return do_close(srv, s, id, dir, datalen, &req);
	case IBNBD_MSG_IO:
		return do_io(srv, s, id, dir, data, datalen, &req);
	}
	return -EPROTO;
}

/**
 * ibnbd_srv_sess_free() - forget an ibtrs session's devices
 * @s: the state, or NULL
 *
 * Closes every device the session left open; the state itself goes with
 * its last request (all are answered at IBTRS_SRV_LINK_EV_DISCONNECTED,
 * but the completion thread may still be leaving io_done()).
 */
void ibnbd_srv_sess_free(struct ibnbd_srv_sess *s)
{
	uint32_t slot;
	bool last;

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	for (slot = 0; slot < s->max_devices; slot++) {
		if (!s->devs[slot])
			continue;
		dev_put(s->srv, s->devs[slot]);
		s->devs[slot] = NULL;
	}
	s->nr_devs = 0;
	last = !--s->refs;
	pthread_mutex_unlock(&s->lock);
	if (last)
		sess_destroy(s);
}
