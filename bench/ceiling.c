// SPDX-License-Identifier: MIT
/*
 * ceiling.c - the fastest this machine moves ibtrs-shaped traffic over one
 * loopback TCP connection, with no library in the way.
 *
 * A client process and a server process, one thread each, one connection.
 * The client keeps --qd requests in flight and sends a new one from each
 * response, as "ibtrs bench --submit callback" does. A WRITE is a 24-byte
 * frame header, the payload and a 16-byte message; the server copies the
 * payload into the request's chunk and answers with a bare header. A READ is
 * a header and a message; the server answers with a header and the chunk,
 * and the client copies the payload into the request's buffer. Both sides
 * gather every queued frame into one sendmsg() and read up to 256 KiB at a
 * time, so this is the frame layout and batching of the ibtrs tcp backend
 * without its tags, paths, work requests, heartbeats or statistics. One
 * difference: the receiver here stages every payload and copies it out,
 * where the backend reads payloads of 1 KiB and more that a TCP_OP_HDRS
 * frame announced straight into place; a loop doing that too would move
 * somewhat more than this one.
 *
 * It prints one JSON line: requests per second and CPU time per request of
 * each side (getrusage). bench/compare shows ibtrs as a fraction of it.
 */
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HDR_LEN 24
#define MSG_LEN 16
#define STAGE (256u << 10)
#define MAX_IOV 1024

enum { OP_WRITE = 1, OP_READ = 2, OP_RSP = 3 };

struct hdr {
	uint32_t op;
	uint32_t id;
	uint32_t len; /* bytes after the header */
	uint32_t pad[3];
};
_Static_assert(sizeof(struct hdr) == HDR_LEN, "header size");

struct cfg {
	bool write;
	uint32_t bs;
	uint32_t qd;
	double time_s;
	bool busy;
};

/* One end of the connection: the iovecs to send, sq[sq_head, sq_tail), and
 * a staging buffer. */
struct end {
	int fd;
	struct iovec sq[MAX_IOV];
	unsigned int sq_head, sq_tail;
	char *stage;
	size_t st_head, st_tail;
	struct hdr *hdrs; /* one per request id, what the queue points to */
	char *data;	  /* qd x bs: the chunks, or the client's buffers */
	char msg[MSG_LEN];
};

