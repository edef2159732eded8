// SPDX-License-Identifier: MIT
/*
 * clt.c - the ibnbd client: block devices over an ibtrs client session.
 *
 * Every ibnbd request is one ibtrs request on one tag. The request's state
 * lives in a per-client pool of struct clt_iou sized by the session's queue
 * depth: a request holds a tag for its whole life, so at most queue_depth
 * of them exist and a slot is always free once the tag is (a lock-free
 * bitmap finds it; no malloc and no lock per request).
 *
 * A request that finds no connected path (ibtrs_clt_request() returns
 * -ENOTCONN) keeps its tag and goes on the client's waitlist; one retry
 * thread submits the waiters again every few milliseconds while a path is
 * connected, and fails those whose queue timeout passed with -ENOTCONN.
 * The application owns the session's link events, so the thread polls the
 * session's connected paths instead of waiting for RECONNECTED. Requests in
 * flight when a path dies are moved by the transport (its failover); their
 * result is passed through as is.
 *
 * The tag and the slot are given back before the user's callback runs, so
 * the callback can submit the next request with IBNBD_F_NOWAIT.
 *
 * A device counts its requests (plus one for being open); ibnbd_dev_close()
 * drops that one and waits, on the client's condition variable, until the
 * completion that brings the count to 0 says so.
 */
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ibnbd.h"
#include "proto.h"

/* How often the retry thread tries the waiting requests again. */
#define RETRY_INTERVAL_MS 2
#define DEFAULT_QUEUE_TIMEOUT_MS 30000
#define SLOT_NONE UINT32_MAX

struct ibnbd_dev;

/**
 * struct clt_iou - one request of the client
 * @clt: the client
 * @dev: the device, NULL for session requests (SESS_INFO, OPEN, CLOSE)
 * @tag: the ibtrs tag it holds from submit to completion
 * @done: the user's callback
 * @priv: its argument
 * @sg: the data buffers (borrowed)
 * @sg_cnt: elements of @sg
 * @sg_copy: a copy of the caller's iovec array, made when the request
 *           waits for a path (the caller's array may be gone by the
 *           retry); @sg points to it then
 * @len: data bytes
 * @dir: IBTRS_READ or IBTRS_WRITE
 * @slot: index in the pool, SLOT_NONE for an iou on the caller's stack
 * @msgp: the user message
 * @msglen: its length
 * @deadline_ns: when a waiting request gives up (CLOCK_MONOTONIC)
 * @next: waitlist link
 * @msg: room for an IO message (@msgp points here for block requests)
 */
struct clt_iou {
	struct ibnbd_clt *clt;
	struct ibnbd_dev *dev;
	struct ibtrs_tag *tag;
	ibnbd_done_fn *done;
	void *priv;
	const struct iovec *sg;
	unsigned int sg_cnt;
	struct iovec *sg_copy;
	uint32_t len;
	int dir;
	uint32_t slot;
	const void *msgp;
	size_t msglen;
	uint64_t deadline_ns;
	struct clt_iou *next;
	unsigned char msg[sizeof(struct ibnbd_msg_io)];
};

/**
 * struct ibnbd_clt - ibnbd on one ibtrs session
 * @sess: the session (the caller's)
 * @queue_timeout_ms: how long a request waits for a path
 * @max_io_size: the session's largest data length
 * @max_segments: the session's largest number of data buffers
 * @max_devices: what the server allows per session
 * @pool: @pool_sz request slots
 * @pool_sz: the session's queue depth
 * @bits: one bit per slot, set while the slot is taken
 * @nwords: elements of @bits
 * @lock: protects @wait_head, @wait_tail, @stop, @ndevs, and the drained
 *        flag of the devices
 * @wait_cond: wakes the retry thread
 * @drain_cond: wakes ibnbd_dev_close()
 * @wait_head: first waiting request
 * @wait_tail: last waiting request
 * @stop: the retry thread ends
 * @ndevs: open devices
 * @thread: the retry thread
 */
struct ibnbd_clt {
	struct ibtrs_clt *sess;
	uint32_t queue_timeout_ms;
	uint32_t max_io_size;
	uint32_t max_segments;
	uint32_t max_devices;
	struct clt_iou *pool;
	uint32_t pool_sz;
	_Atomic uint64_t *bits;
	uint32_t nwords;
	pthread_mutex_t lock;
	pthread_cond_t wait_cond;
	pthread_cond_t drain_cond;
	struct clt_iou *wait_head;
	struct clt_iou *wait_tail;
	bool stop;
	unsigned int ndevs;
	pthread_t thread;
};

