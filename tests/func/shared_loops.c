// SPDX-License-Identifier: MIT
/*
 * shared_loops.c - many sessions of one process on a few shared loops
 * (ibtrs_clt_opts.loop_threads): SESS_N (32) sessions on LOOPS (2) shared
 * loop threads, one more on a loop of its own beside them. Each writes its
 * own pattern and reads it back, from several threads at once; the
 * process's threads stay the two shared loops, the own one and a few,
 * not one or two a session (its connector starts only with a reconnect).
 * An open on shared loops from a callback on one of them fails with
 * EDEADLK. Then the sessions close in random order, each close leaving the
 * others working, and the shared loops end with their last session.
 *
 * The server runs in a child process, forked before any thread, so that
 * its threads are not counted.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "test.h"

#define SESS_N 32
#define LOOPS 2
#define IO_LEN 4096
#define IO_THREADS 4
#define ROUNDS 4
/* Threads beyond the loops: the main one and what a backend may run. */
#define OTHER_THREADS 4

static void run_server(int fd)
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
	o.queue_depth = 16;
	o.max_sessions_per_client = 4 * SESS_N;
	o.max_cons_per_client = 16 * SESS_N;
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

static pid_t start_server(uint16_t *port)
{
	int p[2];
	pid_t pid;

	CHECK_EQ(pipe(p), 0);
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		close(p[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		run_server(p[1]);
		_exit(1);
	}
	close(p[1]);
	CHECK_EQ(read(p[0], port, sizeof(*port)), (ssize_t)sizeof(*port));
	close(p[0]);
	return pid;
}

static struct ibtrs_clt *open_one(const char *name, uint16_t port,
				  unsigned int loops)
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
	o.loop_threads = loops;
	return ibtrs_clt_open_opts(&o);
}

/* A verified WRITE and READ back of session @i's pattern of round @r. */
static void write_read(struct ibtrs_clt *sess, unsigned int i, unsigned int r)
{
	char wbuf[IO_LEN], rbuf[IO_LEN];
	struct ibtrs_tag *tag;

	tag = ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_WAIT);
	CHECK(tag);
	h_fill(wbuf, sizeof(wbuf), 1000 * r + i);
	memset(rbuf, 0, sizeof(rbuf));
	CHECK_EQ(h_io(sess, tag, IBTRS_WRITE, wbuf, sizeof(wbuf),
		      (uint64_t)r * IO_LEN, 1),
		 0);
	CHECK_EQ(h_io(sess, tag, IBTRS_READ, rbuf, sizeof(rbuf),
		      (uint64_t)r * IO_LEN, 2),
		 0);
	CHECK(!memcmp(wbuf, rbuf, sizeof(rbuf)));
	ibtrs_clt_put_tag(sess, tag);
}

static struct ibtrs_clt *sess[SESS_N + 1];

/*
 * An open on shared loops from a confirmation, which runs on a shared
 * loop: it could be placed on that very thread and wait for its own
 * handshake there, so it must fail at once with EDEADLK.
 */
struct nested {
	struct h_req r;
	uint16_t port;
	struct ibtrs_clt *got;
	int err;
};

static void nested_conf(void *priv, int err)
{
	struct nested *n = priv;

	n->got = open_one("nested", n->port, LOOPS);
	n->err = errno;
	h_conf(&n->r, err);
}

static void nested_open(struct ibtrs_clt *s, uint16_t port)
{
	char buf[IO_LEN];
	struct iovec sg = { .iov_base = buf, .iov_len = sizeof(buf) };
	unsigned char usr[sizeof(struct h_usr_hdr) + 16];
	struct iovec v = { .iov_base = usr, .iov_len = sizeof(usr) };
	struct ibtrs_tag *tag;
	struct h_wait w;
	struct nested n = { .r.w = &w, .port = port };

	h_wait_init(&w);
	tag = ibtrs_clt_get_tag(s, IBTRS_IO_CON, IBTRS_TAG_WAIT);
	CHECK(tag);
	h_usr_build(usr, sizeof(usr), 0, 3, 0);
	CHECK_EQ(ibtrs_clt_request(IBTRS_READ, nested_conf, s, tag, &n, &v, 1,
				   sizeof(buf), &sg, 1),
		 0);
	CHECK(h_wait_calls(&w, 1, H_REQ_TIMEOUT_S * 1000));
	ibtrs_clt_put_tag(s, tag);
	h_wait_destroy(&w);
	printf("an open from a confirmation on a shared loop: %s\n",
	       n.got ? "opened" : strerror(n.err));
	CHECK(!n.got);
	CHECK_EQ(n.err, EDEADLK);
}

