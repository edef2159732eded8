// SPDX-License-Identifier: MIT
/*
 * fuzz_tcp_frames.c - the tcp backend's receive side on any byte stream:
 * frame headers, TCP_OP_HDRS runs, payloads placed into posted receives
 * and registered regions, split at arbitrary points.
 *
 * tcp.c is included, so that its static parser is the one under test, and
 * readv() is replaced by a stream the input feeds: the receive path runs
 * unchanged (tcp_con_event(), tcp_rx_read() with its direct placement,
 * tcp_rx_parse()), on a connection with no socket.
 *
 * Input: a 4-byte header, then the stream.
 *   byte 0: receives posted, 1 + (b & 7); their sizes cycle through
 *           fuzz_recv_len[]
 *   byte 1: seed of the split points
 *   bytes 2-3: largest read, 1 + (le16 % 65536)
 * Each read returns 1..largest bytes; now and then one returns EAGAIN,
 * which ends the event (the next call is a new one); the stream ends with
 * a close. Receives are posted again as they complete, as the server does.
 *
 * The connection is new for each input; what it is given lives as long
 * as the process, made once: the staging buffer (the one allocation of
 * tcp.c kept, its used part refilled with a pattern before each input:
 * a fresh 256 KiB per input costs more than the parse), the regions
 * (tcp_env.h) and the receive buffers (refilled too).
 */
#include <stdlib.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "fuzz.h"

void *fuzz_tcp_malloc(size_t size);
void fuzz_tcp_free(void *p);
ssize_t fuzz_readv(int fd, const struct iovec *iov, int cnt);

#define readv fuzz_readv
#define malloc(n) fuzz_tcp_malloc(n)
#define free(p) fuzz_tcp_free(p)
#include "../../src/xprt/tcp/tcp.c"
#undef free
#undef malloc
#undef readv

#include "tcp_env.h"

#define FUZZ_MAX_RECVS 8

static const uint32_t fuzz_recv_len[4] = { 264, 0, 1024, 24 };

static struct ibtrs_loop *fuzz_loop;
static char *fuzz_stage;
static struct fuzz_tcp_env fuzz_env;

/**
 * fuzz_tcp_malloc() - malloc() of tcp.c: the staging buffer is kept
 * @size: bytes
 *
 * Return: the kept staging buffer for TCP_STAGING bytes, else malloc().
 */
void *fuzz_tcp_malloc(size_t size)
{
	if (size == TCP_STAGING && fuzz_stage)
		return fuzz_stage;
	return malloc(size);
}

/**
 * fuzz_tcp_free() - free() of tcp.c: the staging buffer is kept
 * @p: what to free
 */
void fuzz_tcp_free(void *p)
{
	if (p != fuzz_stage)
		free(p);
}

/**
 * struct fuzz_stream - what the next reads return
 * @p: next byte
 * @n: bytes left
 * @rnd: state of the split points
 * @max_read: most bytes one read returns
 * @read_since_eagain: a read returned data since the last EAGAIN
 * @recvs: receives posted so far (their buffers, by wr_id)
 * @recv_buf: the buffers, each its own heap block
 * @nr_recvs: entries of @recv_buf
 * @next_recv: wr_id of the next receive posted
 * @failed: err() ran
 */
struct fuzz_stream {
	const uint8_t *p;
	size_t n;
	uint32_t rnd;
	size_t max_read;
	bool read_since_eagain;
	void *recv_buf[FUZZ_MAX_RECVS];
	uint32_t recv_len[FUZZ_MAX_RECVS];
	unsigned int nr_recvs;
	unsigned int next_recv;
	bool failed;
};

static struct fuzz_stream fs;

/**
 * fuzz_rand() - next value of the split points
 *
 * Return: a pseudo-random 32-bit value.
 */
static uint32_t fuzz_rand(void)
{
	fs.rnd = fs.rnd * 1103515245u + 12345u;
	return fs.rnd >> 8;
}

/**
 * fuzz_readv() - readv() of the stream
 * @fd: unused (the connection has no socket)
 * @iov: where the bytes go
 * @cnt: entries of @iov
 *
 * Return: bytes read, 0 at the end of the stream, or -1 with errno EAGAIN
 * for "nothing more now".
 */
ssize_t fuzz_readv(int fd, const struct iovec *iov, int cnt)
{
	size_t want, done = 0;
	int i;

	(void)fd;
	if (!fs.n)
		return 0;
	if (fs.read_since_eagain && !(fuzz_rand() % 4)) {
		fs.read_since_eagain = false;
		errno = EAGAIN;
		return -1;
	}
	want = 1 + fuzz_rand() % fs.max_read;
	if (want > fs.n)
		want = fs.n;
	for (i = 0; i < cnt && done < want; i++) {
		size_t l = iov[i].iov_len < want - done ? iov[i].iov_len
							: want - done;

		memcpy(iov[i].iov_base, fs.p + done, l);
		done += l;
	}
	fs.p += done;
	fs.n -= done;
	fs.read_since_eagain = true;
	return (ssize_t)done;
}

