// SPDX-License-Identifier: MIT
/*
 * sessions.c - one server holds many sessions: SESS_N (256) client
 * sessions of a small queue depth on one server process, each writing its
 * own pattern and reading it back, while the server's resident memory
 * stays under what ibtrs(7) documents: IDLE_SESS_RSS per session plus the
 * pages its requests wrote, however large its chunk pool. And the memory
 * limit: with room for two sessions a third is refused, and gets in once
 * one is gone.
 *
 * The server runs in a child process (its RSS is then its own), forked
 * before any thread; the clients are this process's. IBTRS_SESSIONS_N
 * overrides the session count, IBTRS_SESSIONS_QD the queue depth and
 * IBTRS_SESSIONS_IO=0 skips the requests (bench/sessions.sh holds 1000
 * idle sessions that way); the figures are printed. Under a sanitizer,
 * whose shadow memory counts in the RSS, the bound is not checked.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "test.h"

#define SESS_N 256
#define SESS_QD 16 /* 16 chunks of 132 KiB: 2.1 MiB of pool a session */
/* ibtrs(7): the server's resident memory of an idle session. */
#define IDLE_SESS_RSS (256u << 10)
#define IO_LEN 4096
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif
/* Pages one 4 KiB request writes into its chunk (data, then the user
 * message and trailer after it) and into the test server's target. */
#define IO_PAGES 3
/* The memory limit part: two sessions of LIMIT_QD chunks fit, three not
 * (a session counts its pool, 64 KiB and 384 KiB plus 1 KiB a chunk a
 * connection, 640 KiB more with TLS on; the client opens two connections
 * a path). */
#define LIMIT_QD 64
#define LIMIT_SESS_MEM \
	(64ull * (132 << 10) + (64 << 10) + 2 * ((384 << 10) + 64 * 1024))
#define LIMIT_TLS_MEM (2ull * (640 << 10))

/* What a session counts: with TLS on (the suite's TLS pass sets it in the
 * environment for the server too), its connections count more. */
static uint64_t limit_sess_mem(void)
{
	const char *tls = getenv("IBTRS_TLS");
	bool on = tls && (!strcmp(tls, "on") || !strcmp(tls, "require"));

	return LIMIT_SESS_MEM + (on ? LIMIT_TLS_MEM : 0);
}

static long kb_of(pid_t pid, const char *field)
{
	char path[64], line[256];
	size_t n = strlen(field);
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	CHECK(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && line[n] == ':')
			kb = atol(line + n + 1);
	fclose(f);
	CHECK(kb >= 0);
	return kb;
}

/* The child: a test server on 127.0.0.1, its port up @fd, until killed. */
static void run_server(int fd, uint32_t qd, uint64_t max_memory)
{
	static struct h_srv srv;
	struct sockaddr_storage ss;
	struct ibtrs_addr addr = { .src = NULL, .dst = &ss };
	struct ibtrs_srv_opts o;

	pthread_mutex_init(&srv.lock, NULL);
	t_cond_init(&srv.cond);
	h_cur_srv = &srv;
	CHECK_EQ(ibtrs_addr_to_sockaddr("ip:127.0.0.1", 12, 0, &addr), 0);
	ibtrs_srv_opts_init(&o, sizeof(o));
	o.port = 0;
	o.listen_addr = (const struct sockaddr *)&ss;
	o.queue_depth = qd;
	o.max_memory = max_memory;
	o.max_sessions = 4096; /* beyond the default: IBTRS_SESSIONS_N */
	/* Every session comes from 127.0.0.1: one client, as the limits
	 * count them, beyond its default share. */
	o.max_sessions_per_client = 4096;
	o.max_cons_per_client = 4 * 4096;
	o.rdma_ev = h_srv_rdma_ev;
	o.link_ev = h_srv_link_ev;
	srv.ctx = ibtrs_srv_open_opts(&o);
	CHECK(srv.ctx);
	srv.port = ibtrs_srv_get_port(srv.ctx);
	CHECK_EQ(write(fd, &srv.port, sizeof(srv.port)),
		 (ssize_t)sizeof(srv.port));
	close(fd);
	for (;;)
		pause();
}

static pid_t start_server(uint16_t *port, uint32_t qd, uint64_t max_memory)
{
	int p[2];
	pid_t pid;

	CHECK_EQ(pipe(p), 0);
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		close(p[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		run_server(p[1], qd, max_memory);
		_exit(1);
	}
	close(p[1]);
	CHECK_EQ(read(p[0], port, sizeof(*port)), (ssize_t)sizeof(*port));
	close(p[0]);
	return pid;
}

static void stop_server(pid_t pid)
{
	int st;

	CHECK_EQ(kill(pid, SIGKILL), 0);
	CHECK_EQ(waitpid(pid, &st, 0), pid);
}

/* One verified WRITE and READ back of session @i's pattern. */
static void write_read(struct ibtrs_clt *sess, unsigned int i)
{
	static char wbuf[IO_LEN], rbuf[IO_LEN];
	struct ibtrs_tag *tag;

	tag = ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_WAIT);
	CHECK(tag);
	h_fill(wbuf, sizeof(wbuf), 1000 + i);
	memset(rbuf, 0, sizeof(rbuf));
	CHECK_EQ(h_io(sess, tag, IBTRS_WRITE, wbuf, sizeof(wbuf), 0, 1), 0);
	CHECK_EQ(h_io(sess, tag, IBTRS_READ, rbuf, sizeof(rbuf), 0, 2), 0);
	CHECK(!memcmp(wbuf, rbuf, sizeof(rbuf)));
	ibtrs_clt_put_tag(sess, tag);
}

