// SPDX-License-Identifier: MIT
/*
 * providers.c - every libfabric provider named to the ofi backend works or
 * is refused at open with a message, and never crashes.
 *
 * For each name (the providers Debian's libfabric 1.17 ships, one for
 * hardware this host lacks, and one that does not exist), a child process
 * runs with IBTRS_BACKEND=ofi and IBTRS_OFI_PROVIDER=NAME. It opens a
 * server on 127.0.0.1; a refused open must come with an errno and a log
 * line naming the provider. On an accepted one a second server on the
 * same port must be refused with EADDRINUSE, and a client session must
 * run: 4 KiB and 128 KiB WRITEs read back and compared; a second session,
 * opened before the first closes, still runs one after; a third one's path
 * fails, the session closes, and no fd but the provider's own is closed
 * (child_fail_close()). The child's end (exit
 * status or signal) and its stderr are checked by the parent. tcp, the
 * provider the suite runs on, must work; sockets, which passes the fit
 * test but cannot keep heartbeats on a loaded host, must be refused for
 * that, and work when IBTRS_OFI_ALLOW_UNFIT=1 lets it run.
 *
 * "providers --works NAME" runs one child and exits 0 when NAME works, 1
 * when it is refused or fails: scripts/test.sh asks it which providers to
 * run the suites on.
 *
 * Skips (77) when the ofi backend is not built.
 */
#include <fcntl.h>
#include <sys/wait.h>

#include <ibtrs_fault.h>

#include "harness.h"

#define CHILD_WORKS 0
#define CHILD_REFUSED 2
#define CHILD_NO_BACKEND 3
#define CHILD_TIMEOUT_S 120
#define NR_SENTINELS 256

static const char *const providers[] = {
	"tcp", "net", "sockets", "udp", "shm", "ofi_rxm", "verbs", "nosuch",
};

/*
 * Under LeakSanitizer: net (libfabric 1.17) leaks small objects of its
 * own, allocated inside libfabric with no frame of ours above them; tcp
 * and sockets run the same backend code without a leak. (A leak of ours
 * through libfabric, an fi_info say, is the unit tests' to catch on tcp.)
 */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libfabric.so\n";
}

static int dummy_rdma_ev(struct ibtrs_srv *sess, void *priv,
			 struct ibtrs_srv_op *id, int dir, void *data,
			 size_t datalen, const void *usr, size_t usrlen)
{
	(void)sess, (void)priv, (void)id, (void)dir, (void)data;
	(void)datalen, (void)usr, (void)usrlen;
	return -EIO;
}

/* A server on 127.0.0.1:@port (0: any), or NULL with errno. */
static struct ibtrs_srv_ctx *srv_open(uint16_t port)
{
	struct sockaddr_storage ss;
	struct ibtrs_addr addr = { .src = NULL, .dst = &ss };
	struct ibtrs_srv_opts opts;

	ibtrs_srv_opts_init(&opts, sizeof(opts));
	CHECK_EQ(ibtrs_addr_to_sockaddr("ip:127.0.0.1", 12, port, &addr), 0);
	opts.listen_addr = (const struct sockaddr *)&ss;
	opts.port = port;
	opts.rdma_ev = dummy_rdma_ev;
	errno = 0;
	return ibtrs_srv_open_opts(&opts);
}

/*
 * A path whose connections fail and whose session then closes: the
 * provider must close each of its sockets once. With libfabric 1.17's
 * sockets, fi_shutdown() closed the endpoint's CM socket and its fi_close()
 * closed the same number again; here that number is taken by one of
 * NR_SENTINELS fds opened in between (fds are allocated lowest first), and
 * a sentinel found closed fails the child.
 */
static void child_fail_close(const char *prov, uint16_t port,
			     struct ibtrs_srv_ctx *srv)
{
	struct ibtrs_srv_stats ss = { .size = sizeof(ss) };
	struct sockaddr_storage dst;
	struct ibtrs_addr addr = { .dst = &dst };
	struct ibtrs_clt_opts o;
	struct ibtrs_attrs attr;
	struct ibtrs_clt *sess;
	int fds[NR_SENTINELS];
	unsigned int i, bad = 0;
	double end;

