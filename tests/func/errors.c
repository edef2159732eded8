// SPDX-License-Identifier: MIT
/*
 * errors.c - errors reach the caller unchanged and bad arguments are
 * refused.
 *
 * - rdma_ev returning an error, and ibtrs_srv_resp_rdma() with an error from
 *   another thread, reach conf unchanged; the tag works again afterwards.
 * - ibtrs_clt_request() argument errors, -EBUSY on a tag in flight; conf is
 *   never called for them.
 * - ibtrs_clt_open() argument errors and a port without listener;
 *   ibtrs_srv_open() on a port in use.
 * - ibtrs_clt_query(), ibtrs_srv_get_sess_name(),
 *   ibtrs_srv_get_queue_depth(), ibtrs_srv_get_identity() (without keys:
 *   the client's address).
 */
#include <arpa/inet.h>
#include <netinet/in.h>

#include "harness.h"

#define QD 64
#define MAX_IO (64 * 1024)
#define SESSNAME "errors-sess"

static struct h_srv srv;
static struct ibtrs_clt *sess;
static struct ibtrs_attrs attr;

static const int errs[] = { -EIO, -ENOSPC, -EREMOTEIO, -4095 };

/* A WRITE then a READ of fresh data at @off must succeed. */
static void check_io_works(struct ibtrs_tag *tag, uint64_t off, uint64_t seed)
{
	unsigned char w[3000], r[3000];

	h_fill(w, sizeof(w), seed);
	memset(r, 0, sizeof(r));
	CHECK_EQ(h_io(sess, tag, IBTRS_WRITE, w, sizeof(w), off, seed), 0);
	CHECK_EQ(h_io(sess, tag, IBTRS_READ, r, sizeof(r), off, seed + 1), 0);
	CHECK(!memcmp(w, r, sizeof(w)));
}

/* rdma_ev returns the error. */
static void test_rdma_ev_errors(void)
{
	struct ibtrs_tag *tag;
	unsigned char buf[512];
	unsigned int i;
	int dir;

	tag = ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_NOWAIT);
	CHECK(tag);
	check_io_works(tag, 0, 1);
	for (i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		for (dir = IBTRS_READ; dir <= IBTRS_WRITE; dir++) {
			atomic_store(&srv.fail_err, errs[i]);
			CHECK_EQ(h_io(sess, tag, dir, buf, sizeof(buf), 0, i),
				 errs[i]);
			atomic_store(&srv.fail_err, 0);
			/* Then a normal request on the same tag. */
			check_io_works(tag, 4096, 10 + i);
		}
	}
	ibtrs_clt_put_tag(sess, tag);
}

struct responder {
	pthread_t thr;
	int err;
	unsigned int n;
};

/* Answer @n held requests with @err from this thread. */
static void *responder_fn(void *arg)
{
	struct responder *rs = arg;
	struct h_op *op;
	unsigned int i;

	for (i = 0; i < rs->n; i++) {
		CHECK(h_srv_wait_held(&srv, 1, 10000));
		op = h_srv_pop(&srv);
		CHECK(op);
		h_op_complete(op, rs->err);
	}
	return NULL;
}

/* The application answers with an error from another thread. */
static void test_resp_errors(void)
{
	struct ibtrs_tag *tag;
	struct responder rs;
	unsigned char buf[1024];
	unsigned int i;
	int dir;

	tag = ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_NOWAIT);
	CHECK(tag);
	for (i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		for (dir = IBTRS_READ; dir <= IBTRS_WRITE; dir++) {
			h_srv_set_defer(&srv, true);
			rs.err = errs[i];
			rs.n = 1;
			CHECK_EQ(pthread_create(&rs.thr, NULL, responder_fn,
						&rs),
				 0);
			CHECK_EQ(h_io(sess, tag, dir, buf, sizeof(buf), 0, i),
				 errs[i]);
			CHECK_EQ(pthread_join(rs.thr, NULL), 0);
			h_srv_set_defer(&srv, false);
			check_io_works(tag, 8192, 20 + i);
		}
	}
	/* A held request answered with success from another thread. */
	h_srv_set_defer(&srv, true);
	rs.err = 0;
	rs.n = 1;
	CHECK_EQ(pthread_create(&rs.thr, NULL, responder_fn, &rs), 0);
	CHECK_EQ(h_io(sess, tag, IBTRS_WRITE, buf, sizeof(buf), 0, 9), 0);
	CHECK_EQ(pthread_join(rs.thr, NULL), 0);
	h_srv_set_defer(&srv, false);
	ibtrs_clt_put_tag(sess, tag);
}