/**
 * struct ibnbd_dev - one open device
 * @clt: the client
 * @geo: its geometry
 * @refs: requests of the device not yet completed, plus 1 while open
 * @closing: ibnbd_dev_close() started: new requests are refused
 * @drained: @refs reached 0 (under @clt->lock)
 */
struct ibnbd_dev {
	struct ibnbd_clt *clt;
	struct ibnbd_geometry geo;
	_Atomic unsigned long refs;
	_Atomic bool closing;
	bool drained;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/**
 * slot_get() - take a free request slot
 * @clt: the client
 *
 * Return: the slot, or NULL when every slot is taken (the session's queue
 * depth grew after attach: the caller allocates).
 */
static struct clt_iou *slot_get(struct ibnbd_clt *clt)
{
	uint32_t w;

	for (w = 0; w < clt->nwords; w++) {
		uint64_t v = atomic_load_explicit(&clt->bits[w],
						  memory_order_relaxed);

		while (~v) {
			unsigned int b = (unsigned int)__builtin_ctzll(~v);
			uint32_t idx = w * 64 + b;

			if (idx >= clt->pool_sz)
				break;
			if (atomic_compare_exchange_weak_explicit(
				    &clt->bits[w], &v, v | (1ull << b),
				    memory_order_acquire,
				    memory_order_relaxed)) {
				clt->pool[idx].slot = idx;
				return &clt->pool[idx];
			}
		}
	}
	return NULL;
}

/**
 * slot_put() - give a request slot back
 * @clt: the client
 * @iou: a slot from slot_get(), or an allocated iou
 */
static void slot_put(struct ibnbd_clt *clt, struct clt_iou *iou)
{
	uint32_t idx = iou->slot;

	if (idx == SLOT_NONE) {
		free(iou);
		return;
	}
	atomic_fetch_and_explicit(&clt->bits[idx / 64], ~(1ull << (idx % 64)),
				  memory_order_release);
}

/**
 * dev_get() - count a new request of @dev
 * @dev: the device
 *
 * Return: true, or false once the device is closing.
 */
static bool dev_get(struct ibnbd_dev *dev)
{
	unsigned long v = atomic_load(&dev->refs);

	do {
		if (!v || atomic_load(&dev->closing))
			return false;
	} while (!atomic_compare_exchange_weak(&dev->refs, &v, v + 1));
	return true;
}

/**
 * dev_put() - a request of @dev has ended (or the open's own reference)
 * @dev: the device
 *
 * The put that brings the count to 0 can only come after
 * ibnbd_dev_close() dropped the open's reference: it tells the closer,
 * under the client's lock, and touches @dev no more after the unlock.
 */
static void dev_put(struct ibnbd_dev *dev)
{
	struct ibnbd_clt *clt = dev->clt;

	if (atomic_fetch_sub(&dev->refs, 1) != 1)
		return;
	pthread_mutex_lock(&clt->lock);
	dev->drained = true;
	pthread_cond_broadcast(&clt->drain_cond);
	pthread_mutex_unlock(&clt->lock);
}

/**
 * iou_finish() - complete a request: give back its tag and slot, then
 * call the user
 * @iou: the request
 * @err: its result
 */
static void iou_finish(struct clt_iou *iou, int err)
{
	struct ibnbd_clt *clt = iou->clt;
	struct ibnbd_dev *dev = iou->dev;
	ibnbd_done_fn *done = iou->done;
	void *priv = iou->priv;

	if (iou->sg_copy) {
		free(iou->sg_copy);
		iou->sg_copy = NULL;
	}
	ibtrs_clt_put_tag(clt->sess, iou->tag);
	if (iou->slot != SLOT_NONE || dev)
		slot_put(clt, iou);
	done(priv, err);
	if (dev)
		dev_put(dev);
}

static void iou_conf(void *priv, int err)
{
	iou_finish(priv, err);
}

static int iou_send(struct clt_iou *iou)
{
	/* Never a NULL array, even with no data: the transport copies
	 * sg_cnt elements of it, and memcpy() takes no NULL. */
	static const struct iovec no_data;
	struct iovec v = { .iov_base = (void *)iou->msgp,
			   .iov_len = iou->msglen };

	return ibtrs_clt_request(iou->dir, iou_conf, iou->clt->sess, iou->tag,
				 iou, &v, 1, iou->len,
				 iou->sg ? iou->sg : &no_data, iou->sg_cnt);
}

/**
 * iou_start() - send a request, or queue it when no path is connected
 * @clt: the client
 * @iou: the request, holding its tag
 *
 * Return: 0 when @iou will complete through iou_finish(), else the
 * negative errno of ibtrs_clt_request() or -ENOMEM (nothing was sent).
 */
static int iou_start(struct ibnbd_clt *clt, struct clt_iou *iou)
{
	int ret = iou_send(iou);

	if (ret != -ENOTCONN)
		return ret;
	/* The slow path: the request outlives the caller's iovec array. */
	if (iou->sg_cnt) {
		iou->sg_copy = malloc(iou->sg_cnt * sizeof(*iou->sg_copy));
		if (!iou->sg_copy)
			return -ENOMEM;
		memcpy(iou->sg_copy, iou->sg, iou->sg_cnt * sizeof(*iou->sg));
		iou->sg = iou->sg_copy;
	}
	iou->deadline_ns = now_ns() + (uint64_t)clt->queue_timeout_ms * 1000000;
	iou->next = NULL;
	pthread_mutex_lock(&clt->lock);
	if (clt->wait_tail)
		clt->wait_tail->next = iou;
	else
		clt->wait_head = iou;
	clt->wait_tail = iou;
	pthread_cond_signal(&clt->wait_cond);
	pthread_mutex_unlock(&clt->lock);
	return 0;
}

/**
 * retry_pass() - try every waiting request once
 * @clt: the client
 * @list: the requests taken off the waitlist
 *
 * Return: the requests that must wait on, in their order.
 */
static struct clt_iou *retry_pass(struct ibnbd_clt *clt, struct clt_iou *list)
{
	struct clt_iou *keep = NULL, **tail = &keep, *iou, *next;
	struct ibtrs_attrs attrs;
	bool up = !ibtrs_clt_query(clt->sess, &attrs) && attrs.connected_paths;
	uint64_t now = now_ns();