	CHECK_EQ(ibtrs_addr_to_sockaddr("ip:127.0.0.1", 12, port, &addr), 0);
	ibtrs_clt_opts_init(&o, sizeof(o));
	o.sessname = "fail-close";
	o.paths = &addr;
	o.path_cnt = 1;
	o.port = port;
	/* No reconnect before the close: the failed connections stay. */
	o.reconnect_delay_sec = 60;
	sess = ibtrs_clt_open_opts(&o);
	CHECK(sess);
	CHECK_EQ(ibtrs_clt_inject_fault(sess, 0, IBTRS_FAULT_CLOSE, 0), 0);
	/* Both ends have seen the failure (and shut down or closed). */
	end = t_now() + 10;
	while (!ibtrs_clt_query(sess, &attr) && t_now() < end)
		h_sleep_ms(5);
	CHECK(ibtrs_clt_query(sess, &attr) != 0);
	do {
		CHECK_EQ(ibtrs_srv_get_stats(srv, &ss), 0);
		if (!ss.paths)
			break;
		h_sleep_ms(5);
	} while (t_now() < end);
	CHECK_EQ(ss.paths, 0);
	for (i = 0; i < NR_SENTINELS; i++) {
		fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		CHECK(fds[i] >= 0);
	}
	ibtrs_clt_close(sess);
	for (i = 0; i < NR_SENTINELS; i++) {
		if (fcntl(fds[i], F_GETFD) < 0) {
			fprintf(stderr,
				"provider %s: fd %d, not its own, closed\n",
				prov, fds[i]);
			bad++;
			continue;
		}
		close(fds[i]);
	}
	CHECK_EQ(bad, 0);
}

/* Whether the server opens on @prov; exits with the refusal if not. */
static void child_probe(const char *prov)
{
	struct ibtrs_srv_ctx *ctx = srv_open(0);

	if (ctx) {
		ibtrs_srv_close(ctx);
		return;
	}
	fprintf(stderr, "provider %s: server refused: %s\n", prov,
		strerror(errno));
	/* An unknown backend is EINVAL: the ofi backend is not built. */
	exit(errno == EINVAL ? CHILD_NO_BACKEND : errno ? CHILD_REFUSED : 1);
}

static void child(const char *prov)
{
	static const size_t sizes[] = { 4096, 128 * 1024 };
	struct ibtrs_tag *tag;
	struct ibtrs_clt *sess, *sess2;
	struct h_srv srv;
	unsigned char *wbuf, *rbuf;
	unsigned int i;

	const char *spin = getenv("FI_SOCKETS_PE_WAITTIME");
	char *user_spin = spin ? strdup(spin) : NULL;

	setenv("IBTRS_BACKEND", "ofi", 1);
	setenv("IBTRS_OFI_PROVIDER", prov, 1);
	/* The library logs nothing unless asked: the refusal's reason. */
	ibtrs_set_log_level(IBTRS_LOG_ERR);
	t_watchdog(CHILD_TIMEOUT_S);
	child_probe(prov);
	/* sockets' progress thread is asked not to spin after each wake-up
	 * (OFI_Q_PE_SPIN), unless the user set its spin time. */
	spin = getenv("FI_SOCKETS_PE_WAITTIME");
	if (!strcmp(prov, "sockets"))
		CHECK(spin && !strcmp(spin, user_spin ? user_spin : "0"));
	else
		CHECK(!spin == !user_spin);
	free(user_spin);

	h_srv_start(&srv, NULL, 0, 0);
	/* A busy address is EADDRINUSE, as on the tcp backend, whatever
	 * the provider reports (sockets: EINVAL). */
	CHECK(!srv_open(srv.port));
	CHECK_EQ(errno, EADDRINUSE);
	sess = h_clt_open(prov, srv.port, 1, 0, NULL, NULL);
	/* The sessions of a process share the provider's domain. */
	sess2 = h_clt_open("second", srv.port, 1, 0, NULL, NULL);
	tag = ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_WAIT);
	CHECK(tag);
	wbuf = malloc(sizes[1]);
	rbuf = malloc(sizes[1]);
	CHECK(wbuf && rbuf);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		h_fill(wbuf, sizes[i], i + 1);
		memset(rbuf, 0, sizes[i]);
		CHECK_EQ(h_io(sess, tag, IBTRS_WRITE, wbuf, sizes[i],
			      (uint64_t)i << 20, i),
			 0);
		CHECK_EQ(h_io(sess, tag, IBTRS_READ, rbuf, sizes[i],
			      (uint64_t)i << 20, i),
			 0);
		CHECK(!memcmp(wbuf, rbuf, sizes[i]));
	}
	ibtrs_clt_put_tag(sess, tag);
	ibtrs_clt_close(sess);
	/* Closing one leaves the other's domain and registrations working. */
	tag = ibtrs_clt_get_tag(sess2, IBTRS_IO_CON, IBTRS_TAG_WAIT);
	CHECK(tag);
	h_fill(wbuf, sizes[1], 7);
	memset(rbuf, 0, sizes[1]);
	CHECK_EQ(h_io(sess2, tag, IBTRS_WRITE, wbuf, sizes[1], 4 << 20, 7), 0);
	CHECK_EQ(h_io(sess2, tag, IBTRS_READ, rbuf, sizes[1], 4 << 20, 7), 0);
	CHECK(!memcmp(wbuf, rbuf, sizes[1]));
	ibtrs_clt_put_tag(sess2, tag);
	ibtrs_clt_close(sess2);
	child_fail_close(prov, srv.port, srv.ctx);
	h_srv_stop(&srv);
	free(wbuf);
	free(rbuf);
	exit(CHILD_WORKS);
}