static _Atomic unsigned int stray_confs;

static void count_conf(void *priv, int err)
{
	(void)priv;
	(void)err;
	atomic_fetch_add(&stray_confs, 1);
}

/* ibtrs_clt_request() refuses bad arguments without calling conf. */
static void test_request_args(void)
{
	unsigned int nseg = attr.max_segments + 1, i;
	unsigned char *data = malloc(attr.max_io_size + 1);
	unsigned char usr[IBTRS_MAX_USR_MSG + 1];
	struct iovec *sg = calloc(nseg, sizeof(*sg));
	struct iovec one, v, v2[2];
	struct ibtrs_tag *tag;
	uint64_t calls0 = atomic_load(&srv.rdma_calls);

	CHECK(data && sg);
	memset(usr, 0x11, sizeof(usr));
	tag = ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_NOWAIT);
	CHECK(tag);

	/* len > max_io_size */
	one.iov_base = data;
	one.iov_len = attr.max_io_size + 1;
	CHECK_EQ(ibtrs_clt_request(IBTRS_WRITE, count_conf, sess, tag, NULL,
				   NULL, 0, one.iov_len, &one, 1),
		 -EMSGSIZE);
	CHECK_EQ(ibtrs_clt_request(IBTRS_READ, count_conf, sess, tag, NULL,
				   NULL, 0, one.iov_len, &one, 1),
		 -EMSGSIZE);
	/* user message over IBTRS_MAX_USR_MSG, in one piece and in two */
	one.iov_len = 100;
	v.iov_base = usr;
	v.iov_len = IBTRS_MAX_USR_MSG + 1;
	CHECK_EQ(ibtrs_clt_request(IBTRS_WRITE, count_conf, sess, tag, NULL, &v,
				   1, 100, &one, 1),
		 -EMSGSIZE);
	v2[0].iov_base = usr;
	v2[0].iov_len = IBTRS_MAX_USR_MSG / 2 + 1;
	v2[1].iov_base = usr;
	v2[1].iov_len = IBTRS_MAX_USR_MSG / 2;
	CHECK_EQ(ibtrs_clt_request(IBTRS_READ, count_conf, sess, tag, NULL, v2,
				   2, 100, &one, 1),
		 -EMSGSIZE);
	/* sg_cnt > max_segments */
	for (i = 0; i < nseg; i++) {
		sg[i].iov_base = data + i;
		sg[i].iov_len = 1;
	}
	CHECK_EQ(ibtrs_clt_request(IBTRS_WRITE, count_conf, sess, tag, NULL,
				   NULL, 0, nseg, sg, nseg),
		 -EINVAL);
	/* len differs from the sum of sg */
	CHECK_EQ(ibtrs_clt_request(IBTRS_WRITE, count_conf, sess, tag, NULL,
				   NULL, 0, 99, &one, 1),
		 -EINVAL);
	CHECK_EQ(ibtrs_clt_request(IBTRS_READ, count_conf, sess, tag, NULL,
				   NULL, 0, 101, &one, 1),
		 -EINVAL);
	CHECK_EQ(ibtrs_clt_request(IBTRS_WRITE, count_conf, sess, tag, NULL,
				   NULL, 0, 0, &one, 1),
		 -EINVAL);
	/* bad direction */
	CHECK_EQ(ibtrs_clt_request(2, count_conf, sess, tag, NULL, NULL, 0, 100,
				   &one, 1),
		 -EINVAL);
	CHECK_EQ(ibtrs_clt_request(-1, count_conf, sess, tag, NULL, NULL, 0,
				   100, &one, 1),
		 -EINVAL);
	/* NULL tag, session, conf */
	CHECK_EQ(ibtrs_clt_request(IBTRS_WRITE, count_conf, sess, NULL, NULL,
				   NULL, 0, 100, &one, 1),
		 -EINVAL);
	CHECK_EQ(ibtrs_clt_request(IBTRS_WRITE, count_conf, NULL, tag, NULL,
				   NULL, 0, 100, &one, 1),
		 -EINVAL);
	CHECK_EQ(ibtrs_clt_request(IBTRS_WRITE, NULL, sess, tag, NULL, NULL, 0,
				   100, &one, 1),
		 -EINVAL);

	/* None of them reached the server or conf. */
	h_sleep_ms(100);
	CHECK_EQ(atomic_load(&stray_confs), 0);
	CHECK_EQ(atomic_load(&srv.rdma_calls), calls0);
	/* The tag still works. */
	check_io_works(tag, 12288, 40);
	ibtrs_clt_put_tag(sess, tag);
	free(data);
	free(sg);
}

