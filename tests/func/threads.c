// SPDX-License-Identifier: MIT
/*
 * threads.c - many submitters at once on one session over two paths.
 *
 * 8 threads each run 5000 (1500 under TSan) verified WRITE+READ pairs
 * (sizes 512..64 KiB, 1..4 iovecs) on their own region of the target at the
 * same time. All succeed; both paths carried operations and have none in flight
 * at the end; the server saw exactly the operations the client counted.
 */
#include "harness.h"

#ifdef __SANITIZE_THREAD__
#define H_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define H_TSAN 1
#endif
#endif

#define NR_THREADS 8
#ifdef H_TSAN
/* ThreadSanitizer runs the library ~12 times slower: stay well below 30 s. */
#define NR_PAIRS 1500
#else
#define NR_PAIRS 5000
#endif
#define MIN_LEN 512
#define MAX_LEN (64 * 1024)
#define REGION (4ull << 20)

static struct h_srv srv;
static struct ibtrs_clt *sess;
static _Atomic unsigned int start_gate;

struct worker {
	pthread_t thr;
	unsigned int idx;
	unsigned long long rng;
	unsigned long pairs;
	int fail;
};

/* Split @len bytes at @buf into 1..4 iovecs. */
static unsigned int split4(struct worker *w, unsigned char *buf, size_t len,
			   struct iovec *sg)
{
	unsigned int cnt = (unsigned int)h_rand_range(&w->rng, 1, 4), i;
	size_t pos = 0, n;

	for (i = 0; i < cnt; i++) {
		n = i == cnt - 1 ? len - pos
				 : h_rand_range(&w->rng, 0, len - pos);
		sg[i].iov_base = buf + pos;
		sg[i].iov_len = n;
		pos += n;
	}
	return cnt;
}

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	unsigned char *wbuf = malloc(MAX_LEN), *rbuf = malloc(MAX_LEN);
	unsigned char usr[sizeof(struct h_usr_hdr) + 8];
	uint64_t base = (uint64_t)w->idx * REGION, off;
	struct ibtrs_tag *tag;
	struct iovec sg[4];
	unsigned int cnt, i;
	size_t len;
	int ret;

	CHECK(wbuf && rbuf);
	tag = ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_WAIT);
	CHECK(tag);
	while (!atomic_load(&start_gate))
		h_sleep_ms(1);
	for (i = 0; i < NR_PAIRS; i++) {
		len = h_rand_range(&w->rng, MIN_LEN, MAX_LEN);
		off = base + h_rand_range(&w->rng, 0, REGION - len);
		h_fill(wbuf, len, ((uint64_t)w->idx << 32) | i);
		cnt = split4(w, wbuf, len, sg);
		h_usr_build(usr, sizeof(usr), off, i, w->idx);
		ret = h_req_sync(sess, tag, IBTRS_WRITE, usr, sizeof(usr), sg,
				 cnt);
		if (ret) {
			fprintf(stderr, "thread %u pair %u: WRITE: %d\n",
				w->idx, i, ret);
			w->fail = 1;
			break;
		}
		memset(rbuf, 0, len);
		cnt = split4(w, rbuf, len, sg);
		h_usr_build(usr, sizeof(usr), off, i + 1, w->idx);
		ret = h_req_sync(sess, tag, IBTRS_READ, usr, sizeof(usr), sg,
				 cnt);
		if (ret) {
			fprintf(stderr, "thread %u pair %u: READ: %d\n", w->idx,
				i, ret);
			w->fail = 1;
			break;
		}
		if (memcmp(wbuf, rbuf, len)) {
			fprintf(stderr, "thread %u pair %u: data differ\n",
				w->idx, i);
			w->fail = 1;
			break;
		}
		w->pairs++;
	}
	ibtrs_clt_put_tag(sess, tag);
	free(wbuf);
	free(rbuf);
	return NULL;
}

int main(void)
{
	struct worker w[NR_THREADS];
	struct ibtrs_path_stats st[2];
	struct ibtrs_attrs attr;
	uint64_t total = 0, ops;
	unsigned int i;
	double t0;

	t_watchdog(240);
	CHECK(NR_THREADS * REGION <= H_TARGET_SIZE);
	h_srv_start(&srv, "*", 0, 0);
	sess = h_clt_open("threads", srv.port, 2, 0, NULL, NULL);
	CHECK_EQ(ibtrs_clt_query(sess, &attr), 0);
	CHECK_EQ(attr.path_cnt, 2);
	CHECK_EQ(attr.connected_paths, 2);
	CHECK(attr.max_io_size >= MAX_LEN);

	for (i = 0; i < NR_THREADS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].idx = i;
		w[i].rng = 0xabcdef + i;
		CHECK_EQ(pthread_create(&w[i].thr, NULL, worker_fn, &w[i]), 0);
	}
	t0 = t_now();
	atomic_store(&start_gate, 1);
	for (i = 0; i < NR_THREADS; i++) {
		CHECK_EQ(pthread_join(w[i].thr, NULL), 0);
		CHECK_EQ(w[i].fail, 0);
		CHECK_EQ(w[i].pairs, NR_PAIRS);
	}
	t0 = t_now() - t0;

	for (i = 0; i < 2; i++) {
		memset(&st[i], 0, sizeof(st[i]));
		st[i].size = sizeof(st[i]);
		CHECK_EQ(ibtrs_clt_path_stats(sess, i, &st[i]), 0);
		CHECK_EQ(st[i].state, IBTRS_PATH_CONNECTED);
		CHECK(st[i].rd_ops > 0);
		CHECK(st[i].wr_ops > 0);
		CHECK_EQ(st[i].inflight, 0);
		CHECK_EQ(st[i].errors, 0);
		CHECK_EQ(st[i].proto_errors, 0);
		/* A request posted from one of these threads and answered
		 * in the batch the loop thread was already taking ends
		 * before that batch's time: none may count as lasting for
		 * ages. */
		CHECK(st[i].lat_p50_us <= st[i].lat_p99_us);
		CHECK(st[i].lat_p99_us <= st[i].lat_p999_us);
		CHECK(st[i].lat_p999_us <= st[i].lat_max_us);
		CHECK(st[i].lat_max_us > 0);
		CHECK(st[i].lat_max_us < 60u * 1000000u);
		total += st[i].rd_ops + st[i].wr_ops;
	}
	ops = (uint64_t)NR_THREADS * NR_PAIRS * 2;
	CHECK_EQ(total, ops);
	CHECK_EQ(st[0].rd_ops + st[1].rd_ops, ops / 2);
	CHECK_EQ(st[0].wr_ops + st[1].wr_ops, ops / 2);
	CHECK_EQ(atomic_load(&srv.rdma_calls), ops);
	CHECK_EQ(atomic_load(&srv.rd_calls), ops / 2);
	CHECK_EQ(atomic_load(&srv.wr_calls), ops / 2);
	CHECK_EQ(atomic_load(&srv.usr_bad), 0);
	CHECK_EQ(atomic_load(&srv.range_bad), 0);

	ibtrs_clt_close(sess);
	h_srv_stop(&srv);
	printf("threads: %llu requests in %.1f s (path ops %llu / %llu)\n",
	       (unsigned long long)ops, t0,
	       (unsigned long long)(st[0].rd_ops + st[0].wr_ops),
	       (unsigned long long)(st[1].rd_ops + st[1].wr_ops));
	return 0;
}