/*
 * Run the child for @prov; its stderr into @log (NUL-terminated).
 * Return: its exit status, or 128 + the signal that ended it.
 */
static int run_child(const char *prov, char *log, size_t len)
{
	size_t got = 0;
	int fds[2], st;
	pid_t pid;

	CHECK_EQ(pipe(fds), 0);
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		close(fds[0]);
		dup2(fds[1], 2);
		close(fds[1]);
		child(prov);
	}
	close(fds[1]);
	for (;;) {
		ssize_t n = read(fds[0], log + got, len - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == len - 1) {
			char sink[256];

			/* Keep the start; drain the rest. */
			while (read(fds[0], sink, sizeof(sink)) > 0)
				;
			break;
		}
	}
	log[got] = '\0';
	close(fds[0]);
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return WEXITSTATUS(st);
}

int main(int argc, char **argv)
{
	static char log[16384];
	unsigned int i, works = 0, refused = 0;
	int failed = 0, ret;

	if (argc == 3 && !strcmp(argv[1], "--works"))
		return run_child(argv[2], log, sizeof(log)) == CHILD_WORKS ? 0
									   : 1;
	CHECK_EQ(argc, 1);
	t_watchdog(280);
	for (i = 0; i < sizeof(providers) / sizeof(providers[0]); i++) {
		const char *prov = providers[i];
		char want[64];

		ret = run_child(prov, log, sizeof(log));

		snprintf(want, sizeof(want), "ofi: provider %s", prov);
		if (ret == CHILD_NO_BACKEND) {
			printf("providers: the ofi backend is not built\n");
			return 77;
		}
		if (ret == CHILD_WORKS) {
			printf("provider %s: works\n", prov);
			works++;
		} else if (ret == CHILD_REFUSED && strstr(log, want)) {
			const char *m = strstr(log, want);

			printf("provider %s: refused at open: %.*s\n", prov,
			       (int)strcspn(m, "\n"), m);
			refused++;
		} else {
			fprintf(stderr, "provider %s: %s %d; its stderr:\n%s\n",
				prov, ret > 128 ? "killed by signal" : "exit",
				ret > 128 ? ret - 128 : ret, log);
			if (ret == CHILD_REFUSED)
				fprintf(stderr,
					"provider %s: refused without a message naming it\n",
					prov);
			failed = 1;
		}
		if (!strcmp(prov, "tcp") && ret != CHILD_WORKS) {
			fprintf(stderr, "provider tcp must work\n");
			failed = 1;
		}
		if (!strcmp(prov, "nosuch") && ret != CHILD_REFUSED) {
			fprintf(stderr, "provider nosuch must be refused\n");
			failed = 1;
		}
		/* sockets passes the fit test and is refused for its
		 * progress (OFI_Q_POLLS), where libfabric offers it. */
		if (!strcmp(prov, "sockets") &&
		    (ret != CHILD_REFUSED ||
		     (!strstr(log, "offers no") &&
		      !strstr(log, "a progress engine that sleeps")))) {
			fprintf(stderr,
				"provider sockets must be refused for its progress\n");
			failed = 1;
		}
	}
	/* Allowed, it runs as the providers that fit do (a failed path
	 * closing none of our fds included). */
	setenv("IBTRS_OFI_ALLOW_UNFIT", "1", 1);
	ret = run_child("sockets", log, sizeof(log));
	unsetenv("IBTRS_OFI_ALLOW_UNFIT");
	if (ret == CHILD_WORKS) {
		printf("provider sockets, allowed: works\n");
	} else if (ret == CHILD_REFUSED && strstr(log, "offers no")) {
		printf("provider sockets: not offered here\n");
	} else {
		fprintf(stderr,
			"provider sockets, allowed: exit %d; its stderr:\n%s\n",
			ret, log);
		failed = 1;
	}
	printf("providers: %u work, %u refused\n", works, refused);
	return failed;
}
