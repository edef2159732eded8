// SPDX-License-Identifier: MIT
/*
 * control.c - the per-process control socket: status, policy and path
 * control, permissions, and cleanup.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "harness.h"
#include "test.h"

static char dir[64];
static char sock_path[100];

/* One request, the whole answer into @out. */
static int ctl(const char *req, char *out, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t got = 0;
	ssize_t n;
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(fd >= 0);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -errno;
	}
	CHECK(write(fd, req, strlen(req)) == (ssize_t)strlen(req));
	while (got < len - 1 && (n = read(fd, out + got, len - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(fd);
	return 0;
}

static int wait_state(struct ibtrs_clt *sess, unsigned int idx,
		      enum ibtrs_path_state want)
{
	int i;

	for (i = 0; i < 500; i++) {
		struct ibtrs_path_stats st = { .size = sizeof(st) };

		CHECK_EQ(ibtrs_clt_path_stats(sess, idx, &st), 0);
		if (st.state == want)
			return 0;
		usleep(10000);
	}
	return -1;
}

/* One verified WRITE and READ back of 4 KiB at offset 0. */
static void write_read(struct ibtrs_clt *sess)
{
	static char wbuf[4096], rbuf[4096];
	struct ibtrs_tag *tag;

	tag = ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_WAIT);
	CHECK(tag);
	h_fill(wbuf, sizeof(wbuf), 42);
	CHECK_EQ(h_io(sess, tag, IBTRS_WRITE, wbuf, sizeof(wbuf), 0, 1), 0);
	CHECK_EQ(h_io(sess, tag, IBTRS_READ, rbuf, sizeof(rbuf), 0, 2), 0);
	CHECK(!memcmp(wbuf, rbuf, sizeof(rbuf)));
	ibtrs_clt_put_tag(sess, tag);
}

int main(void)
{
	static char out[1 << 16];
	static struct h_srv srv;
	struct ibtrs_clt *sess;
	struct stat stbuf;

	t_watchdog(120);
	snprintf(dir, sizeof(dir), "/tmp/ibtrs-ctl-test.%d", (int)getpid());
	setenv("IBTRS_RUNTIME_DIR", dir, 1);
	snprintf(sock_path, sizeof(sock_path), "%s/%d.sock", dir,
		 (int)getpid());

	h_srv_start(&srv, "*", 0, 0);
	sess = h_clt_open("h-client", srv.port, 2, 0, NULL, NULL);

	/* The socket exists, owner-only, in an owner-only directory. */
	CHECK_EQ(stat(sock_path, &stbuf), 0);
	CHECK_EQ(stbuf.st_mode & 0777, 0600);
	CHECK_EQ(stat(dir, &stbuf), 0);
	CHECK_EQ(stbuf.st_mode & 0777, 0700);

	/* Status shows the client with both paths and the server. */
	CHECK_EQ(ctl("status\n", out, sizeof(out)), 0);
	CHECK(strstr(out, "\"clients\":[{\"sessname\":\"h-client\""));
	CHECK(strstr(out, "\"idx\":1"));
	CHECK(strstr(out, "\"servers\":[{\"port\":"));
	CHECK(strstr(out, "\"state\":\"connected\""));
	CHECK(out[strlen(out) - 1] == '\n');

	/* Policy switched live. */
	CHECK_EQ(ibtrs_clt_get_policy(sess), IBTRS_MP_MIN_INFLIGHT);
	CHECK_EQ(ctl("policy h-client rr\n", out, sizeof(out)), 0);
	CHECK(strstr(out, "\"ok\":true"));
	CHECK_EQ(ibtrs_clt_get_policy(sess), IBTRS_MP_ROUND_ROBIN);
	CHECK_EQ(ctl("policy h-client fastest\n", out, sizeof(out)), 0);
	CHECK(strstr(out, "\"ok\":false"));
	CHECK_EQ(ibtrs_clt_get_policy(sess), IBTRS_MP_ROUND_ROBIN);

	/* Disconnect path 1: I/O goes on over path 0. */
	CHECK_EQ(ctl("path disconnect h-client 1\n", out, sizeof(out)), 0);
	CHECK(strstr(out, "\"ok\":true"));
	CHECK_EQ(wait_state(sess, 1, IBTRS_PATH_CLOSED), 0);
	write_read(sess);
	CHECK_EQ(ctl("path reconnect h-client 1\n", out, sizeof(out)), 0);
	CHECK(strstr(out, "\"ok\":true"));
	CHECK_EQ(wait_state(sess, 1, IBTRS_PATH_CONNECTED), 0);

	/* Unknown sessions, commands and indexes are refused. */
	CHECK_EQ(ctl("path disconnect nobody 0\n", out, sizeof(out)), 0);
	CHECK(strstr(out, "\"ok\":false"));
	CHECK_EQ(ctl("path disconnect h-client 9\n", out, sizeof(out)), 0);
	CHECK(strstr(out, "\"ok\":false"));
	CHECK_EQ(ctl("launch missiles\n", out, sizeof(out)), 0);
	CHECK(strstr(out, "\"ok\":false"));

	/* Stats reset. */
	CHECK_EQ(ctl("stats reset h-client\n", out, sizeof(out)), 0);
	CHECK(strstr(out, "\"ok\":true"));
	{
		struct ibtrs_path_stats st = { .size = sizeof(st) };

		CHECK_EQ(ibtrs_clt_path_stats(sess, 0, &st), 0);
		CHECK_EQ(st.wr_ops + st.rd_ops, 0);
	}

	/* The socket goes with the last object of the process. */
	ibtrs_clt_close(sess);
	CHECK_EQ(stat(sock_path, &stbuf), 0); /* the server is still open */
	h_srv_stop(&srv);
	CHECK(stat(sock_path, &stbuf) && errno == ENOENT);

	/* Opting out: no socket at all. */
	setenv("IBTRS_CONTROL", "0", 1);
	h_srv_start(&srv, "*", 0, 0);
	CHECK(stat(sock_path, &stbuf) && errno == ENOENT);
	h_srv_stop(&srv);
	rmdir(dir);
	printf("control: ok\n");
	return 0;
}
