// SPDX-License-Identifier: MIT
/*
 * tags.c - tags and their pdu areas.
 *
 * - ibtrs_tag_to_pdu()/ibtrs_tag_from_pdu() round trip, 16-byte alignment,
 *   pdu_sz bytes per tag, writable and distinct between tags.
 * - NOWAIT: all queue_depth tags can be taken, the next get fails with
 *   EAGAIN; a WAIT get blocks until another thread puts a tag.
 * - put of NULL is harmless; bad con_type or wait: NULL + EINVAL.
 * - a get waiting when ibtrs_clt_close() starts returns NULL, ECONNABORTED.
 * - more requests wanted than there are tags: 8 threads keep 8 WRITEs each
 *   in flight on 32 tags, put back by the completion callbacks, so the
 *   threads wait for tags that come back in batches; every request
 *   completes.
 */
#include "harness.h"

#define QD 32
#define PDU_SZ 40 /* not a multiple of 16 */

static struct h_srv srv;

static void fill_pdu(struct ibtrs_tag *tag, size_t pdu_sz, unsigned int i)
{
	h_fill(ibtrs_tag_to_pdu(tag), pdu_sz, 300 + i);
}

static void check_pdu(struct ibtrs_tag *tag, size_t pdu_sz, unsigned int i)
{
	unsigned char want[256];

	CHECK(pdu_sz <= sizeof(want));
	h_fill(want, pdu_sz, 300 + i);
	CHECK(!memcmp(ibtrs_tag_to_pdu(tag), want, pdu_sz));
}

/* Take every tag of a session with @pdu_sz and check the pdu areas. */
static void test_pdu(size_t pdu_sz)
{
	struct ibtrs_clt *sess;
	struct ibtrs_tag *tags[QD];
	struct ibtrs_attrs attr;
	unsigned int i, j;
	uintptr_t a, b;

	sess = h_clt_open("tags-pdu", srv.port, 1, pdu_sz, NULL, NULL);
	CHECK_EQ(ibtrs_clt_query(sess, &attr), 0);
	CHECK_EQ(attr.queue_depth, QD);
	for (i = 0; i < QD; i++) {
		tags[i] = ibtrs_clt_get_tag(
			sess, i % 2 ? IBTRS_IO_CON : IBTRS_USR_CON,
			IBTRS_TAG_NOWAIT);
		CHECK(tags[i]);
		CHECK(ibtrs_tag_to_pdu(tags[i]));
		CHECK_EQ((uintptr_t)ibtrs_tag_to_pdu(tags[i]) % 16, 0);
		CHECK(ibtrs_tag_from_pdu(ibtrs_tag_to_pdu(tags[i])) == tags[i]);
		fill_pdu(tags[i], pdu_sz, i);
	}
	/* Distinct tags, non-overlapping pdu areas. */
	for (i = 0; i < QD; i++) {
		for (j = i + 1; j < QD; j++) {
			CHECK(tags[i] != tags[j]);
			a = (uintptr_t)ibtrs_tag_to_pdu(tags[i]);
			b = (uintptr_t)ibtrs_tag_to_pdu(tags[j]);
			CHECK(a + pdu_sz <= b || b + pdu_sz <= a);
		}
	}
	for (i = 0; i < QD; i++)
		check_pdu(tags[i], pdu_sz, i);

	/* Requests do not touch the pdu areas. */
	{
		unsigned char buf[4096];

		h_fill(buf, sizeof(buf), 1);
		for (i = 0; i < QD; i++)
			CHECK_EQ(h_io(sess, tags[i],
				      i % 2 ? IBTRS_WRITE : IBTRS_READ, buf,
				      sizeof(buf), (uint64_t)i * 4096, i),
				 0);
		for (i = 0; i < QD; i++)
			check_pdu(tags[i], pdu_sz, i);
	}

	/* The pdu survives put and get of the same tag. */
	ibtrs_clt_put_tag(sess, tags[5]);
	tags[5] = ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_NOWAIT);
	CHECK(tags[5]);
	CHECK(ibtrs_tag_from_pdu(ibtrs_tag_to_pdu(tags[5])) == tags[5]);
	for (i = 0; i < QD; i++)
		ibtrs_clt_put_tag(sess, tags[i]);
	ibtrs_clt_close(sess);
}

struct waiter {
	struct ibtrs_clt *sess;
	pthread_t thr;
	_Atomic bool started;
	_Atomic bool done;
	struct ibtrs_tag *tag;
	int err;
	double t_done;
};

static void *waiter_fn(void *arg)
{
	struct waiter *w = arg;
	struct ibtrs_tag *tag;

	atomic_store(&w->started, true);
	errno = 0;
	tag = ibtrs_clt_get_tag(w->sess, IBTRS_IO_CON, IBTRS_TAG_WAIT);
	w->err = errno;
	w->tag = tag;
	w->t_done = t_now();
	atomic_store(&w->done, true);
	return NULL;
}

