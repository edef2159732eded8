// SPDX-License-Identifier: MIT
/*
 * consumer.c - an application of the installed libibtrs, written only
 * against the IBTRS seed API of <ibtrs.h> (nothing after its "Extensions"
 * banner): a server with a memory target and a client session over two
 * loopback paths, 1000 verified WRITE + READ pairs of various sizes.
 *
 * Usage: consumer PORT (0: a port the system picks)
 * Exit status: 0 success ("consumer: ok"), 1 failure, 2 PORT is in use.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <ibtrs.h>

#define STORE_LEN (4u << 20)
#define NR_PAIRS 1000
#define BATCH 8
#define MSG_MAGIC 0xC0115u

struct msg {
	uint32_t magic;
	uint32_t len;
	uint64_t off;
};

/* Per-request state, kept in the tag's user area. */
struct pdu {
	int done;
	int err;
};

struct slot {
	struct ibtrs_tag *tag;
	uint64_t off;
	uint32_t len;
	unsigned char *wbuf, *rbuf;
};

static unsigned char *store;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int srv_connected, srv_disconnected, srv_reqs, srv_bad;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "consumer: %s:%d: check failed: %s\n", \
				__FILE__, __LINE__, #cond);                    \
			exit(1);                                               \
		}                                                              \
	} while (0)

static unsigned long long rnd_state = 88172645463325252ull;

static unsigned long long rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static int srv_link_ev(struct ibtrs_srv *sess, enum ibtrs_srv_link_ev ev,
		       void *priv)
{
	char name[64];

	(void)priv;
	pthread_mutex_lock(&lock);
	if (ev == IBTRS_SRV_LINK_EV_CONNECTED) {
		if (ibtrs_srv_get_sess_name(sess, name, sizeof(name)) ||
		    strcmp(name, "consumer") ||
		    ibtrs_srv_get_queue_depth(sess) < BATCH)
			srv_bad++;
		ibtrs_srv_set_sess_priv(sess, store);
		srv_connected++;
	} else {
		srv_disconnected++;
	}
	pthread_mutex_unlock(&lock);
	return 0;
}

static int srv_rdma_ev(struct ibtrs_srv *sess, void *priv,
		       struct ibtrs_srv_op *id, int dir, void *data,
		       size_t datalen, const void *usr, size_t usrlen)
{
	unsigned char *mem = priv;
	struct msg m;

	(void)sess;
	if (mem != store || usrlen != sizeof(m))
		goto bad;
	memcpy(&m, usr, sizeof(m));
	if (m.magic != MSG_MAGIC || m.len != datalen || m.off > STORE_LEN ||
	    datalen > STORE_LEN - m.off)
		goto bad;
	if (dir == IBTRS_WRITE)
		memcpy(mem + m.off, data, datalen);
	else
		memcpy(data, mem + m.off, datalen);
	pthread_mutex_lock(&lock);
	srv_reqs++;
	pthread_mutex_unlock(&lock);
	ibtrs_srv_resp_rdma(id, 0);
	return 0;
bad:
	pthread_mutex_lock(&lock);
	srv_bad++;
	pthread_mutex_unlock(&lock);
	return -EINVAL;
}

static void conf(void *priv, int err)
{
	struct pdu *pdu = priv;

	pthread_mutex_lock(&lock);
	pdu->err = err;
	pdu->done = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
}

static void clt_link_ev(void *priv, enum ibtrs_clt_link_ev ev)
{
	(void)priv;
	(void)ev;
}

/* Submit the request of @s; its data is split into 1..4 iovecs. */
static void submit(struct ibtrs_clt *sess, struct slot *s, int dir)
{
	unsigned char *buf = dir == IBTRS_WRITE ? s->wbuf : s->rbuf;
	struct pdu *pdu = ibtrs_tag_to_pdu(s->tag);
	struct msg m = { .magic = MSG_MAGIC, .len = s->len, .off = s->off };
	struct iovec vec = { .iov_base = &m, .iov_len = sizeof(m) };
	struct iovec sg[4];
	unsigned int cnt = 1 + (unsigned int)(rnd() % 4), i;
	size_t pos = 0, piece;
	int ret;

	if (cnt > s->len)
		cnt = 1;
	piece = s->len / cnt;
	for (i = 0; i < cnt; i++) {
		sg[i].iov_base = buf + pos;
		sg[i].iov_len = i == cnt - 1 ? s->len - pos : piece;
		pos += sg[i].iov_len;
	}
	CHECK(ibtrs_tag_from_pdu(pdu) == s->tag);
	pdu->done = 0;
	pdu->err = 0;
	ret = ibtrs_clt_request(dir, conf, sess, s->tag, pdu, &vec, 1, s->len,
				sg, cnt);
	if (ret) {
		fprintf(stderr, "consumer: request: %s\n", strerror(-ret));
		exit(1);
	}
}

static void wait_all(struct slot *slots, unsigned int n)
{
	struct timespec ts;
	unsigned int i;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 30;
	pthread_mutex_lock(&lock);
	for (i = 0; i < n; i++) {
		struct pdu *pdu = ibtrs_tag_to_pdu(slots[i].tag);

		while (!pdu->done)
			CHECK(!pthread_cond_timedwait(&cond, &lock, &ts));
		if (pdu->err) {
			fprintf(stderr, "consumer: request failed: %s\n",
				strerror(-pdu->err));
			exit(1);
		}
	}
	pthread_mutex_unlock(&lock);
}