/*
 * One session of one path. The connect timeout is long: a loaded host
 * (hundreds of connections being set up) may take seconds to accept.
 */
static struct ibtrs_clt *open_one(const char *name, uint16_t port)
{
	struct sockaddr_storage src, dst;
	struct ibtrs_addr path = { .src = &src, .dst = &dst };
	struct ibtrs_clt_opts o;

	CHECK_EQ(ibtrs_addr_to_sockaddr("ip:127.0.0.1", 12, port, &path), 0);
	ibtrs_clt_opts_init(&o, sizeof(o));
	o.sessname = name;
	o.paths = &path;
	o.path_cnt = 1;
	o.port = port;
	o.connect_timeout_ms = 30000;
	o.max_reconnect_attempts = 0;
	return ibtrs_clt_open_opts(&o);
}

static void test_many(unsigned int n, unsigned int qd, bool io)
{
	struct ibtrs_clt **sess = calloc(n, sizeof(*sess));
	const char *backend = getenv("IBTRS_BACKEND");
	long base_kb, kb, bound_kb;
	char name[32];
	unsigned int i;
	uint16_t port;
	pid_t pid;

	CHECK(sess);
	pid = start_server(&port, qd, 0);
	base_kb = kb_of(pid, "VmRSS");
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "many-%u", i);
		sess[i] = open_one(name, port);
		if (!sess[i]) {
			fprintf(stderr, "session %u: %s\n", i, strerror(errno));
			CHECK(0);
		}
	}
	if (io)
		for (i = 0; i < n; i++)
			write_read(sess[i], i);
	/* Every session again: its data is still its own. */
	if (io)
		for (i = 0; i < n; i += 17)
			write_read(sess[i], i);
	kb = kb_of(pid, "VmRSS");
	bound_kb = (long)n * (IDLE_SESS_RSS / 1024 + (io ? IO_PAGES * 4 : 0));
	/* ibtrs(7): the libfabric providers make what is registered
	 * resident (measured with the tcp provider): the whole pool. */
	if (backend && !strcmp(backend, "ofi"))
		bound_kb += (long)n * qd * 132;
	printf("%u sessions of %u chunks%s: server RSS %ld KiB (%ld before), "
	       "%ld KiB a session; bound %ld KiB; pools %llu KiB\n",
	       n, qd, io ? ", one 4 KiB write and read each" : ", idle", kb,
	       base_kb, (kb - base_kb) / (long)n, bound_kb,
	       (unsigned long long)n * qd * 132);
	/* A sanitizer's shadow memory is resident too: not the server's. */
	if (!SANITIZED)
		CHECK(kb - base_kb <= bound_kb);
	for (i = 0; i < n; i++)
		ibtrs_clt_close(sess[i]);
	stop_server(pid);
	free(sess);
}

static void test_limit(void)
{
	struct ibtrs_clt *a, *b, *c;
	uint16_t port;
	pid_t pid;
	int i;

	pid = start_server(&port, LIMIT_QD, limit_sess_mem() * 5 / 2);
	a = open_one("limit-a", port);
	b = open_one("limit-b", port);
	CHECK(a && b);
	write_read(a, 1);
	write_read(b, 2);
	c = open_one("limit-c", port);
	CHECK(!c);
	/* The room of a closed session comes back (once it is freed). */
	ibtrs_clt_close(b);
	for (i = 0; i < 500 && !c; i++) {
		c = open_one("limit-c", port);
		if (!c)
			h_sleep_ms(10);
	}
	CHECK(c);
	write_read(c, 3);
	ibtrs_clt_close(c);
	ibtrs_clt_close(a);
	stop_server(pid);
}

int main(void)
{
	const char *s = getenv("IBTRS_SESSIONS_N");
	const char *io = getenv("IBTRS_SESSIONS_IO");
	const char *qd = getenv("IBTRS_SESSIONS_QD");
	const char *backend = getenv("IBTRS_BACKEND");
	unsigned int n = s ? (unsigned int)atoi(s) : SESS_N;
	struct rlimit rl;

	t_watchdog(280);
	setenv("IBTRS_CONTROL", "0", 1);
	/* A client session holds a few descriptors, the server one a few. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	CHECK(n > 0 && n <= 4096);
	/*
	 * The libfabric backend shares one domain a provider in a process: with
	 * a domain a session, tcp lost the 254th (heartbeat timeouts on the
	 * server, then ENXIO: no such session). The net provider still drops
	 * sessions by heartbeat timeout from about 16 on a loaded host: 16.
	 */
	if (!s && backend && !strcmp(backend, "ofi")) {
		const char *prov = getenv("IBTRS_OFI_PROVIDER");

		if (prov && !strcmp(prov, "net"))
			n = 16;
	}
	/* The loop backend connects within one process only. */
	if (backend && !strcmp(backend, "loop")) {
		printf("SKIP: the server runs in another process\n");
		return T_SKIP;
	}
	CHECK(!qd || (atoi(qd) > 0 && atoi(qd) <= IBTRS_MAX_QUEUE_DEPTH));
	test_limit();
	test_many(n, qd ? (unsigned int)atoi(qd) : SESS_QD,
		  !io || strcmp(io, "0"));
	return 0;
}