static void die(const char *what)
{
	fprintf(stderr, "ibtrs-ceiling: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void end_init(struct end *e, int fd, const struct cfg *c)
{
	int one = 1;

	memset(e, 0, sizeof(*e));
	e->fd = fd;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	e->stage = malloc(STAGE);
	e->hdrs = calloc(c->qd, sizeof(*e->hdrs));
	e->data = calloc(c->qd, c->bs);
	if (!e->stage || !e->hdrs || !e->data)
		die("malloc");
}

static void end_free(struct end *e)
{
	free(e->stage);
	free(e->hdrs);
	free(e->data);
}

static void queue(struct end *e, void *base, size_t len)
{
	if (e->sq_tail == MAX_IOV && e->sq_head) {
		memmove(e->sq, e->sq + e->sq_head,
			(e->sq_tail - e->sq_head) * sizeof(*e->sq));
		e->sq_tail -= e->sq_head;
		e->sq_head = 0;
	}
	if (e->sq_tail == MAX_IOV) {
		fprintf(stderr, "ibtrs-ceiling: send queue full\n");
		exit(1);
	}
	e->sq[e->sq_tail++] =
		(struct iovec){ .iov_base = base, .iov_len = len };
}

/* One sendmsg of everything queued (as much as the socket takes); false
 * once the peer has closed. */
static bool flush(struct end *e)
{
	struct msghdr mh = { .msg_iov = e->sq + e->sq_head,
			     .msg_iovlen = e->sq_tail - e->sq_head };
	ssize_t n;

	if (!mh.msg_iovlen)
		return true;
	n = sendmsg(e->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return true;
		if (errno == EPIPE || errno == ECONNRESET)
			return false;
		die("sendmsg");
	}
	while (n > 0) {
		struct iovec *v = &e->sq[e->sq_head];

		if ((size_t)n < v->iov_len) {
			v->iov_base = (char *)v->iov_base + n;
			v->iov_len -= (size_t)n;
			break;
		}
		n -= (ssize_t)v->iov_len;
		e->sq_head++;
	}
	if (e->sq_head == e->sq_tail)
		e->sq_head = e->sq_tail = 0;
	return true;
}

/* Read what there is; false at end of stream. */
static bool fill(struct end *e)
{
	ssize_t n;

	if (e->st_head == e->st_tail) {
		e->st_head = e->st_tail = 0;
	} else if (e->st_tail == STAGE) {
		memmove(e->stage, e->stage + e->st_head,
			e->st_tail - e->st_head);
		e->st_tail -= e->st_head;
		e->st_head = 0;
	}
	n = recv(e->fd, e->stage + e->st_tail, STAGE - e->st_tail,
		 MSG_DONTWAIT);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return true;
		if (errno == ECONNRESET)
			return false;
		die("recv");
	}
	if (!n)
		return false;
	e->st_tail += (size_t)n;
	return true;
}

/* The next whole frame in the staging buffer, or NULL. */
static struct hdr *next_frame(struct end *e, const struct cfg *c,
			      char **payload)
{
	size_t avail = e->st_tail - e->st_head;
	struct hdr *h;

	if (avail < HDR_LEN)
		return NULL;
	h = (struct hdr *)(e->stage + e->st_head);
	if (h->id >= c->qd || h->len > c->bs + MSG_LEN) {
		fprintf(stderr, "ibtrs-ceiling: bad frame\n");
		exit(1);
	}
	if (avail < HDR_LEN + h->len)
		return NULL;
	*payload = e->stage + e->st_head + HDR_LEN;
	e->st_head += HDR_LEN + h->len;
	return h;
}

/*
 * Send what is queued, wait for the socket unless polling, read what
 * there is. False once the peer has closed.
 */
static bool exchange(struct end *e, const struct cfg *c)
{
	struct pollfd p = { .fd = e->fd, .events = POLLIN };

	if (!flush(e))
		return false;
	if (e->sq_head != e->sq_tail)
		p.events |= POLLOUT;
	if (!c->busy && poll(&p, 1, 1000) < 0 && errno != EINTR)
		die("poll");
	return fill(e);
}

static void client_send(struct end *e, const struct cfg *c, uint32_t id)
{
	struct hdr *h = &e->hdrs[id];

	h->op = c->write ? OP_WRITE : OP_READ;
	h->id = id;
	h->len = (c->write ? c->bs : 0) + MSG_LEN;
	queue(e, h, HDR_LEN);
	if (c->write)
		queue(e, e->data + (size_t)id * c->bs, c->bs);
	queue(e, e->msg, MSG_LEN);
}

static void server(int fd, const struct cfg *c, int report)
{
	struct end e;
	double cpu0 = cpu_s();
	uint64_t ops = 0;
	struct hdr *h;
	char *p;

	end_init(&e, fd, c);
	while (exchange(&e, c)) {
		while ((h = next_frame(&e, c, &p))) {
			struct hdr *r = &e.hdrs[h->id];
			char *chunk = e.data + (size_t)h->id * c->bs;

			r->op = OP_RSP;
			r->id = h->id;
			r->len = h->op == OP_READ ? c->bs : 0;
			if (h->op == OP_WRITE)
				memcpy(chunk, p, c->bs);
			queue(&e, r, HDR_LEN);
			if (h->op == OP_READ)
				queue(&e, chunk, c->bs);
			ops++;
		}
	}
	end_free(&e);
	dprintf(report, "%.6f %llu\n", cpu_s() - cpu0, (unsigned long long)ops);
	exit(0);
}

static uint64_t client(int fd, const struct cfg *c, double *secs)
{
	struct end e;
	double t0, end_t;
	uint64_t done = 0;
	uint32_t i;
	struct hdr *h;
	char *p;

	end_init(&e, fd, c);
	t0 = now_s();
	end_t = t0 + c->time_s;
	for (i = 0; i < c->qd; i++)
		client_send(&e, c, i);
	for (;;) {
		if (!exchange(&e, c)) {
			fprintf(stderr, "ibtrs-ceiling: server closed\n");
			exit(1);
		}
		while ((h = next_frame(&e, c, &p))) {
			if (!c->write)
				memcpy(e.data + (size_t)h->id * c->bs, p,
				       c->bs);
			done++;
			client_send(&e, c, h->id);
		}
		/* The clock is read once per batch, not per request. */
		if (now_s() >= end_t)
			break;
	}
	*secs = now_s() - t0;
	end_free(&e);
	return done;
}

static int listen_lo(uint16_t *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(fd, 1) || getsockname(fd, (struct sockaddr *)&a, &alen))
		die("listen");
	*port = ntohs(a.sin_port);
	return fd;
}