static uint32_t pick_len(unsigned int i, uint32_t max)
{
	static const uint32_t sizes[] = { 1,	7,    512,   4095,
					  4096, 4097, 65536, 100000 };
	uint32_t len;

	if (i % 3 == 2)
		len = 1 + (uint32_t)(rnd() % max);
	else
		len = sizes[i % (sizeof(sizes) / sizeof(sizes[0]))];
	if (i % 50 == 49)
		len = max;
	return len > max ? max : len;
}

/*
 * A port no socket is bound to just now, picked by the system; the seed API
 * has no call that reads back the port of a server opened on port 0.
 */
static unsigned int free_port(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	CHECK(fd >= 0);
	CHECK(!bind(fd, (struct sockaddr *)&sin, sizeof(sin)));
	CHECK(!getsockname(fd, (struct sockaddr *)&sin, &len));
	close(fd);
	return ntohs(sin.sin_port);
}

int main(int argc, char **argv)
{
	static const char *const path_str[2] = { "ip:127.0.0.1",
						 "ip:127.0.0.1,ip:127.0.0.2" };
	struct sockaddr_storage src[2], dst[2];
	struct ibtrs_addr paths[2];
	struct slot slots[BATCH];
	struct ibtrs_attrs attr;
	struct ibtrs_srv_ctx *ctx;
	struct ibtrs_clt *sess;
	unsigned int port, i, j, done = 0, try;
	int pick;
	char *end;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PORT\n", argv[0]);
		return 1;
	}
	port = (unsigned int)strtoul(argv[1], &end, 10);
	if (*end || port > 65535) {
		fprintf(stderr, "consumer: bad port %s\n", argv[1]);
		return 1;
	}
	store = calloc(1, STORE_LEN);
	CHECK(store);

	/* Another process may take a picked port before the server does. */
	pick = !port;
	for (try = 0;; try++) {
		if (pick)
			port = free_port();
		ctx = ibtrs_srv_open(srv_rdma_ev, srv_link_ev, port);
		if (ctx || !pick || errno != EADDRINUSE || try == 9)
			break;
	}
	if (!ctx) {
		fprintf(stderr, "consumer: ibtrs_srv_open: %s\n",
			strerror(errno));
		return errno == EADDRINUSE ? 2 : 1;
	}

	for (i = 0; i < 2; i++) {
		paths[i].src = &src[i];
		paths[i].dst = &dst[i];
		CHECK(!ibtrs_addr_to_sockaddr(path_str[i], strlen(path_str[i]),
					      (uint16_t)port, &paths[i]));
	}
	CHECK(paths[0].src == NULL && paths[1].src == &src[1]);
	sess = ibtrs_clt_open(NULL, clt_link_ev, "consumer", paths, 2,
			      (uint16_t)port, sizeof(struct pdu), 1, 0, 0);
	if (!sess) {
		fprintf(stderr, "consumer: ibtrs_clt_open: %s\n",
			strerror(errno));
		return 1;
	}
	CHECK(!ibtrs_clt_query(sess, &attr));
	CHECK(attr.path_cnt == 2);
	CHECK(attr.connected_paths == 2);
	CHECK(attr.queue_depth >= BATCH);
	CHECK(attr.max_io_size >= 4096);
	CHECK(attr.max_segments >= 4);
	CHECK(!strcmp((const char *)attr.sessname, "consumer"));

	for (i = 0; i < BATCH; i++) {
		slots[i].wbuf = malloc(attr.max_io_size);
		slots[i].rbuf = malloc(attr.max_io_size);
		CHECK(slots[i].wbuf && slots[i].rbuf);
	}
	/* Batches of BATCH writes, then the same BATCH read back. */
	while (done < NR_PAIRS) {
		unsigned int n = NR_PAIRS - done < BATCH ? NR_PAIRS - done
							 : BATCH;

		for (i = 0; i < n; i++) {
			struct slot *s = &slots[i];
			uint64_t region = STORE_LEN / BATCH;

			s->len = pick_len(done + i, attr.max_io_size);
			s->off = i * region + rnd() % (region - s->len + 1);
			for (j = 0; j < s->len; j++)
				s->wbuf[j] = (unsigned char)(rnd() >> 24);
			s->tag = ibtrs_clt_get_tag(
				sess, i % 2 ? IBTRS_IO_CON : IBTRS_USR_CON,
				IBTRS_TAG_WAIT);
			CHECK(s->tag);
			submit(sess, s, IBTRS_WRITE);
		}
		wait_all(slots, n);
		for (i = 0; i < n; i++) {
			memset(slots[i].rbuf, 0, slots[i].len);
			submit(sess, &slots[i], IBTRS_READ);
		}
		wait_all(slots, n);
		for (i = 0; i < n; i++) {
			if (memcmp(slots[i].rbuf, slots[i].wbuf,
				   slots[i].len)) {
				fprintf(stderr,
					"consumer: data read back at %llu+%u differs\n",
					(unsigned long long)slots[i].off,
					slots[i].len);
				return 1;
			}
			ibtrs_clt_put_tag(sess, slots[i].tag);
		}
		done += n;
	}
	CHECK(!ibtrs_clt_query(sess, &attr));
	CHECK(attr.connected_paths == 2);

	ibtrs_clt_close(sess);
	ibtrs_srv_close(ctx);
	pthread_mutex_lock(&lock);
	CHECK(srv_reqs == 2 * NR_PAIRS);
	CHECK(srv_bad == 0);
	CHECK(srv_connected == 1);
	CHECK(srv_disconnected == 1);
	pthread_mutex_unlock(&lock);
	for (i = 0; i < BATCH; i++) {
		free(slots[i].wbuf);
		free(slots[i].rbuf);
	}
	free(store);
	printf("consumer: %u verified WRITE+READ pairs over %u paths\n",
	       NR_PAIRS, attr.path_cnt);
	printf("consumer: ok\n");
	return 0;
}
