// SPDX-License-Identifier: MIT
/*
 * integrity.c - data and user messages arrive intact.
 *
 * WRITE then READ back and compare, for data sizes 0, 1, 511, 4096,
 * max_io_size and 200 random sizes; the data split into 1..max_segments
 * iovecs of random lengths, zero-length ones included; user messages of 0,
 * 1, 100 and IBTRS_MAX_USR_MSG bytes, in 1..3 pieces, checked byte for byte
 * by the server. Then 32 requests in flight at once on distinct tags, held
 * by the server until all arrived and answered in random order.
 */
#include "harness.h"

#define NR_RANDOM 200
#define NR_PARALLEL 32
#define GUARD 64

static struct h_srv srv;
static struct ibtrs_clt *sess;
static struct ibtrs_attrs attr;
static unsigned long long rng = 0x1234567;

static const size_t usr_sizes[] = { 0, 1, 100, IBTRS_MAX_USR_MSG };

/* Up to twice the fair share of @left among @parts, at most @left. */
static size_t cap(size_t left, unsigned int parts)
{
	size_t c = 2 * left / parts;

	return c < left ? c : left;
}

/**
 * split() - describe @len bytes at @buf by @cnt iovecs of random lengths
 * @buf: the data
 * @len: its length
 * @sg: @cnt iovecs to fill
 * @cnt: 1..max_segments
 *
 * About a quarter of the iovecs are empty.
 */
static void split(unsigned char *buf, size_t len, struct iovec *sg,
		  unsigned int cnt)
{
	size_t left = len, pos = 0, n;
	unsigned int i;

	for (i = 0; i < cnt; i++) {
		if (i == cnt - 1)
			n = left;
		else if (!(t_rand(&rng) % 4) || !left)
			n = 0;
		else
			n = h_rand_range(&rng, 0, cap(left, cnt - i));
		sg[i].iov_base = buf + pos;
		sg[i].iov_len = n;
		pos += n;
		left -= n;
	}
	CHECK_EQ(pos, len);
}

/* Split a user message into 1..3 pieces (pieces may be empty). */
static size_t split_usr(unsigned char *usr, size_t len, struct iovec *vec)
{
	size_t nr = h_rand_range(&rng, 1, 3), i, pos = 0, n;

	for (i = 0; i < nr; i++) {
		n = i == nr - 1 ? len - pos : h_rand_range(&rng, 0, len - pos);
		vec[i].iov_base = usr + pos;
		vec[i].iov_len = n;
		pos += n;
	}
	return nr;
}

/**
 * one_request() - a synchronous request with a checked user message
 * @tag: the tag
 * @dir: direction
 * @buf: data
 * @len: data length
 * @off: target offset
 * @usr_len: user message length
 */
static void one_request(struct ibtrs_tag *tag, int dir, unsigned char *buf,
			size_t len, uint64_t off, size_t usr_len)
{
	unsigned char usr[IBTRS_MAX_USR_MSG];
	struct iovec *sg, vec[3];
	unsigned int cnt;
	size_t nr;
	int ret;

	cnt = (unsigned int)h_rand_range(&rng, 1, attr.max_segments);
	sg = calloc(cnt, sizeof(*sg));
	CHECK(sg);
	split(buf, len, sg, cnt);
	/* A WRITE without data may pass no buffers at all (sg NULL). */
	if (!len && dir == IBTRS_WRITE) {
		free(sg);
		sg = NULL;
		cnt = 0;
	}
	h_usr_build(usr, usr_len, off, t_rand(&rng), (uint32_t)dir);
	if (usr_len < sizeof(struct h_usr_hdr))
		h_srv_expect_usr(&srv, usr, usr_len, off);
	else
		h_srv_expect_usr(&srv, NULL, 0, 0);
	nr = split_usr(usr, usr_len, vec);
	ret = h_req_vsync(sess, tag, dir, vec, nr, sg, cnt);
	if (ret) {
		fprintf(stderr,
			"%s of %zu bytes in %u iovecs, user message %zu: %d (%s)\n",
			dir == IBTRS_WRITE ? "WRITE" : "READ", len, cnt,
			usr_len, ret, strerror(-ret));
		exit(1);
	}
	free(sg);
}