/* A second request on a tag whose request is in flight: -EBUSY. */
static void test_busy(void)
{
	unsigned char buf[256], usr[64];
	struct iovec sg = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct iovec v = { .iov_base = usr, .iov_len = sizeof(usr) };
	struct ibtrs_tag *tag;
	struct h_wait w;
	struct h_req r = { .w = &w };
	struct h_op *op;

	h_wait_init(&w);
	tag = ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_NOWAIT);
	CHECK(tag);
	h_usr_build(usr, sizeof(usr), 0, 5, 0);
	h_srv_set_defer(&srv, true);
	CHECK_EQ(ibtrs_clt_request(IBTRS_WRITE, h_conf, sess, tag, &r, &v, 1,
				   sizeof(buf), &sg, 1),
		 0);
	CHECK(h_srv_wait_held(&srv, 1, 10000));
	CHECK_EQ(ibtrs_clt_request(IBTRS_WRITE, count_conf, sess, tag, NULL, &v,
				   1, sizeof(buf), &sg, 1),
		 -EBUSY);
	CHECK_EQ(ibtrs_clt_request(IBTRS_READ, count_conf, sess, tag, NULL, &v,
				   1, sizeof(buf), &sg, 1),
		 -EBUSY);
	h_sleep_ms(50);
	CHECK_EQ(h_wait_get_calls(&w), 0);
	op = h_srv_pop(&srv);
	CHECK(op);
	CHECK(!h_srv_pop(&srv));
	h_srv_set_defer(&srv, false);
	h_op_complete(op, 0);
	CHECK(h_wait_calls(&w, 1, 10000));
	h_sleep_ms(50);
	CHECK_EQ(h_wait_get_calls(&w), 1);
	CHECK_EQ(r.err, 0);
	CHECK_EQ(atomic_load(&stray_confs), 0);
	check_io_works(tag, 16384, 50);
	ibtrs_clt_put_tag(sess, tag);
	h_wait_destroy(&w);
}

/* Checks that failed without stopping the test. */
static int soft_failures;

/* Expect ibtrs_clt_open() to fail with @err; a wrong errno is counted. */
static void open_fails(const char *name, const struct ibtrs_addr *paths,
		       size_t cnt, uint16_t port, int err)
{
	struct ibtrs_clt *s;

	errno = 0;
	s = ibtrs_clt_open(NULL, NULL, name, paths, cnt, port, 0, 1, 0, 0);
	if (s) {
		fprintf(stderr, "open of '%s' with %zu paths succeeded\n",
			name ? name : "(null)", cnt);
		exit(1);
	}
	if (errno != err) {
		fprintf(stderr,
			"open of '%s' with %zu paths: errno %d (%s), want %d (%s)\n",
			name ? name : "(null)", cnt, errno, strerror(errno),
			err, strerror(err));
		soft_failures++;
	}
}