static void start_waiter(struct waiter *w, struct ibtrs_clt *sess)
{
	memset(w, 0, sizeof(*w));
	w->sess = sess;
	CHECK_EQ(pthread_create(&w->thr, NULL, waiter_fn, w), 0);
	while (!atomic_load(&w->started))
		h_sleep_ms(1);
	/* Give it time to block; it must still be waiting afterwards. */
	h_sleep_ms(300);
	CHECK(!atomic_load(&w->done));
}

static void test_nowait_wait(void)
{
	struct ibtrs_clt *sess;
	struct ibtrs_tag *tags[QD], *t;
	struct waiter w;
	unsigned int i;
	double t0;

	sess = h_clt_open("tags-wait", srv.port, 1, 16, NULL, NULL);
	for (i = 0; i < QD; i++) {
		tags[i] =
			ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_NOWAIT);
		CHECK(tags[i]);
	}
	errno = 0;
	CHECK(!ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_NOWAIT));
	CHECK_EQ(errno, EAGAIN);
	errno = 0;
	CHECK(!ibtrs_clt_get_tag(sess, IBTRS_USR_CON, IBTRS_TAG_NOWAIT));
	CHECK_EQ(errno, EAGAIN);

	/* Bad arguments. */
	errno = 0;
	CHECK(!ibtrs_clt_get_tag(sess, (enum ibtrs_clt_con_type)7,
				 IBTRS_TAG_NOWAIT));
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(!ibtrs_clt_get_tag(sess, (enum ibtrs_clt_con_type) - 1,
				 IBTRS_TAG_WAIT));
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(!ibtrs_clt_get_tag(sess, IBTRS_IO_CON, 2));
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(!ibtrs_clt_get_tag(sess, IBTRS_IO_CON, -1));
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(!ibtrs_clt_get_tag(NULL, IBTRS_IO_CON, IBTRS_TAG_NOWAIT));
	CHECK_EQ(errno, EINVAL);

	/* Put of NULL changes nothing. */
	ibtrs_clt_put_tag(sess, NULL);
	ibtrs_clt_put_tag(NULL, NULL);
	errno = 0;
	CHECK(!ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_NOWAIT));
	CHECK_EQ(errno, EAGAIN);

	/* A WAIT get blocks until a tag is put. */
	start_waiter(&w, sess);
	t0 = t_now();
	ibtrs_clt_put_tag(sess, tags[7]);
	CHECK_EQ(pthread_join(w.thr, NULL), 0);
	CHECK(atomic_load(&w.done));
	CHECK(w.tag == tags[7]);
	CHECK(w.t_done - t0 < 5.0);
	errno = 0;
	CHECK(!ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_NOWAIT));
	CHECK_EQ(errno, EAGAIN);

	/* All tags back: all can be taken again. */
	for (i = 0; i < QD; i++)
		ibtrs_clt_put_tag(sess, tags[i]);
	for (i = 0; i < QD; i++) {
		t = ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_NOWAIT);
		CHECK(t);
		tags[i] = t;
	}
	for (i = 0; i < QD; i++)
		ibtrs_clt_put_tag(sess, tags[i]);
	ibtrs_clt_close(sess);
}

struct closer {
	struct ibtrs_clt *sess;
	pthread_t thr;
	_Atomic bool done;
};

static void *closer_fn(void *arg)
{
	struct closer *c = arg;

	ibtrs_clt_close(c->sess);
	atomic_store(&c->done, true);
	return NULL;
}

/* A WAIT get returns NULL with ECONNABORTED once the session closes. */
static void test_close_wakes_waiter(void)
{
	struct ibtrs_clt *sess;
	struct ibtrs_tag *tags[QD];
	struct waiter w;
	struct closer c;
	unsigned int i;

	sess = h_clt_open("tags-close", srv.port, 1, 0, NULL, NULL);
	for (i = 0; i < QD; i++) {
		tags[i] =
			ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_NOWAIT);
		CHECK(tags[i]);
	}
	start_waiter(&w, sess);
	/*
	 * Close from a third thread, so that a close that never wakes the
	 * waiter shows as a failed check rather than as a hang. The tags
	 * still held become invalid: they are not put.
	 */
	memset(&c, 0, sizeof(c));
	c.sess = sess;
	CHECK_EQ(pthread_create(&c.thr, NULL, closer_fn, &c), 0);
	CHECK_EQ(pthread_join(w.thr, NULL), 0);
	CHECK(!w.tag);
	CHECK_EQ(w.err, ECONNABORTED);
	CHECK_EQ(pthread_join(c.thr, NULL), 0);
	CHECK(atomic_load(&c.done));
}

#define OS_THREADS 8
#define OS_WINDOW 8 /* per thread: 8 x 8 = twice the tags */
#define OS_REQS 1000
#define OS_LEN 4096

struct os_thread;