/* WRITE @len bytes at @off, READ them back, compare. */
static void write_read(struct ibtrs_tag *tag, size_t len, uint64_t off,
		       unsigned int idx)
{
	unsigned char *wbuf = malloc(len + 1), *rbuf = malloc(len + GUARD);
	size_t i;

	CHECK(wbuf && rbuf);
	h_fill(wbuf, len, 1000 + idx);
	memset(rbuf, 0xa5, len + GUARD);
	one_request(tag, IBTRS_WRITE, wbuf, len, off, usr_sizes[idx % 4]);
	one_request(tag, IBTRS_READ, rbuf, len, off, usr_sizes[(idx + 1) % 4]);
	if (memcmp(wbuf, rbuf, len)) {
		for (i = 0; i < len && wbuf[i] == rbuf[i]; i++)
			;
		fprintf(stderr, "case %u: %zu bytes at %llu differ at %zu\n",
			idx, len, (unsigned long long)off, i);
		exit(1);
	}
	for (i = len; i < len + GUARD; i++)
		CHECK_EQ(rbuf[i], 0xa5);
	free(wbuf);
	free(rbuf);
}

/* Every region written earlier still holds its data. */
static void reread(struct ibtrs_tag *tag, const size_t *lens, unsigned int n)
{
	unsigned char *want = malloc(attr.max_io_size + 1);
	unsigned char *got = malloc(attr.max_io_size + 1);
	unsigned int i;

	CHECK(want && got);
	for (i = 0; i < n; i++) {
		h_fill(want, lens[i], 1000 + i);
		one_request(tag, IBTRS_READ, got, lens[i],
			    (uint64_t)i * attr.max_io_size, usr_sizes[i % 4]);
		if (memcmp(want, got, lens[i])) {
			fprintf(stderr, "region %u overwritten\n", i);
			exit(1);
		}
	}
	free(want);
	free(got);
}

struct par_req {
	struct h_req r;
	struct ibtrs_tag *tag;
	unsigned char *buf;
	size_t len;
	unsigned char usr[IBTRS_MAX_USR_MSG];
};

/* Submit one request per element of @p at once; the server holds them. */
static void parallel(struct par_req *p, int dir, uint64_t base)
{
	struct h_wait w;
	struct h_op *ops[NR_PARALLEL], *op;
	struct iovec sg;
	unsigned int i, j, n = 0;

	h_wait_init(&w);
	h_srv_expect_usr(&srv, NULL, 0, 0);
	h_srv_set_defer(&srv, true);
	for (i = 0; i < NR_PARALLEL; i++) {
		size_t ul = usr_sizes[2 + i % 2];
		struct iovec v;

		p[i].r.w = &w;
		p[i].r.calls = 0;
		h_usr_build(p[i].usr, ul, base + (uint64_t)i * attr.max_io_size,
			    t_rand(&rng), i);
		v.iov_base = p[i].usr;
		v.iov_len = ul;
		sg.iov_base = p[i].buf;
		sg.iov_len = p[i].len;
		CHECK_EQ(ibtrs_clt_request(dir, h_conf, sess, p[i].tag, &p[i].r,
					   &v, 1, p[i].len, &sg, 1),
			 0);
	}
	/* All of them are in flight at once. */
	CHECK(h_srv_wait_held(&srv, NR_PARALLEL, 10000));
	h_srv_set_defer(&srv, false);
	CHECK_EQ(h_wait_get_calls(&w), 0);
	while ((op = h_srv_pop(&srv)))
		ops[n++] = op;
	CHECK_EQ(n, NR_PARALLEL);
	/* Answer in random order. */
	for (i = n; i > 1; i--) {
		j = (unsigned int)(t_rand(&rng) % i);
		op = ops[i - 1];
		ops[i - 1] = ops[j];
		ops[j] = op;
	}
	for (i = 0; i < n; i++)
		h_op_complete(ops[i], 0);
	CHECK(h_wait_calls(&w, NR_PARALLEL, 10000));
	h_sleep_ms(20);
	pthread_mutex_lock(&w.lock);
	CHECK_EQ(w.calls, NR_PARALLEL);
	CHECK_EQ(w.errors, 0);
	for (i = 0; i < NR_PARALLEL; i++)
		CHECK_EQ(p[i].r.calls, 1);
	pthread_mutex_unlock(&w.lock);
	h_wait_destroy(&w);
}