static int connect_lo(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
		die("connect");
	return fd;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ibtrs-ceiling [--rw write|read] [--bs BYTES] [--qd N] "
		"[--time S] [--busy-poll]\n"
		"One loopback TCP connection carrying ibtrs-shaped requests "
		"with no library:\nprints {\"iops\", \"cpu\"} as one JSON "
		"line.\n");
}

static int parse(int argc, char **argv, struct cfg *c)
{
	static const struct option opts[] = {
		{ "rw", required_argument, NULL, 'r' },
		{ "bs", required_argument, NULL, 'b' },
		{ "qd", required_argument, NULL, 'q' },
		{ "time", required_argument, NULL, 't' },
		{ "busy-poll", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	long v;
	int o;

	*c = (struct cfg){ .write = true, .bs = 4096, .qd = 64, .time_s = 5 };
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case 'r':
			if (strcmp(optarg, "write") && strcmp(optarg, "read"))
				goto bad;
			c->write = !strcmp(optarg, "write");
			break;
		case 'b':
		case 'q':
			v = strtol(optarg, &end, 10);
			if (*end || v < 1 ||
			    v > (o == 'b' ? STAGE / 2 : MAX_IOV / 3))
				goto bad;
			if (o == 'b')
				c->bs = (uint32_t)v;
			else
				c->qd = (uint32_t)v;
			break;
		case 't':
			c->time_s = strtod(optarg, &end);
			if (*end || !(c->time_s > 0 && c->time_s <= 3600))
				goto bad;
			break;
		case 'p':
			c->busy = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ibtrs-ceiling: unexpected argument %s\n",
			argv[optind]);
		usage(stderr);
		return -1;
	}
	return 0;
bad:
	fprintf(stderr,
		"ibtrs-ceiling: bad value %s (--bs 1..%u, --qd 1..%u, "
		"--time 0..3600 s, --rw write|read)\n",
		optarg, STAGE / 2, MAX_IOV / 3);
	return -1;
}

int main(int argc, char **argv)
{
	struct cfg c;
	int lfd, cfd, pfd[2], status;
	uint16_t port;
	double secs, cli_cpu, srv_cpu = 0;
	unsigned long long srv_ops = 0;
	uint64_t ops;
	pid_t pid;
	FILE *rep;

	if (parse(argc, argv, &c))
		return 2;
	signal(SIGPIPE, SIG_IGN);
	lfd = listen_lo(&port);
	if (pipe(pfd))
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		int fd = accept(lfd, NULL, NULL);

		if (fd < 0)
			die("accept");
		close(lfd);
		close(pfd[0]);
		server(fd, &c, pfd[1]);
	}
	close(lfd);
	close(pfd[1]);
	cfd = connect_lo(port);
	cli_cpu = cpu_s();
	ops = client(cfd, &c, &secs);
	cli_cpu = cpu_s() - cli_cpu;
	close(cfd);
	rep = fdopen(pfd[0], "r");
	if (!rep || fscanf(rep, "%lf %llu", &srv_cpu, &srv_ops) != 2)
		fprintf(stderr, "ibtrs-ceiling: no report from the server\n");
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		fprintf(stderr, "ibtrs-ceiling: server failed\n");
		return 1;
	}
	printf("{\"rw\": \"%s\", \"bs\": %u, \"qd\": %u, \"busy_poll\": %s, "
	       "\"seconds\": %.3f, \"ops\": %llu, \"iops\": %.0f, "
	       "\"cpu\": {\"client_us_per_req\": %.3f, "
	       "\"server_us_per_req\": %.3f}}\n",
	       c.write ? "write" : "read", c.bs, c.qd,
	       c.busy ? "true" : "false", secs, (unsigned long long)ops,
	       (double)ops / secs, ops ? cli_cpu / (double)ops * 1e6 : 0.0,
	       srv_ops ? srv_cpu / (double)srv_ops * 1e6 : 0.0);
	return 0;
}