	for (iou = list; iou; iou = next) {
		int ret = -ENOTCONN;

		/* Once sent, @iou may complete at once on another thread. */
		next = iou->next;
		if (up)
			ret = iou_send(iou);
		if (!ret)
			continue;
		if (ret == -ENOTCONN && now < iou->deadline_ns) {
			iou->next = NULL;
			*tail = iou;
			tail = &iou->next;
			continue;
		}
		iou_finish(iou, ret);
	}
	return keep;
}

static void *retry_main(void *arg)
{
	struct ibnbd_clt *clt = arg;

	pthread_mutex_lock(&clt->lock);
	while (!clt->stop) {
		struct clt_iou *list, *keep, *last;
		struct timespec ts;
		uint64_t t;

		if (!clt->wait_head) {
			pthread_cond_wait(&clt->wait_cond, &clt->lock);
			continue;
		}
		/* Each waiter was just tried: give the paths a moment. */
		t = now_ns() + RETRY_INTERVAL_MS * 1000000ull;
		ts.tv_sec = (time_t)(t / 1000000000ull);
		ts.tv_nsec = (long)(t % 1000000000ull);
		pthread_cond_timedwait(&clt->wait_cond, &clt->lock, &ts);
		list = clt->wait_head;
		clt->wait_head = clt->wait_tail = NULL;
		pthread_mutex_unlock(&clt->lock);
		keep = list ? retry_pass(clt, list) : NULL;
		pthread_mutex_lock(&clt->lock);
		if (!keep)
			continue;
		/* The older waiters go first again. */
		for (last = keep; last->next; last = last->next)
			;
		last->next = clt->wait_head;
		if (!clt->wait_head)
			clt->wait_tail = last;
		clt->wait_head = keep;
	}
	pthread_mutex_unlock(&clt->lock);
	return NULL;
}

/**
 * struct sync_wait - a caller sleeping until one request completes
 */
struct sync_wait {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int err;
};

static void sync_init(struct sync_wait *w)
{
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->done = false;
	w->err = 0;
}

static int sync_wait_end(struct sync_wait *w)
{
	pthread_mutex_lock(&w->lock);
	while (!w->done)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	return w->err;
}

static void sync_done(void *priv, int err)
{
	struct sync_wait *w = priv;

	pthread_mutex_lock(&w->lock);
	w->err = err;
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/**
 * ctl_request() - run one session request (SESS_INFO, OPEN, CLOSE)
 * @clt: the client
 * @dir: IBTRS_READ (the answer goes to @buf) or IBTRS_WRITE (no data)
 * @msg: the message
 * @msglen: its length
 * @buf: where a READ's answer goes
 * @buflen: its length
 *
 * Waits for a path like any request.
 *
 * Return: 0 or a negative errno.
 */
static int ctl_request(struct ibnbd_clt *clt, int dir, const void *msg,
		       size_t msglen, void *buf, size_t buflen)
{
	struct iovec sg = { .iov_base = buf, .iov_len = buflen };
	struct clt_iou iou;
	struct sync_wait w;
	int ret;

	memset(&iou, 0, sizeof(iou));
	iou.clt = clt;
	iou.tag = ibtrs_clt_get_tag(clt->sess, IBTRS_IO_CON, IBTRS_TAG_WAIT);
	if (!iou.tag)
		return -errno;
	sync_init(&w);
	iou.done = sync_done;
	iou.priv = &w;
	iou.slot = SLOT_NONE;
	iou.dir = dir;
	iou.msgp = msg;
	iou.msglen = msglen;
	if (dir == IBTRS_READ) {
		iou.sg = &sg;
		iou.sg_cnt = 1;
		iou.len = (uint32_t)buflen;
	}
	ret = iou_start(clt, &iou);
	if (ret) {
		free(iou.sg_copy);
		ibtrs_clt_put_tag(clt->sess, iou.tag);
		sync_done(&w, ret);
	}
	return sync_wait_end(&w);
}

/**
 * ibnbd_clt_opts_init() - fill @opts with the defaults
 * @opts: options to fill
 * @size: sizeof(*opts) as the caller knows it
 */
void ibnbd_clt_opts_init(struct ibnbd_clt_opts *opts, size_t size)
{
	struct ibnbd_clt_opts d = {
		.size = sizeof(d),
		.queue_timeout_ms = DEFAULT_QUEUE_TIMEOUT_MS,
	};

	if (!opts || size < sizeof(size_t))
		return;
	if (size > sizeof(d)) {
		memset(opts, 0, size);
		size = sizeof(d);
	}
	memcpy(opts, &d, size);
	opts->size = size;
}

static void clt_free(struct ibnbd_clt *clt)
{
	pthread_cond_destroy(&clt->drain_cond);
	pthread_cond_destroy(&clt->wait_cond);
	pthread_mutex_destroy(&clt->lock);
	free(clt->bits);
	free(clt->pool);
	free(clt);
}

/* Stop the retry thread; the waitlist is empty (no device is open). */
static void clt_stop(struct ibnbd_clt *clt)
{
	pthread_mutex_lock(&clt->lock);
	clt->stop = true;
	pthread_cond_signal(&clt->wait_cond);
	pthread_mutex_unlock(&clt->lock);
	pthread_join(clt->thread, NULL);
}

/**
 * clt_init() - allocate a client and start its retry thread
 * @sess: the session
 * @o: its options
 *
 * Return: the client, or NULL with errno.
 */
static struct ibnbd_clt *clt_init(struct ibtrs_clt *sess,
				  const struct ibnbd_clt_opts *o)
{
	struct ibnbd_clt *clt = calloc(1, sizeof(*clt));
	struct ibtrs_attrs attrs;
	pthread_condattr_t ca;
	int ret;

	if (!clt)
		return NULL;
	/* -ECOMM (no path now) fills @attrs all the same. */
	ret = ibtrs_clt_query(sess, &attrs);
	if (ret && ret != -ECOMM) {
		free(clt);
		errno = -ret;
		return NULL;
	}
	clt->sess = sess;
	clt->queue_timeout_ms = o->queue_timeout_ms;
	clt->max_io_size = attrs.max_io_size;
	clt->max_segments = attrs.max_segments;
	clt->pool_sz = attrs.queue_depth ? attrs.queue_depth : 1;
	clt->nwords = (clt->pool_sz + 63) / 64;
	clt->pool = calloc(clt->pool_sz, sizeof(*clt->pool));
	clt->bits = calloc(clt->nwords, sizeof(*clt->bits));
	if (!clt->pool || !clt->bits) {
		free(clt->pool);
		free(clt->bits);
		free(clt);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&clt->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&clt->wait_cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&clt->drain_cond, NULL);
	ret = pthread_create(&clt->thread, NULL, retry_main, clt);
	if (ret) {
		clt_free(clt);
		errno = ret;
		return NULL;
	}
	return clt;
}

/**
 * ibnbd_clt_attach() - start ibnbd on an open ibtrs session
 * @sess: the session
 * @opts: options, or NULL for the defaults
 *
 * Return: the client, or NULL with errno.
 */
struct ibnbd_clt *ibnbd_clt_attach(struct ibtrs_clt *sess,
				   const struct ibnbd_clt_opts *opts)
{
	struct ibnbd_msg_sess_info_rsp rsp;
	unsigned char msg[sizeof(struct ibnbd_msg_sess_info)];
	struct ibnbd_clt_opts o;
	struct ibnbd_sess_info info;
	struct ibnbd_clt *clt;
	size_t n;
	int ret;

	ibnbd_clt_opts_init(&o, sizeof(o));
	if (!sess || (opts && opts->size < sizeof(size_t))) {
		errno = EINVAL;
		return NULL;
	}
	if (opts) {
		/* Fields past the caller's size keep their defaults. */
		n = opts->size < sizeof(o) ? opts->size : sizeof(o);
		memcpy(&o, opts, n);
	}
	clt = clt_init(sess, &o);
	if (!clt)
		return NULL;
	n = ibnbd_enc_sess_info(msg, sizeof(msg));
	memset(&rsp, 0, sizeof(rsp));
	ret = ctl_request(clt, IBTRS_READ, msg, n, &rsp, sizeof(rsp));
	if (!ret)
		ret = ibnbd_dec_sess_info_rsp(&rsp, sizeof(rsp), &info);
	if (!ret && info.ver_major != IBNBD_PROTO_VER_MAJOR)
		ret = -EPROTONOSUPPORT;
	if (ret) {
		clt_stop(clt);
		clt_free(clt);
		errno = -ret;
		return NULL;
	}
	clt->max_devices = info.max_devices;
	return clt;
}

/**
 * ibnbd_clt_detach() - stop ibnbd on a session
 * @clt: the client, or NULL
 *
 * Return: 0, or -EBUSY while a device is open.
 */
int ibnbd_clt_detach(struct ibnbd_clt *clt)
{
	unsigned int ndevs;

	if (!clt)
		return 0;
	pthread_mutex_lock(&clt->lock);
	ndevs = clt->ndevs;
	pthread_mutex_unlock(&clt->lock);
	if (ndevs)
		return -EBUSY;
	clt_stop(clt);
	clt_free(clt);
	return 0;
}

static uint8_t wire_mode(enum ibnbd_access_mode mode)
{
	switch (mode) {
	case IBNBD_ACCESS_RO:
		return IBNBD_WIRE_ACCESS_RO;
	case IBNBD_ACCESS_RW:
		return IBNBD_WIRE_ACCESS_RW;
	case IBNBD_ACCESS_MIGRATION:
		return IBNBD_WIRE_ACCESS_MIGRATION;
	}
	return 0xff;
}

/* The IBNBD_DEV_* flags of the wire's IBNBD_WIRE_DEV_* ones. */
static uint32_t dev_flags(uint32_t wire)
{
	uint32_t f = 0;

	if (wire & IBNBD_WIRE_DEV_READONLY)
		f |= IBNBD_DEV_READONLY;
	if (wire & IBNBD_WIRE_DEV_FUA)
		f |= IBNBD_DEV_FUA;
	if (wire & IBNBD_WIRE_DEV_WRITE_CACHE)
		f |= IBNBD_DEV_WRITE_CACHE;
	if (wire & IBNBD_WIRE_DEV_DISCARD)
		f |= IBNBD_DEV_DISCARD;
	if (wire & IBNBD_WIRE_DEV_WRITE_ZEROES)
		f |= IBNBD_DEV_WRITE_ZEROES;
	return f;
}

static int send_close(struct ibnbd_clt *clt, uint32_t device_id)
{
	unsigned char msg[sizeof(struct ibnbd_msg_close)];
	size_t n = ibnbd_enc_close(msg, sizeof(msg), device_id);

	return ctl_request(clt, IBTRS_WRITE, msg, n, NULL, 0);
}

/**
 * geo_fill() - the device's geometry from the server's answer and the
 * session's limits
 * @clt: the client
 * @i: the decoded OPEN_RSP
 * @mode: the access mode asked
 * @geo: filled
 *
 * Return: 0, or -EPROTO when the session cannot carry one logical block.
 */
static int geo_fill(struct ibnbd_clt *clt, const struct ibnbd_open_info *i,
		    enum ibnbd_access_mode mode, struct ibnbd_geometry *geo)
{
	uint32_t mio = i->max_transfer < clt->max_io_size ? i->max_transfer
							  : clt->max_io_size;

	memset(geo, 0, sizeof(*geo));
	geo->size = i->size;
	geo->logical_block_size = i->logical_block_size;
	geo->physical_block_size = i->physical_block_size;
	geo->max_io_size = mio - mio % i->logical_block_size;
	geo->max_discard = i->max_discard;
	geo->max_write_zeroes = i->max_write_zeroes;
	geo->discard_granularity = i->discard_granularity;
	geo->max_segments = i->max_segments < clt->max_segments
				    ? i->max_segments
				    : clt->max_segments;
	geo->flags = dev_flags(i->flags);
	if (mode == IBNBD_ACCESS_RO)
		geo->flags |= IBNBD_DEV_READONLY;
	geo->device_id = i->device_id;
	return geo->max_io_size && geo->max_segments ? 0 : -EPROTO;
}

/**
 * ibnbd_dev_open() - open an export of the server
 * @clt: the client
 * @name: the export name
 * @mode: the access mode
 * @geo: filled with the geometry, may be NULL
 *
 * Return: the device, or NULL with errno.
 */
struct ibnbd_dev *ibnbd_dev_open(struct ibnbd_clt *clt, const char *name,
				 enum ibnbd_access_mode mode,
				 struct ibnbd_geometry *geo)
{
	unsigned char msg[sizeof(struct ibnbd_msg_open)];
	struct ibnbd_msg_open_rsp rsp;
	struct ibnbd_open_info info;
	struct ibnbd_dev *dev;
	size_t n;
	int ret;

	if (!clt || !name || wire_mode(mode) == 0xff ||
	    !ibnbd_name_valid(name, strnlen(name, IBNBD_NAME_MAX + 1))) {
		errno = EINVAL;
		return NULL;
	}
	dev = calloc(1, sizeof(*dev));
	if (!dev) {
		errno = ENOMEM;
		return NULL;
	}
	n = ibnbd_enc_open(msg, sizeof(msg), wire_mode(mode), name);
	memset(&rsp, 0, sizeof(rsp));
	ret = ctl_request(clt, IBTRS_READ, msg, n, &rsp, sizeof(rsp));
	if (ret) {
		free(dev);
		errno = -ret;
		return NULL;
	}
	ret = ibnbd_dec_open_rsp(&rsp, sizeof(rsp), &info);
	if (!ret)
		ret = geo_fill(clt, &info, mode, &dev->geo);
	if (ret) {
		/* The server opened something we cannot use: give it back
		 * when the id is readable at all. */
		if (ret == -EPROTO && le32toh(rsp.hdr.magic) == IBNBD_MAGIC &&
		    le16toh(rsp.hdr.type) == IBNBD_MSG_OPEN_RSP)
			send_close(clt, le32toh(rsp.device_id));
		free(dev);
		errno = -ret;
		return NULL;
	}
	dev->clt = clt;
	atomic_init(&dev->refs, 1);
	atomic_init(&dev->closing, false);
	pthread_mutex_lock(&clt->lock);
	clt->ndevs++;
	pthread_mutex_unlock(&clt->lock);
	if (geo)
		*geo = dev->geo;
	return dev;
}

/**
 * ibnbd_dev_close() - close a device and free it
 * @dev: the device, or NULL
 *
 * Return: 0, or the negative errno of the CLOSE request.
 */
int ibnbd_dev_close(struct ibnbd_dev *dev)
{
	struct ibnbd_clt *clt;
	int ret;

	if (!dev)
		return 0;
	clt = dev->clt;
	atomic_store(&dev->closing, true);
	dev_put(dev);
	pthread_mutex_lock(&clt->lock);
	while (!dev->drained)
		pthread_cond_wait(&clt->drain_cond, &clt->lock);
	pthread_mutex_unlock(&clt->lock);
	ret = send_close(clt, dev->geo.device_id);
	pthread_mutex_lock(&clt->lock);
	clt->ndevs--;
	pthread_mutex_unlock(&clt->lock);
	free(dev);
	return ret;
}

/**
 * ibnbd_dev_geometry() - the geometry of an open device
 * @dev: the device
 * @geo: filled
 */
void ibnbd_dev_geometry(struct ibnbd_dev *dev, struct ibnbd_geometry *geo)
{
	if (dev && geo)
		*geo = dev->geo;
}

/**
 * check_range() - offset and length are block aligned and inside @g
 * @g: the geometry
 * @offset: byte offset
 * @len: bytes
 *
 * Return: 0, or -EINVAL.
 */
static int check_range(const struct ibnbd_geometry *g, uint64_t offset,
		       uint32_t len)
{
	if (!len || offset % g->logical_block_size ||
	    len % g->logical_block_size || offset > g->size ||
	    len > g->size - offset)
		return -EINVAL;
	return 0;
}

/**
 * check_req() - validate a request before anything goes out
 * @g: the device's geometry
 * @op, @flags, @offset, @len, @iov, @iovcnt: as ibnbd_submit()
 *
 * Return: 0, or the errno ibnbd_submit() documents.
 */
static int check_req(const struct ibnbd_geometry *g, enum ibnbd_op op,
		     uint32_t flags, uint64_t offset, uint32_t len,
		     const struct iovec *iov, unsigned int iovcnt)
{
	const uint32_t known = IBNBD_F_FUA | IBNBD_F_PREFLUSH |
			       IBNBD_F_NOUNMAP | IBNBD_F_NOWAIT;
	size_t sum = 0;
	unsigned int i;
	int ret;

	if (flags & ~known)
		return -EINVAL;
	if ((flags & IBNBD_F_NOUNMAP) && op != IBNBD_OP_WRITE_ZEROES)
		return -EINVAL;
	switch (op) {
	case IBNBD_OP_READ:
	case IBNBD_OP_WRITE:
		if (op == IBNBD_OP_READ && (flags & IBNBD_F_FUA))
			return -EINVAL;
		ret = check_range(g, offset, len);
		if (ret)
			return ret;
		if (!iov || !iovcnt || iovcnt > g->max_segments)
			return -EINVAL;
		for (i = 0; i < iovcnt; i++) {
			if (!iov[i].iov_base && iov[i].iov_len)
				return -EINVAL;
			sum += iov[i].iov_len;
		}
		if (sum != len)
			return -EINVAL;
		if (len > g->max_io_size)
			return -EMSGSIZE;
		if (op == IBNBD_OP_WRITE && (g->flags & IBNBD_DEV_READONLY))
			return -EROFS;
		return 0;
	case IBNBD_OP_FLUSH:
		if (offset || len || iovcnt)
			return -EINVAL;
		return 0;
	case IBNBD_OP_DISCARD:
	case IBNBD_OP_WRITE_ZEROES:
		if (iovcnt)
			return -EINVAL;
		ret = check_range(g, offset, len);
		if (ret)
			return ret;
		if (g->flags & IBNBD_DEV_READONLY)
			return -EROFS;
		if (op == IBNBD_OP_DISCARD) {
			if (!(g->flags & IBNBD_DEV_DISCARD))
				return -EOPNOTSUPP;
			if (len > g->max_discard)
				return -EMSGSIZE;
		} else {
			if (!(g->flags & IBNBD_DEV_WRITE_ZEROES))
				return -EOPNOTSUPP;
			if (len > g->max_write_zeroes)
				return -EMSGSIZE;
		}
		return 0;
	}
	return -EINVAL;
}

static uint8_t wire_op(enum ibnbd_op op)
{
	switch (op) {
	case IBNBD_OP_READ:
		return IBNBD_WIRE_OP_READ;
	case IBNBD_OP_WRITE:
		return IBNBD_WIRE_OP_WRITE;
	case IBNBD_OP_FLUSH:
		return IBNBD_WIRE_OP_FLUSH;
	case IBNBD_OP_DISCARD:
		return IBNBD_WIRE_OP_DISCARD;
	case IBNBD_OP_WRITE_ZEROES:
		break;
	}
	return IBNBD_WIRE_OP_WRITE_ZEROES;
}

static uint16_t wire_flags(uint32_t flags)
{
	uint16_t f = 0;

	if (flags & IBNBD_F_FUA)
		f |= IBNBD_WIRE_F_FUA;
	if (flags & IBNBD_F_PREFLUSH)
		f |= IBNBD_WIRE_F_PREFLUSH;
	if (flags & IBNBD_F_NOUNMAP)
		f |= IBNBD_WIRE_F_NOUNMAP;
	return f;
}

/**
 * ibnbd_submit() - start one block request
 * @dev: the device
 * @op: the operation
 * @flags: IBNBD_F_*
 * @offset: byte offset
 * @len: bytes
 * @iov: the data buffers
 * @iovcnt: elements of @iov
 * @done: completion callback
 * @priv: passed to @done
 *
 * Return: 0 when submitted (@done runs once), else a negative errno.
 */
int ibnbd_submit(struct ibnbd_dev *dev, enum ibnbd_op op, uint32_t flags,
		 uint64_t offset, uint32_t len, const struct iovec *iov,
		 unsigned int iovcnt, ibnbd_done_fn *done, void *priv)
{
	struct ibnbd_clt *clt;
	struct ibtrs_tag *tag;
	struct clt_iou *iou;
	int ret;

	if (!dev || !done)
		return -EINVAL;
	ret = check_req(&dev->geo, op, flags, offset, len, iov, iovcnt);
	if (ret)
		return ret;
	if (!dev_get(dev))
		return -ESHUTDOWN;
	clt = dev->clt;
	tag = ibtrs_clt_get_tag(clt->sess, IBTRS_IO_CON,
				(flags & IBNBD_F_NOWAIT) ? IBTRS_TAG_NOWAIT
							 : IBTRS_TAG_WAIT);
	if (!tag) {
		ret = -errno;
		goto put_dev;
	}
	iou = slot_get(clt);
	if (!iou) {
		iou = malloc(sizeof(*iou));
		if (!iou) {
			ret = -ENOMEM;
			goto put_tag;
		}
		iou->slot = SLOT_NONE;
	}
	iou->clt = clt;
	iou->dev = dev;
	iou->tag = tag;
	iou->done = done;
	iou->priv = priv;
	iou->sg_copy = NULL;
	iou->dir = op == IBNBD_OP_READ ? IBTRS_READ : IBTRS_WRITE;
	if (op == IBNBD_OP_READ || op == IBNBD_OP_WRITE) {
		iou->sg = iov;
		iou->sg_cnt = iovcnt;
		iou->len = len;
	} else {
		iou->sg = NULL;
		iou->sg_cnt = 0;
		iou->len = 0;
	}
	iou->msgp = iou->msg;
	iou->msglen = ibnbd_enc_io(iou->msg, sizeof(iou->msg),
				   dev->geo.device_id, wire_op(op),
				   wire_flags(flags), offset, len);
	ret = iou_start(clt, iou);
	if (!ret)
		return 0;
	free(iou->sg_copy);
	slot_put(clt, iou);
put_tag:
	ibtrs_clt_put_tag(clt->sess, tag);
put_dev:
	dev_put(dev);
	return ret;
}

/**
 * ibnbd_submit_sync() - run one block request and wait for it
 * @dev, @op, @flags, @offset, @len, @iov, @iovcnt: as ibnbd_submit()
 *
 * Return: 0, or the negative errno of the submit or of the completion.
 */
int ibnbd_submit_sync(struct ibnbd_dev *dev, enum ibnbd_op op, uint32_t flags,
		      uint64_t offset, uint32_t len, const struct iovec *iov,
		      unsigned int iovcnt)
{
	struct sync_wait w;
	int ret;

	sync_init(&w);
	ret = ibnbd_submit(dev, op, flags, offset, len, iov, iovcnt, sync_done,
			   &w);
	if (ret) {
		sync_done(&w, ret);
		sync_wait_end(&w);
		return ret;
	}
	return sync_wait_end(&w);
}
