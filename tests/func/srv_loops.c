// SPDX-License-Identifier: MIT
/*
 * srv_loops.c - a server context on several loop threads
 * (ibtrs_srv_opts.loop_threads): LOOPS (3) loops "ibtrs-srv/<i>", SESS_N
 * (12) sessions of two paths each, and one of a single path. Every
 * request of a session must run on one loop thread (the rdma_ev thread's
 * name is recorded per session), and the sessions must be spread over
 * all three. A path of a session is reconnected while its other path
 * holds the session, which hands the new connections over to the
 * session's loop; with the other path down its requests still run there,
 * on the reconnected path alone. The single-path session reconnects its
 * only path: the server keeps the session in its grace period, and the
 * reconnect joins it on its loop again. Then the sessions close in random
 * order, the others still working after each close, and the server ends
 * with its loop threads. All of it twice: in plaintext, then (tcp, with
 * GnuTLS) over TLS with pre-shared keys, whose connections carry their
 * record layer over to the session's loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "harness.h"
#include "test.h"

#define LOOPS 3
#define SESS_N 12
#define IO_LEN 4096
#define ROUNDS 3
#define NAME_LEN 32
#define KEY "00112233445566778899aabbccddeeff0f1e2d3c4b5a69788796a5b4c3d2e1f0"

static struct h_srv srv;
static struct ibtrs_clt *sess[SESS_N + 1];

/* Per session, by the index in its name: the loop its requests ran on. */
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static char seen[SESS_N + 1][NAME_LEN];
static unsigned int seen_bad; /* a request of a session on another loop */

static int loops_rdma_ev(struct ibtrs_srv *s, void *priv,
			 struct ibtrs_srv_op *id, int dir, void *data,
			 size_t datalen, const void *usr, size_t usrlen)
{
	struct h_sess *hs = priv;
	char comm[NAME_LEN] = "";
	unsigned int i;

	prctl(PR_GET_NAME, comm);
	if (hs && sscanf(hs->name, "loops-%u", &i) == 1 && i <= SESS_N) {
		pthread_mutex_lock(&seen_lock);
		if (!seen[i][0])
			snprintf(seen[i], sizeof(seen[i]), "%s", comm);
		else if (strcmp(seen[i], comm))
			seen_bad++;
		pthread_mutex_unlock(&seen_lock);
	}
	return h_srv_rdma_ev(s, priv, id, dir, data, datalen, usr, usrlen);
}

/* The key files of the TLS pass: "" in plaintext. */
static char key_dir[64], key_srv[128], key_clt[128];

