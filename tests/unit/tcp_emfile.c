// SPDX-License-Identifier: MIT
/*
 * tcp_emfile.c - a server out of file descriptors does not spin, and
 * serves its sessions meanwhile.
 *
 * A child process runs the server with a low RLIMIT_NOFILE; the parent
 * opens a session to it, then the child fills its descriptor table and a
 * connection waits in its backlog, so that every accept() fails with
 * EMFILE. Over one second of that, the CPU time of the child's server
 * loop thread (/proc/self/task/TID/stat) must stay under 20 % of the wall
 * time (it was 100 %: the listen socket stays readable), while the
 * session's requests keep working. Once the descriptors are freed, a new
 * session opens.
 */
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "harness.h"

#define QD 16
#define MAX_IO (64 * 1024)
#define NOFILE 256

static int to_child[2], to_parent[2];

static void send_byte(int fd, char c)
{
	CHECK_EQ(write(fd, &c, 1), 1);
}

static char recv_byte(int fd)
{
	char c = 0;

	CHECK_EQ(read(fd, &c, 1), 1);
	return c;
}

/*
 * The stat file of the thread named "ibtrs-srv", opened while there are
 * descriptors to open it with; -1 if there is no such thread (yet).
 */
static int srv_thread_stat(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int found = -1;

	CHECK(d);
	while ((e = readdir(d))) {
		char path[300], buf[512];
		ssize_t n;
		int fd;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat",
			 e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = pread(fd, buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = 0;
		if (found < 0 && strstr(buf, "(ibtrs-srv)"))
			found = fd;
		else
			close(fd);
	}
	closedir(d);
	return found;
}

/* CPU time (user + system) of the thread of @fd, in clock ticks. */
static long long thread_ticks(int fd)
{
	unsigned long long ut, st;
	char buf[512], *p;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	CHECK(n > 0);
	buf[n] = 0;
	/* Fields after the name: state is 3, utime 14, stime 15. */
	p = strrchr(buf, ')');
	CHECK(p);
	CHECK_EQ(sscanf(p + 2,
			"%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			&ut, &st),
		 2);
	return (long long)(ut + st);
}

static void child(void)
{
	struct rlimit rl = { .rlim_cur = NOFILE, .rlim_max = NOFILE };
	int fds[NOFILE], nfds = 0, i;
	struct h_srv srv;
	uint16_t port;
	int stat_fd;
	char c;

	close(to_child[1]);
	close(to_parent[0]);
	CHECK_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
	h_srv_start(&srv, NULL, QD, MAX_IO);
	port = srv.port;
	/* The loop thread names itself once it runs. */
	for (i = 0; (stat_fd = srv_thread_stat()) < 0 && i < 1000; i++)
		h_sleep_ms(10);
	CHECK(stat_fd >= 0);
	CHECK_EQ(write(to_parent[1], &port, sizeof(port)), sizeof(port));
	while ((c = recv_byte(to_child[0])) != 'q') {
		if (c == 'f') {
			/* Fill the table; keep none spare. */
			for (;;) {
				int fd =
					open("/dev/null", O_RDONLY | O_CLOEXEC);

				if (fd < 0) {
					CHECK_EQ(errno, EMFILE);
					break;
				}
				CHECK(nfds < NOFILE);
				fds[nfds++] = fd;
			}
			send_byte(to_parent[1], 'F');
		} else if (c == 'm') {
			long hz = sysconf(_SC_CLK_TCK);
			long long t0 = thread_ticks(stat_fd), t1;
			double w0 = t_now(), w1, pct;

			/* The measured interval itself. */
			h_sleep_ms(1000);
			t1 = thread_ticks(stat_fd);
			w1 = t_now();
			pct = 100.0 * (double)(t1 - t0) / (double)hz /
			      (w1 - w0);
			fprintf(stderr,
				"tcp_emfile: server loop thread %.1f %% of a CPU "
				"while accept() fails\n",
				pct);
			send_byte(to_parent[1], pct < 20.0 ? 'M' : 'X');
		} else if (c == 'u') {
			for (i = 0; i < nfds; i++)
				close(fds[i]);
			nfds = 0;
			send_byte(to_parent[1], 'U');
		}
	}
	h_srv_stop(&srv);
	exit(0);
}

static void check_io(struct ibtrs_clt *sess, uint64_t seed)
{
	unsigned char w[4096], r[4096];
	struct ibtrs_tag *tag;

	tag = ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_WAIT);
	CHECK(tag);
	h_fill(w, sizeof(w), seed);
	CHECK_EQ(h_io(sess, tag, IBTRS_WRITE, w, sizeof(w), 0, seed), 0);
	CHECK_EQ(h_io(sess, tag, IBTRS_READ, r, sizeof(r), 0, seed + 1), 0);
	CHECK(!memcmp(w, r, sizeof(w)));
	ibtrs_clt_put_tag(sess, tag);
}

int main(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct ibtrs_clt *a, *b;
	uint16_t port;
	int st, waiting;
	pid_t pid;

	t_watchdog(120);
	CHECK_EQ(pipe(to_child), 0);
	CHECK_EQ(pipe(to_parent), 0);
	pid = fork();
	CHECK(pid >= 0);
	if (!pid)
		child();
	close(to_child[0]);
	close(to_parent[1]);
	CHECK_EQ(read(to_parent[0], &port, sizeof(port)), sizeof(port));

	a = h_clt_open("emfile-a", port, 1, 0, NULL, NULL);
	check_io(a, 1);

	send_byte(to_child[1], 'f');
	CHECK_EQ(recv_byte(to_parent[0]), 'F');
	/* A connection in the backlog the server cannot accept. */
	waiting = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(waiting >= 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(port);
	CHECK_EQ(connect(waiting, (struct sockaddr *)&sin, sizeof(sin)), 0);
	check_io(a, 2);

	send_byte(to_child[1], 'm');
	CHECK_EQ(recv_byte(to_parent[0]), 'M');
	check_io(a, 3);

	send_byte(to_child[1], 'u');
	CHECK_EQ(recv_byte(to_parent[0]), 'U');
	b = h_clt_open("emfile-b", port, 1, 0, NULL, NULL);
	check_io(b, 4);
	check_io(a, 5);

	ibtrs_clt_close(b);
	ibtrs_clt_close(a);
	close(waiting);
	send_byte(to_child[1], 'q');
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	printf("tcp_emfile: ok\n");
	return 0;
}