struct os_slot {
	struct os_thread *t;
	struct ibtrs_tag *tag;
	unsigned char buf[OS_LEN];
};

struct os_thread {
	pthread_t thr;
	struct ibtrs_clt *sess;
	unsigned int idx;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int inflight, done, errors, eagain;
	unsigned int free_mask; /* bit i: slot i free */
	struct os_slot slots[OS_WINDOW];
};

/* Completion: the tag goes back from the library's thread, as in a block
 * driver, then the slot. */
static void os_conf(void *priv, int err)
{
	struct os_slot *sl = priv;
	struct os_thread *t = sl->t;

	ibtrs_clt_put_tag(t->sess, sl->tag);
	pthread_mutex_lock(&t->lock);
	t->inflight--;
	t->done++;
	if (err)
		t->errors++;
	t->free_mask |= 1u << (sl - t->slots);
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

static void *os_thread_fn(void *arg)
{
	struct os_thread *t = arg;
	unsigned char usr[sizeof(struct h_usr_hdr) + 8];
	struct timespec ts = t_deadline(60000);
	struct os_slot *sl;
	struct iovec sg, v = { .iov_base = usr, .iov_len = sizeof(usr) };
	uint64_t off;
	unsigned int n;

	for (n = 0; n < OS_REQS; n++) {
		pthread_mutex_lock(&t->lock);
		while (!t->free_mask)
			CHECK(pthread_cond_timedwait(&t->cond, &t->lock, &ts) !=
			      ETIMEDOUT);
		sl = &t->slots[__builtin_ctz(t->free_mask)];
		t->free_mask &= t->free_mask - 1;
		t->inflight++;
		pthread_mutex_unlock(&t->lock);

		sl->tag = ibtrs_clt_get_tag(t->sess, IBTRS_IO_CON,
					    IBTRS_TAG_NOWAIT);
		if (!sl->tag) {
			CHECK_EQ(errno, EAGAIN);
			t->eagain++;
			sl->tag = ibtrs_clt_get_tag(t->sess, IBTRS_IO_CON,
						    IBTRS_TAG_WAIT);
			CHECK(sl->tag);
		}
		off = ((uint64_t)t->idx * OS_REQS + n) * OS_LEN;
		h_fill(sl->buf, OS_LEN, off);
		h_usr_build(usr, sizeof(usr), off, n, t->idx);
		sg.iov_base = sl->buf;
		sg.iov_len = OS_LEN;
		CHECK_EQ(ibtrs_clt_request(IBTRS_WRITE, os_conf, t->sess,
					   sl->tag, sl, &v, 1, OS_LEN, &sg, 1),
			 0);
	}
	pthread_mutex_lock(&t->lock);
	while (t->inflight)
		CHECK(pthread_cond_timedwait(&t->cond, &t->lock, &ts) !=
		      ETIMEDOUT);
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

static void test_oversubscribed(void)
{
	static struct os_thread th[OS_THREADS];
	unsigned int i, j, eagain = 0;
	struct ibtrs_clt *sess;

	CHECK((uint64_t)OS_THREADS * OS_REQS * OS_LEN <= H_TARGET_SIZE);
	sess = h_clt_open("tags-over", srv.port, 1, 0, NULL, NULL);
	for (i = 0; i < OS_THREADS; i++) {
		memset(&th[i], 0, sizeof(th[i]));
		th[i].sess = sess;
		th[i].idx = i;
		th[i].free_mask = (1u << OS_WINDOW) - 1;
		for (j = 0; j < OS_WINDOW; j++)
			th[i].slots[j].t = &th[i];
		pthread_mutex_init(&th[i].lock, NULL);
		t_cond_init(&th[i].cond);
		CHECK_EQ(pthread_create(&th[i].thr, NULL, os_thread_fn, &th[i]),
			 0);
	}
	for (i = 0; i < OS_THREADS; i++) {
		CHECK_EQ(pthread_join(th[i].thr, NULL), 0);
		CHECK_EQ(th[i].done, OS_REQS);
		CHECK_EQ(th[i].errors, 0);
		eagain += th[i].eagain;
		pthread_mutex_destroy(&th[i].lock);
		pthread_cond_destroy(&th[i].cond);
	}
	/* The threads did run out of tags and wait. */
	CHECK(eagain > 0);
	/* Every tag came back. */
	for (i = 0; i < QD; i++)
		CHECK(ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_NOWAIT));
	ibtrs_clt_close(sess);
}

int main(void)
{
	t_watchdog(120);
	h_srv_start(&srv, NULL, QD, 0);

	test_pdu(PDU_SZ);
	test_pdu(0);
	test_pdu(1);
	test_pdu(256);
	test_nowait_wait();
	test_close_wakes_waiter();
	test_oversubscribed();

	h_srv_stop(&srv);
	CHECK_EQ(atomic_load(&srv.usr_bad), 0);
	printf("tags: ok\n");
	return 0;
}