static void write_key(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	CHECK(fd >= 0);
	CHECK_EQ(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void make_keys(void)
{
	snprintf(key_dir, sizeof(key_dir), "/tmp/ibtrs-srvloops-XXXXXX");
	CHECK(mkdtemp(key_dir));
	snprintf(key_srv, sizeof(key_srv), "%s/server.psk", key_dir);
	snprintf(key_clt, sizeof(key_clt), "%s/client.psk", key_dir);
	write_key(key_srv, "alice:" KEY "\n");
	write_key(key_clt, "alice:" KEY "\n");
}

static void remove_keys(void)
{
	unlink(key_srv);
	unlink(key_clt);
	rmdir(key_dir);
	key_srv[0] = key_clt[0] = '\0';
}

static void start_server(unsigned int loops)
{
	struct ibtrs_srv_opts o;

	memset(&srv, 0, sizeof(srv));
	pthread_mutex_init(&srv.lock, NULL);
	t_cond_init(&srv.cond);
	h_cur_srv = &srv;
	ibtrs_srv_opts_init(&o, sizeof(o));
	o.port = 0; /* every address: the paths go to 127.0.0.1 and .2 */
	o.queue_depth = 16;
	o.loop_threads = loops;
	o.rdma_ev = loops_rdma_ev;
	o.link_ev = h_srv_link_ev;
	if (key_srv[0]) {
		o.backend = "tcp";
		o.tls = IBTRS_TLS_REQUIRE;
		o.tls_psk_file = key_srv;
	}
	srv.ctx = ibtrs_srv_open_opts(&o);
	CHECK(srv.ctx);
	srv.port = ibtrs_srv_get_port(srv.ctx);
	CHECK(srv.port);
}

/* Session @name over @n paths (127.0.0.1, .2), with TLS in that pass. */
static struct ibtrs_clt *open_sess(const char *name, unsigned int n)
{
	struct sockaddr_storage src[2], dst[2];
	struct ibtrs_addr paths[2];
	struct ibtrs_clt_opts o;
	struct ibtrs_clt *s;
	char a[32];
	unsigned int i;

	for (i = 0; i < n; i++) {
		paths[i].src = &src[i];
		paths[i].dst = &dst[i];
		snprintf(a, sizeof(a), "ip:127.0.0.%u", i + 1);
		CHECK_EQ(ibtrs_addr_to_sockaddr(a, strlen(a), srv.port,
						&paths[i]),
			 0);
	}
	ibtrs_clt_opts_init(&o, sizeof(o));
	o.sessname = name;
	o.paths = paths;
	o.path_cnt = n;
	o.port = srv.port;
	o.connect_timeout_ms = 30000;
	if (key_clt[0]) {
		o.backend = "tcp";
		o.tls = IBTRS_TLS_REQUIRE;
		o.tls_psk_file = key_clt;
	}
	s = ibtrs_clt_open_opts(&o);
	if (!s) {
		fprintf(stderr, "cannot open session %s: %s\n", name,
			strerror(errno));
		exit(1);
	}
	return s;
}

/* A verified WRITE and READ back of session @i's pattern of round @r. */
static void write_read(unsigned int i, unsigned int r)
{
	char wbuf[IO_LEN], rbuf[IO_LEN];
	struct ibtrs_tag *tag;

	tag = ibtrs_clt_get_tag(sess[i], IBTRS_IO_CON, IBTRS_TAG_WAIT);
	CHECK(tag);
	h_fill(wbuf, sizeof(wbuf), 1000 * r + i);
	memset(rbuf, 0, sizeof(rbuf));
	CHECK_EQ(h_io(sess[i], tag, IBTRS_WRITE, wbuf, sizeof(wbuf),
		      (uint64_t)r * IO_LEN, 1),
		 0);
	CHECK_EQ(h_io(sess[i], tag, IBTRS_READ, rbuf, sizeof(rbuf),
		      (uint64_t)r * IO_LEN, 2),
		 0);
	CHECK(!memcmp(wbuf, rbuf, sizeof(rbuf)));
	ibtrs_clt_put_tag(sess[i], tag);
}

/* The loop session @i's requests ran on, "" if none yet. */
static void seen_of(unsigned int i, char *out)
{
	pthread_mutex_lock(&seen_lock);
	memcpy(out, seen[i], NAME_LEN);
	pthread_mutex_unlock(&seen_lock);
}

static void scenario(void)
{
	unsigned int order[SESS_N + 1], per_loop[LOOPS] = { 0 };
	unsigned long long seed = (unsigned long long)getpid();
	char name[NAME_LEN], before[NAME_LEN], after[NAME_LEN];
	unsigned int i, k, r;

	memset(seen, 0, sizeof(seen));
	seen_bad = 0;
	start_server(LOOPS);
	/* Each thread names itself when it starts. */
	CHECK(t_threads_become("ibtrs-srv/", false, LOOPS));
	CHECK_EQ(t_threads("ibtrs-srv", true), 0);

	for (i = 0; i <= SESS_N; i++) {
		snprintf(name, sizeof(name), "loops-%u", i);
		/* The last one has a single path. */
		sess[i] = open_sess(name, i < SESS_N ? 2 : 1);
	}
	for (r = 0; r < ROUNDS; r++)
		for (i = 0; i <= SESS_N; i++)
			write_read(i, r);

	/* Each session on one loop, and every loop carries sessions. */
	for (i = 0; i <= SESS_N; i++) {
		seen_of(i, name);
		CHECK(!strncmp(name, "ibtrs-srv/", 10));
		k = (unsigned int)atoi(name + 10);
		CHECK(k < LOOPS);
		per_loop[k]++;
	}
	printf("%s: %u sessions on %u server loops:",
	       key_srv[0] ? "tls" : "plaintext", SESS_N + 1, LOOPS);
	for (k = 0; k < LOOPS; k++) {
		printf(" %u", per_loop[k]);
		CHECK(per_loop[k] > 0);
	}
	printf("\n");
	CHECK_EQ(seen_bad, 0);

	/*
	 * Path 1 of session 5 reconnected while path 0 holds the session:
	 * its new connections join on the session's loop. Then path 0 down:
	 * the reconnected path carries the requests alone.
	 */
	seen_of(5, before);
	CHECK_EQ(ibtrs_clt_reconnect_path(sess[5], 1), 0);
	CHECK_EQ(ibtrs_clt_disconnect_path(sess[5], 0), 0);
	for (r = 0; r < ROUNDS; r++)
		write_read(5, ROUNDS + r);
	CHECK_EQ(ibtrs_clt_reconnect_path(sess[5], 0), 0);
	write_read(5, 2 * ROUNDS);
	seen_of(5, after);
	printf("session 5 after its reconnects: %s (before: %s)\n", after,
	       before);
	CHECK(!strcmp(before, after));
	CHECK_EQ(h_srv_count_ev(&srv, IBTRS_SRV_LINK_EV_CONNECTED, "loops-5"),
		 1);
	CHECK_EQ(seen_bad, 0);

	/*
	 * The single path of the last session reconnected: the session
	 * waits in its grace period, and the path joins it again there, the
	 * same session (one CONNECTED) on the same loop.
	 */
	snprintf(name, sizeof(name), "loops-%u", SESS_N);
	seen_of(SESS_N, before);
	CHECK_EQ(ibtrs_clt_reconnect_path(sess[SESS_N], 0), 0);
	write_read(SESS_N, 2 * ROUNDS);
	seen_of(SESS_N, after);
	CHECK(!strcmp(before, after));
	CHECK_EQ(h_srv_count_ev(&srv, IBTRS_SRV_LINK_EV_CONNECTED, name), 1);
	CHECK_EQ(seen_bad, 0);

	/* Random order; the rest still works after every close. */
	t_shuffle(order, SESS_N + 1, &seed);
	for (i = 0; i <= SESS_N; i++) {
		ibtrs_clt_close(sess[order[i]]);
		sess[order[i]] = NULL;
		if (i == SESS_N)
			break;
		k = order[i + 1 + (unsigned int)(t_rand(&seed) % (SESS_N - i))];
		write_read(k, 2 * ROUNDS + 1);
	}
	CHECK_EQ(seen_bad, 0);
	h_srv_stop(&srv);
	CHECK(t_threads_become("ibtrs-srv/", false, 0));
	CHECK_EQ(atomic_load(&srv.nr_connected),
		 atomic_load(&srv.nr_disconnected));
	h_cur_srv = NULL;
}

#ifdef IBTRS_HAVE_TLS
static const bool have_tls = true;
#else
static const bool have_tls = false;
#endif

int main(void)
{
	const char *backend = getenv("IBTRS_BACKEND");
	struct ibtrs_srv_opts bad;

	t_watchdog(240);
	setenv("IBTRS_CONTROL", "0", 1);
	ibtrs_srv_opts_init(&bad, sizeof(bad));
	bad.rdma_ev = loops_rdma_ev;
	bad.port = 0;
	bad.loop_threads = IBTRS_SRV_MAX_LOOPS + 1;
	CHECK(!ibtrs_srv_open_opts(&bad) && errno == EINVAL);

	scenario();
	/* TLS is the tcp backend's. */
	if (!have_tls || (backend && *backend && strcmp(backend, "tcp"))) {
		printf("TLS pass skipped (%s)\n",
		       have_tls ? "not the tcp backend" : "no GnuTLS");
		return 0;
	}
	make_keys();
	scenario();
	remove_keys();
	return 0;
}