/**
 * fuzz_post_recv() - post the next receive of the cycle
 * @c: the connection
 */
static void fuzz_post_recv(struct tcp_con *c)
{
	unsigned int i = fs.next_recv % FUZZ_MAX_RECVS;

	FUZZ_CHECK(!tcp_post_recv(&c->base, fs.recv_buf[i], fs.recv_len[i],
				  fs.next_recv));
	fs.next_recv++;
}

/**
 * fuzz_wc() - a completion of the connection: check it, post again
 * @con: the connection
 * @wc: the completion
 */
static void fuzz_wc(struct ibtrs_xprt_con *con, const struct ibtrs_wc *wc)
{
	unsigned int i = (unsigned int)(wc->wr_id % FUZZ_MAX_RECVS);

	FUZZ_CHECK(wc->wr_id < fs.next_recv);
	switch (wc->opcode) {
	case IBTRS_WC_RECV:
		FUZZ_CHECK(wc->byte_len <= fs.recv_len[i]);
		break;
	case IBTRS_WC_RECV_IMM:
		break;
	default:
		FUZZ_CHECK(!"send completion without a send");
	}
	fuzz_post_recv(to_tcp_con(con));
}

/**
 * fuzz_err() - the connection failed
 * @con: the connection
 * @err: why
 */
static void fuzz_err(struct ibtrs_xprt_con *con, int err)
{
	(void)con;
	FUZZ_CHECK(err < 0);
	FUZZ_CHECK(!fs.failed);
	fs.failed = true;
}

static const struct ibtrs_xprt_handler fuzz_handler = {
	.wc = fuzz_wc,
	.err = fuzz_err,
};

/**
 * LLVMFuzzerInitialize() - the loop, the regions, the buffers
 * @argc: unused
 * @argv: unused
 *
 * The loop's thread never sees the connection (it is not started); the
 * receive path only asks it for the time.
 *
 * Return: 0.
 */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	unsigned int i;

	(void)argc;
	(void)argv;
	FUZZ_CHECK(!ibtrs_loop_create(&fuzz_loop, "fuzz", NULL, NULL, 0));
	fuzz_stage = malloc(TCP_STAGING);
	FUZZ_CHECK(fuzz_stage);
	fuzz_tcp_env_init(&fuzz_env);
	for (i = 0; i < FUZZ_MAX_RECVS; i++) {
		fs.recv_len[i] = fuzz_recv_len[i % 4];
		fs.recv_buf[i] = fs.recv_len[i] ? malloc(fs.recv_len[i]) : NULL;
		FUZZ_CHECK(fs.recv_buf[i] || !fs.recv_len[i]);
	}
	return 0;
}

/**
 * LLVMFuzzerTestOneInput() - one connection receiving one stream
 * @data: header and stream, see above
 * @size: its length
 *
 * Return: 0.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ibtrs_xprt_con_attr attr = {
		.max_send_wr = 4,
		.max_recv_wr = FUZZ_MAX_RECVS,
		.max_send_sge = 2,
	};
	struct fuzz_in in = { data, size };
	unsigned int i, nr, events;
	struct tcp_con *c;
	uint8_t cfg;

	cfg = fuzz_u8(&in);
	fs.read_since_eagain = false;
	fs.nr_recvs = 0;
	fs.next_recv = 0;
	fs.failed = false;
	fs.rnd = fuzz_u8(&in);
	fs.max_read = 1 + (size_t)fuzz_u16(&in);
	fs.p = in.p;
	fs.n = in.n;
	nr = 1 + (cfg & 7u);

	memset(fuzz_stage, 0xbe, size < TCP_STAGING ? size : TCP_STAGING);
	for (i = 0; i < FUZZ_MAX_RECVS; i++)
		if (fs.recv_len[i])
			memset(fs.recv_buf[i], 0xbe, fs.recv_len[i]);
	c = tcp_con_alloc(-1, fuzz_env.pd, &attr);
	FUZZ_CHECK(c);
	c->base.ops = &ibtrs_xprt_tcp_ops;
	c->base.handler = &fuzz_handler;
	c->loop = fuzz_loop;
	for (i = 0; i < nr; i++)
		fuzz_post_recv(c);

	/* Every event reads at least a byte or ends with EAGAIN after one:
	 * at most two events per byte, and the close. */
	for (events = 0; !c->failed && events <= 2 * size + 2; events++)
		tcp_con_event(&c->src, EPOLLIN);
	FUZZ_CHECK(c->failed && fs.failed);

	tcp_destroy(&c->base);
	return 0;
}