/* Sessions k, k + IO_THREADS, ...: every thread on both loops. */
static void *io_thread(void *arg)
{
	unsigned int k = (unsigned int)(uintptr_t)arg, i, r;

	for (r = 0; r < ROUNDS; r++)
		for (i = k; i <= SESS_N; i += IO_THREADS)
			write_read(sess[i], i, r);
	return NULL;
}

int main(void)
{
	const char *backend = getenv("IBTRS_BACKEND");
	unsigned int order[SESS_N + 1], i, k, n0, n;
	unsigned long long seed = (unsigned long long)getpid();
	struct ibtrs_clt_opts bad;
	pthread_t th[IO_THREADS];
	char name[32];
	uint16_t port;
	pid_t pid;
	int st;

	t_watchdog(240);
	setenv("IBTRS_CONTROL", "0", 1);
	if (backend && !strcmp(backend, "loop")) {
		printf("SKIP: the server runs in another process\n");
		return T_SKIP;
	}
	ibtrs_clt_opts_init(&bad, sizeof(bad));
	bad.loop_threads = IBTRS_MAX_LOOP_THREADS + 1;
	bad.sessname = "bad";
	CHECK(!ibtrs_clt_open_opts(&bad) && errno == EINVAL);

	pid = start_server(&port);
	n0 = t_threads(NULL, false);
	for (i = 0; i < SESS_N; i++) {
		snprintf(name, sizeof(name), "shared-%u", i);
		sess[i] = open_one(name, port, LOOPS);
		if (!sess[i]) {
			fprintf(stderr, "session %u: %s\n", i, strerror(errno));
			CHECK(0);
		}
	}
	/* One of its own beside them: today's default. */
	sess[SESS_N] = open_one("own", port, 0);
	CHECK(sess[SESS_N]);

	nested_open(sess[0], port);

	for (k = 0; k < IO_THREADS; k++)
		CHECK_EQ(pthread_create(&th[k], NULL, io_thread,
					(void *)(uintptr_t)k),
			 0);
	for (k = 0; k < IO_THREADS; k++)
		CHECK_EQ(pthread_join(th[k], NULL), 0);
	n = t_threads(NULL, false);
	printf("%u sessions on %u shared loops and 1 of its own: %u threads "
	       "(%u before), %u shared loop threads\n",
	       SESS_N, LOOPS, n, n0, t_threads("ibtrs-clt/", false));
	CHECK_EQ(t_threads("ibtrs-clt/", false), LOOPS);
	CHECK_EQ(t_threads("ibtrs-clt", true), 1);
	CHECK(n <= n0 + LOOPS + 1 + OTHER_THREADS);

	/* Random order; the rest still works after every close. */
	t_shuffle(order, SESS_N + 1, &seed);
	for (i = 0; i <= SESS_N; i++) {
		ibtrs_clt_close(sess[order[i]]);
		sess[order[i]] = NULL;
		if (i == SESS_N)
			break;
		k = order[i + 1 + (unsigned int)(t_rand(&seed) % (SESS_N - i))];
		write_read(sess[k], k, ROUNDS);
		if (order[i] == SESS_N)
			CHECK(t_threads_become("ibtrs-clt", true, 0));
	}
	CHECK(t_threads_become("ibtrs-clt/", false, 0));
	CHECK(t_threads_become("ibtrs-clt", true, 0));
	CHECK_EQ(kill(pid, SIGKILL), 0);
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	return 0;
}