static void test_open_args(void)
{
	struct sockaddr_storage dst[IBTRS_MAX_PATHS + 1];
	struct ibtrs_addr paths[IBTRS_MAX_PATHS + 1];
	char longname[NAME_MAX + 1];
	unsigned int i;

	for (i = 0; i <= IBTRS_MAX_PATHS; i++) {
		paths[i].src = NULL;
		paths[i].dst = &dst[i];
		/* No port in the address: the port argument applies. */
		CHECK_EQ(ibtrs_addr_to_sockaddr("ip:127.0.0.1", 12, 0,
						&paths[i]),
			 0);
	}
	open_fails(NULL, paths, 1, srv.port, EINVAL);
	open_fails("", paths, 1, srv.port, EINVAL);
	open_fails("a/b", paths, 1, srv.port, EINVAL);
	open_fails("/", paths, 1, srv.port, EINVAL);
	memset(longname, 'n', NAME_MAX);
	longname[NAME_MAX] = '\0';
	open_fails(longname, paths, 1, srv.port, EINVAL);
	open_fails("ok", paths, 0, srv.port, EINVAL);
	open_fails("ok", paths, IBTRS_MAX_PATHS + 1, srv.port, EINVAL);
	open_fails("ok", NULL, 1, srv.port, EINVAL);
	/* No listener on the port. */
	open_fails("ok", paths, 1, h_free_port(), ECONNREFUSED);
	/* The longest valid name (NAME_MAX - 1 bytes) works, both ends. */
	longname[NAME_MAX - 1] = '\0';
	{
		struct ibtrs_clt *s;
		struct h_sess hs;

		s = ibtrs_clt_open(NULL, NULL, longname, paths, 1, srv.port, 0,
				   1, 0, 0);
		CHECK(s);
		CHECK_EQ(ibtrs_clt_query(s, &attr), 0);
		CHECK(!strcmp((char *)attr.sessname, longname));
		CHECK(h_srv_find(&srv, longname, &hs));
		CHECK_EQ(hs.name_rc, 0);
		ibtrs_clt_close(s);
	}
}

static int dummy_rdma_ev(struct ibtrs_srv *s, void *priv,
			 struct ibtrs_srv_op *id, int dir, void *data,
			 size_t datalen, const void *usr, size_t usrlen)
{
	(void)s;
	(void)priv;
	(void)id;
	(void)dir;
	(void)data;
	(void)datalen;
	(void)usr;
	(void)usrlen;
	return -EIO;
}

static void test_srv_open_in_use(void)
{
	struct sockaddr_storage ss;
	struct ibtrs_addr addr = { .src = NULL, .dst = &ss };
	struct ibtrs_srv_opts opts;
	struct ibtrs_srv_ctx *ctx;

	ibtrs_srv_opts_init(&opts, sizeof(opts));
	CHECK_EQ(ibtrs_addr_to_sockaddr("ip:127.0.0.1", 12, srv.port, &addr),
		 0);
	opts.listen_addr = (const struct sockaddr *)&ss;
	opts.port = srv.port;
	opts.rdma_ev = dummy_rdma_ev;
	errno = 0;
	ctx = ibtrs_srv_open_opts(&opts);
	CHECK(!ctx);
	CHECK_EQ(errno, EADDRINUSE);

	/* Every address, same port: the 127.0.0.1 listener is in the way. */
	errno = 0;
	ctx = ibtrs_srv_open(dummy_rdma_ev, NULL, srv.port);
	CHECK(!ctx);
	CHECK_EQ(errno, EADDRINUSE);

	/* No rdma_ev, port out of range. */
	errno = 0;
	CHECK(!ibtrs_srv_open(NULL, NULL, 0));
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(!ibtrs_srv_open(dummy_rdma_ev, NULL, 65536));
	CHECK_EQ(errno, EINVAL);
}