static void test_parallel(void)
{
	struct par_req *p = calloc(NR_PARALLEL, sizeof(*p));
	unsigned char **wbufs = calloc(NR_PARALLEL, sizeof(*wbufs));
	uint64_t base = (uint64_t)(NR_RANDOM + 8) * attr.max_io_size;
	unsigned int i;

	CHECK(p && wbufs);
	CHECK(base + (uint64_t)NR_PARALLEL * attr.max_io_size <= H_TARGET_SIZE);
	for (i = 0; i < NR_PARALLEL; i++) {
		p[i].tag =
			ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_NOWAIT);
		CHECK(p[i].tag);
		p[i].len = h_rand_range(&rng, 1, attr.max_io_size);
		p[i].buf = malloc(p[i].len);
		wbufs[i] = malloc(p[i].len);
		CHECK(p[i].buf && wbufs[i]);
		h_fill(wbufs[i], p[i].len, 5000 + i);
		memcpy(p[i].buf, wbufs[i], p[i].len);
	}
	parallel(p, IBTRS_WRITE, base);
	for (i = 0; i < NR_PARALLEL; i++)
		memset(p[i].buf, 0, p[i].len);
	parallel(p, IBTRS_READ, base);
	for (i = 0; i < NR_PARALLEL; i++) {
		if (memcmp(p[i].buf, wbufs[i], p[i].len)) {
			fprintf(stderr, "parallel request %u: data differ\n",
				i);
			exit(1);
		}
		ibtrs_clt_put_tag(sess, p[i].tag);
		free(p[i].buf);
		free(wbufs[i]);
	}
	free(p);
	free(wbufs);
}

/* The server's check catches a changed user message (harness self-test). */
static void test_checker(void)
{
	unsigned char usr[IBTRS_MAX_USR_MSG], buf[16];
	struct iovec sg = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct ibtrs_tag *tag;

	tag = ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_NOWAIT);
	CHECK(tag);
	h_srv_expect_usr(&srv, NULL, 0, 0);
	h_usr_build(usr, 100, 0, 77, 0);
	usr[60] ^= 1;
	CHECK_EQ(h_req_sync(sess, tag, IBTRS_WRITE, usr, 100, &sg, 1),
		 -EBADMSG);
	usr[0] = 1;
	h_srv_expect_usr(&srv, usr, 1, 0);
	usr[0] = 2;
	CHECK_EQ(h_req_sync(sess, tag, IBTRS_READ, usr, 1, &sg, 1), -EBADMSG);
	h_srv_expect_usr(&srv, usr, 1, 0);
	CHECK_EQ(h_req_sync(sess, tag, IBTRS_READ, NULL, 0, &sg, 1), -EBADMSG);
	CHECK_EQ(atomic_load(&srv.usr_bad), 3);
	atomic_store(&srv.usr_bad, 0);
	ibtrs_clt_put_tag(sess, tag);
}

int main(void)
{
	size_t lens[NR_RANDOM + 5];
	struct ibtrs_tag *tag;
	unsigned int i, n = 0;
	double t0 = t_now();

	t_watchdog(120);
	h_srv_start(&srv, NULL, 0, 0);
	sess = h_clt_open("integrity", srv.port, 1, 0, NULL, NULL);
	CHECK_EQ(ibtrs_clt_query(sess, &attr), 0);
	CHECK(attr.max_io_size > 4096);
	CHECK(attr.max_segments >= 1);
	CHECK((uint64_t)(NR_RANDOM + 8 + NR_PARALLEL) * attr.max_io_size <=
	      H_TARGET_SIZE);

	test_checker();
	tag = ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_WAIT);
	CHECK(tag);
	lens[n++] = 0;
	lens[n++] = 1;
	lens[n++] = 511;
	lens[n++] = 4096;
	lens[n++] = attr.max_io_size;
	for (i = 0; i < NR_RANDOM; i++)
		lens[n++] = h_rand_range(&rng, 1, attr.max_io_size);
	for (i = 0; i < n; i++)
		write_read(tag, lens[i], (uint64_t)i * attr.max_io_size, i);
	reread(tag, lens, n);
	ibtrs_clt_put_tag(sess, tag);

	test_parallel();

	CHECK_EQ(atomic_load(&srv.usr_bad), 0);
	CHECK_EQ(atomic_load(&srv.range_bad), 0);
	/* Each request reached the server once (3 failed ones in the
	 * self-test). */
	CHECK_EQ(atomic_load(&srv.rdma_calls), h_clt_ops(sess) + 3);
	ibtrs_clt_close(sess);
	h_srv_stop(&srv);
	printf("integrity: %u sizes, %d parallel, %.1f s\n", n, NR_PARALLEL,
	       t_now() - t0);
	return 0;
}
