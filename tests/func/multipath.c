// SPDX-License-Identifier: MIT
/*
 * multipath.c - sessions over several paths.
 *
 * - Two paths (ip:127.0.0.1, ip:127.0.0.2) share the requests: each path
 *   carries more than 30% of them.
 * - A second path to a port without listener: the session still opens,
 *   reports path_cnt 2, connected_paths 1, the dead path as not connected,
 *   and carries I/O on the live path.
 * - A "SRC,DST" path (ip:127.0.0.2,ip:127.0.0.1) connects from that source.
 */
#include <arpa/inet.h>
#include <netinet/in.h>

#include "harness.h"

#define NR_IO 2000

static struct h_srv srv;

static void path_stats(struct ibtrs_clt *sess, unsigned int idx,
		       struct ibtrs_path_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	CHECK_EQ(ibtrs_clt_path_stats(sess, idx, st), 0);
}

/* @n verified synchronous WRITE+READ pairs of @len bytes. */
static void run_io(struct ibtrs_clt *sess, unsigned int n, size_t len)
{
	unsigned char *w = malloc(len + 1), *r = malloc(len + 1);
	unsigned int i;
	struct ibtrs_tag *tag;

	CHECK(w && r);
	tag = ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_WAIT);
	CHECK(tag);
	for (i = 0; i < n; i++) {
		h_fill(w, len, i);
		CHECK_EQ(h_io(sess, tag, IBTRS_WRITE, w, len,
			      (uint64_t)(i % 64) * len, i),
			 0);
		memset(r, 0, len);
		CHECK_EQ(h_io(sess, tag, IBTRS_READ, r, len,
			      (uint64_t)(i % 64) * len, i),
			 0);
		CHECK(!memcmp(w, r, len));
	}
	ibtrs_clt_put_tag(sess, tag);
	free(w);
	free(r);
}

/* One of the WRITEs that run_burst() keeps in flight at once. */
struct burst {
	struct h_req r;
	struct ibtrs_tag *tag;
	unsigned char buf[8192];
	unsigned char usr[sizeof(struct h_usr_hdr)];
};

/* @n WRITEs in flight at once, so that the paths also carry them together. */
static void run_burst(struct ibtrs_clt *sess, unsigned int n)
{
	struct burst *b = calloc(n, sizeof(*b));
	struct h_wait w;
	struct iovec sg, v;
	unsigned int i;

	CHECK(b);
	h_wait_init(&w);
	for (i = 0; i < n; i++) {
		b[i].r.w = &w;
		b[i].tag =
			ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_WAIT);
		CHECK(b[i].tag);
		h_fill(b[i].buf, sizeof(b[i].buf), 900 + i);
		h_usr_build(b[i].usr, sizeof(b[i].usr),
			    (uint64_t)(1 << 20) + i * sizeof(b[i].buf), i, i);
		v.iov_base = b[i].usr;
		v.iov_len = sizeof(b[i].usr);
		sg.iov_base = b[i].buf;
		sg.iov_len = sizeof(b[i].buf);
		CHECK_EQ(ibtrs_clt_request(IBTRS_WRITE, h_conf, sess, b[i].tag,
					   &b[i].r, &v, 1, sizeof(b[i].buf),
					   &sg, 1),
			 0);
	}
	CHECK(h_wait_calls(&w, n, 10000));
	pthread_mutex_lock(&w.lock);
	CHECK_EQ(w.errors, 0);
	pthread_mutex_unlock(&w.lock);
	for (i = 0; i < n; i++)
		ibtrs_clt_put_tag(sess, b[i].tag);
	h_wait_destroy(&w);
	free(b);
}