static void test_query(void)
{
	struct ibtrs_clt *s2;
	struct h_sess hs;
	int i;

	memset(&attr, 0xee, sizeof(attr));
	CHECK_EQ(ibtrs_clt_query(sess, &attr), 0);
	CHECK_EQ(attr.queue_depth, QD);
	CHECK_EQ(attr.max_io_size, MAX_IO);
	CHECK(!strcmp((char *)attr.sessname, SESSNAME));
	CHECK_EQ(attr.max_segments, IBTRS_DEFAULT_MAX_SEGMENTS);
	CHECK_EQ(attr.path_cnt, 1);
	CHECK_EQ(attr.connected_paths, 1);
	CHECK_EQ(ibtrs_clt_query(NULL, &attr), -EINVAL);
	CHECK_EQ(ibtrs_clt_query(sess, NULL), -EINVAL);

	/* The server side of the session. */
	CHECK(h_srv_find(&srv, SESSNAME, &hs));
	CHECK_EQ(hs.name_rc, 0);
	CHECK(!strcmp(hs.name, SESSNAME));
	CHECK_EQ(hs.short_rc, -ENOBUFS);
	CHECK(!strcmp(hs.short_name, "err"));
	CHECK_EQ(hs.qd, QD);
	CHECK_EQ(hs.identity_rc, 0);
	{
		/* Without keys the client's address; with a key file in the
		 * environment (the suite's TLS pass), the key's identity. */
		const char *keys = getenv("IBTRS_TLS_PSK");
		const char *want = "addr:127.0.0.1";
		char line[256] = "";
		FILE *f;

		if (keys && *keys) {
			f = fopen(keys, "r");
			CHECK(f && fgets(line, sizeof(line), f));
			fclose(f);
			line[strcspn(line, ":")] = '\0';
			want = line;
		}
		if (strcmp(hs.identity, want))
			fprintf(stderr, "errors: identity %s, want %s\n",
				hs.identity, want);
		CHECK(!strcmp(hs.identity, want));
	}
	{
		char tiny[3];

		CHECK_EQ(ibtrs_srv_get_identity(hs.sess, tiny, sizeof(tiny)),
			 -ENOBUFS);
		CHECK(strlen(tiny) == 2 && !strncmp(tiny, hs.identity, 2));
		CHECK_EQ(ibtrs_srv_get_identity(NULL, tiny, sizeof(tiny)),
			 -EINVAL);
	}
	CHECK_EQ(h_srv_count_ev(&srv, IBTRS_SRV_LINK_EV_CONNECTED, SESSNAME),
		 1);

	/* The queue depth is the number of tags. */
	{
		struct ibtrs_tag *tags[QD];

		for (i = 0; i < QD; i++) {
			tags[i] = ibtrs_clt_get_tag(sess, IBTRS_IO_CON,
						    IBTRS_TAG_NOWAIT);
			CHECK(tags[i]);
		}
		CHECK(!ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_NOWAIT));
		for (i = 0; i < QD; i++)
			ibtrs_clt_put_tag(sess, tags[i]);
	}

	/* A session with its own max_segments. */
	{
		struct sockaddr_storage dst;
		struct ibtrs_addr p = { .src = NULL, .dst = &dst };
		unsigned char data[64];
		struct iovec sg[17];
		struct ibtrs_tag *tag;

		CHECK_EQ(ibtrs_addr_to_sockaddr("ip:127.0.0.1", 12, srv.port,
						&p),
			 0);
		s2 = ibtrs_clt_open(NULL, NULL, "seg16", &p, 1, srv.port, 0, 1,
				    16, 0);
		CHECK(s2);
		CHECK_EQ(ibtrs_clt_query(s2, &attr), 0);
		CHECK_EQ(attr.max_segments, 16);
		tag = ibtrs_clt_get_tag(s2, IBTRS_IO_CON, IBTRS_TAG_NOWAIT);
		CHECK(tag);
		for (i = 0; i < 17; i++) {
			sg[i].iov_base = data + i;
			sg[i].iov_len = 1;
		}
		CHECK_EQ(ibtrs_clt_request(IBTRS_WRITE, count_conf, s2, tag,
					   NULL, NULL, 0, 17, sg, 17),
			 -EINVAL);
		h_srv_expect_usr(&srv, NULL, 0, 0);
		CHECK_EQ(h_req_sync(s2, tag, IBTRS_WRITE, NULL, 0, sg, 16), 0);
		/* A tag of another session is refused. */
		CHECK_EQ(ibtrs_clt_request(IBTRS_WRITE, count_conf, sess, tag,
					   NULL, NULL, 0, 16, sg, 16),
			 -EINVAL);
		ibtrs_clt_put_tag(s2, tag);
		ibtrs_clt_close(s2);
	}
	CHECK_EQ(ibtrs_clt_query(sess, &attr), 0);
}

int main(void)
{
	t_watchdog(120);
	h_srv_start(&srv, NULL, QD, MAX_IO);
	sess = h_clt_open(SESSNAME, srv.port, 1, 0, NULL, NULL);

	test_query();
	test_rdma_ev_errors();
	test_resp_errors();
	test_request_args();
	test_busy();
	test_open_args();
	test_srv_open_in_use();

	CHECK_EQ(atomic_load(&stray_confs), 0);
	CHECK_EQ(atomic_load(&srv.usr_bad), 0);
	ibtrs_clt_close(sess);
	h_srv_stop(&srv);
	CHECK_EQ(atomic_load(&stray_confs), 0);
	if (soft_failures) {
		fprintf(stderr, "errors: %d check(s) failed\n", soft_failures);
		return 1;
	}
	printf("errors: ok\n");
	return 0;
}