static void test_two_paths(void)
{
	struct ibtrs_path_stats st[2];
	struct ibtrs_attrs attr;
	struct ibtrs_clt *sess;
	uint64_t ops[2], total;
	unsigned int i;

	sess = h_clt_open("mp-two", srv.port, 2, 0, NULL, NULL);
	CHECK_EQ(ibtrs_clt_query(sess, &attr), 0);
	CHECK_EQ(attr.path_cnt, 2);
	CHECK_EQ(attr.connected_paths, 2);
	run_io(sess, NR_IO / 2, 4096);
	run_burst(sess, 64);
	total = 0;
	for (i = 0; i < 2; i++) {
		path_stats(sess, i, &st[i]);
		CHECK_EQ(st[i].state, IBTRS_PATH_CONNECTED);
		CHECK_EQ(st[i].inflight, 0);
		CHECK_EQ(st[i].errors, 0);
		ops[i] = st[i].rd_ops + st[i].wr_ops;
		total += ops[i];
	}
	CHECK_EQ(total, NR_IO + 64);
	CHECK_EQ(total, atomic_load(&srv.rdma_calls));
	for (i = 0; i < 2; i++) {
		if (ops[i] * 10 <= total * 3) {
			fprintf(stderr, "path %u carried %llu of %llu ops\n", i,
				(unsigned long long)ops[i],
				(unsigned long long)total);
			exit(1);
		}
	}
	CHECK(strstr(st[0].dst, "127.0.0.1"));
	CHECK(strstr(st[1].dst, "127.0.0.2"));
	CHECK_EQ(ibtrs_clt_path_stats(sess, 2, &st[0]), -ENOENT);
	CHECK_EQ(ibtrs_clt_path_stats(sess, 0, NULL), -EINVAL);
	ibtrs_clt_close(sess);
}

static void test_dead_path(void)
{
	struct ibtrs_path_stats st[2];
	struct ibtrs_attrs attr;
	struct ibtrs_clt *sess;
	char dead[64];
	const char *strs[2] = { "ip:127.0.0.1", dead };
	uint64_t calls0 = atomic_load(&srv.rdma_calls);

	snprintf(dead, sizeof(dead), "ip:127.0.0.1:%u", h_free_port());
	sess = h_clt_open_strs("mp-dead", srv.port, strs, 2, 0, NULL, NULL);
	if (!sess) {
		fprintf(stderr, "session with a dead second path: %s\n",
			strerror(errno));
		exit(1);
	}
	CHECK_EQ(ibtrs_clt_query(sess, &attr), 0);
	CHECK_EQ(attr.path_cnt, 2);
	CHECK_EQ(attr.connected_paths, 1);
	path_stats(sess, 0, &st[0]);
	path_stats(sess, 1, &st[1]);
	CHECK_EQ(st[0].state, IBTRS_PATH_CONNECTED);
	CHECK(st[1].state != IBTRS_PATH_CONNECTED);

	run_io(sess, 100, 1000);
	run_burst(sess, 16);
	path_stats(sess, 0, &st[0]);
	path_stats(sess, 1, &st[1]);
	CHECK_EQ(st[0].rd_ops + st[0].wr_ops, 216);
	CHECK_EQ(st[1].rd_ops + st[1].wr_ops, 0);
	CHECK_EQ(st[1].inflight, 0);
	CHECK_EQ(st[0].errors + st[1].errors, 0);
	CHECK_EQ(atomic_load(&srv.rdma_calls) - calls0, 216);
	CHECK(st[1].state != IBTRS_PATH_CONNECTED);
	ibtrs_clt_close(sess);
}

static void test_src_dst(void)
{
	const char *strs[1] = { "ip:127.0.0.2,ip:127.0.0.1" };
	struct ibtrs_path_stats st;
	struct ibtrs_attrs attr;
	struct ibtrs_clt *sess;

	sess = h_clt_open_strs("mp-src", srv.port, strs, 1, 0, NULL, NULL);
	if (!sess) {
		fprintf(stderr, "session over %s: %s\n", strs[0],
			strerror(errno));
		exit(1);
	}
	CHECK_EQ(ibtrs_clt_query(sess, &attr), 0);
	CHECK_EQ(attr.connected_paths, 1);
	path_stats(sess, 0, &st);
	CHECK_EQ(st.state, IBTRS_PATH_CONNECTED);
	CHECK(strstr(st.src, "127.0.0.2"));
	CHECK(strstr(st.dst, "127.0.0.1"));
	run_io(sess, 50, 3000);
	path_stats(sess, 0, &st);
	CHECK_EQ(st.rd_ops, 50);
	CHECK_EQ(st.wr_ops, 50);
	ibtrs_clt_close(sess);
}

int main(void)
{
	t_watchdog(120);
	/* Every address: the paths go to 127.0.0.1 and 127.0.0.2. */
	h_srv_start(&srv, "*", 0, 0);
	test_two_paths();
	test_dead_path();
	test_src_dst();
	h_srv_stop(&srv);
	CHECK_EQ(atomic_load(&srv.usr_bad), 0);
	CHECK_EQ(h_srv_count_ev(&srv, IBTRS_SRV_LINK_EV_CONNECTED, NULL), 3);
	CHECK_EQ(h_srv_count_ev(&srv, IBTRS_SRV_LINK_EV_DISCONNECTED, NULL), 3);
	printf("multipath: ok\n");
	return 0;
}
