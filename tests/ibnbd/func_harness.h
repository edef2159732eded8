/* SPDX-License-Identifier: MIT */
/*
 * func_harness.h - an in-process ibnbd server on temp files and a client
 * session to it over 127.0.0.1, for the tests/ibnbd/func_*.c programs.
 *
 * The server is an ibtrs server context (port 0, off the control socket)
 * whose rdma_ev hands every ibnbd request to ibnbd_srv_rdma_ev(); the
 * per-session ibnbd state lives in the session's private pointer from
 * IBTRS_SRV_LINK_EV_CONNECTED to _DISCONNECTED, as the tool's server does.
 */
#ifndef IBNBD_FUNC_HARNESS_H
#define IBNBD_FUNC_HARNESS_H

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ibnbd.h>
#include <ibtrs.h>

#include "test.h"

#define F_MAX_EXPORTS 8

/**
 * struct f_srv - the in-process server
 * @ctx: the ibtrs server context
 * @nbd: the ibnbd server
 * @port: the port it listens on
 * @dir: a temp directory holding the export files
 * @paths: the export files, to remove at the end
 * @npaths: entries of @paths
 */
struct f_srv {
	struct ibtrs_srv_ctx *ctx;
	struct ibnbd_srv *nbd;
	uint16_t port;
	char dir[64];
	char paths[F_MAX_EXPORTS][128];
	unsigned int npaths;
};

/* The ibnbd state of one ibtrs session. */
struct f_sess {
	struct ibnbd_srv_sess *nbd;
};

static struct f_srv *f_srv_g;

static inline int f_rdma_ev(struct ibtrs_srv *sess, void *priv,
			    struct ibtrs_srv_op *id, int dir, void *data,
			    size_t datalen, const void *usr, size_t usrlen)
{
	struct f_sess *s = priv;

	if (!ibnbd_is_request(usr, usrlen) || !s)
		return -EOPNOTSUPP;
	return ibnbd_srv_rdma_ev(f_srv_g->nbd, &s->nbd, sess, id, dir, data,
				 datalen, usr, usrlen);
}

static inline int f_link_ev(struct ibtrs_srv *sess, enum ibtrs_srv_link_ev ev,
			    void *priv)
{
	struct f_sess *s = priv;

	if (ev == IBTRS_SRV_LINK_EV_CONNECTED) {
		s = calloc(1, sizeof(*s));
		if (!s)
			return -ENOMEM;
		ibtrs_srv_set_sess_priv(sess, s);
		return 0;
	}
	if (s) {
		ibtrs_srv_set_sess_priv(sess, NULL);
		ibnbd_srv_sess_free(s->nbd);
		free(s);
	}
	return 0;
}

/* A failed CHECK exits: the temp files go all the same. */
static inline void f_files_cleanup(void)
{
	struct f_srv *srv = f_srv_g;
	unsigned int i;

	if (!srv)
		return;
	for (i = 0; i < srv->npaths; i++)
		unlink(srv->paths[i]);
	rmdir(srv->dir);
}

/**
 * f_srv_start() - start the server with no exports
 * @srv: the server
 * @max_io_size: the ibtrs server's max_io_size, 0 for the default
 */
static inline void f_srv_start(struct f_srv *srv, uint32_t max_io_size)
{
	struct ibnbd_srv_opts no;
	struct ibtrs_srv_opts o;

	memset(srv, 0, sizeof(*srv));
	f_srv_g = srv;
	snprintf(srv->dir, sizeof(srv->dir), "/tmp/ibnbd-func-XXXXXX");
	CHECK(mkdtemp(srv->dir));
	atexit(f_files_cleanup);
	ibnbd_srv_opts_init(&no, sizeof(no));
	if (max_io_size)
		no.max_io_size = max_io_size;
	srv->nbd = ibnbd_srv_create(&no);
	if (!srv->nbd && errno == EOPNOTSUPP) {
		fprintf(stderr, "skip: ibnbd server built without liburing\n");
		rmdir(srv->dir);
		exit(T_SKIP);
	}
	CHECK(srv->nbd);
	ibtrs_srv_opts_init(&o, sizeof(o));
	o.port = 0;
	o.no_control = true;
	o.rdma_ev = f_rdma_ev;
	o.link_ev = f_link_ev;
	if (max_io_size)
		o.max_io_size = max_io_size;
	srv->ctx = ibtrs_srv_open_opts(&o);
	CHECK(srv->ctx);
	srv->port = ibtrs_srv_get_port(srv->ctx);
}

/**
 * f_file() - create a temp file of @size bytes (sparse)
 * @srv: the server (the file lives in its directory)
 * @name: file name
 * @size: bytes
 * @out: gets the path (128 bytes)
 */
static inline void f_file(struct f_srv *srv, const char *name, off_t size,
			  char *out)
{
	int fd;

	CHECK(srv->npaths < F_MAX_EXPORTS);
	snprintf(srv->paths[srv->npaths], sizeof(srv->paths[0]), "%s/%s",
		 srv->dir, name);
	fd = open(srv->paths[srv->npaths], O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	CHECK(ftruncate(fd, size) == 0);
	close(fd);
	snprintf(out, 128, "%s", srv->paths[srv->npaths]);
	srv->npaths++;
}

/**
 * f_export() - create a file and export it
 * @srv: the server
 * @name: export (and file) name
 * @size: bytes
 * @ro: read-only export
 * @out: gets the file's path (128 bytes), may be NULL
 */
static inline void f_export(struct f_srv *srv, const char *name, off_t size,
			    bool ro, char *out)
{
	char path[128];

	f_file(srv, name, size, path);
	CHECK_EQ(ibnbd_srv_add_export(srv->nbd, name, path, ro), 0);
	if (out)
		snprintf(out, 128, "%s", path);
}

/* Stop the server and remove its files. */
static inline void f_srv_stop(struct f_srv *srv)
{
	unsigned int i;

	ibtrs_srv_close(srv->ctx);
	ibnbd_srv_destroy(srv->nbd);
	for (i = 0; i < srv->npaths; i++)
		unlink(srv->paths[i]);
	rmdir(srv->dir);
	srv->npaths = 0;
}

/**
 * f_clt_open() - a client session of @npaths paths to 127.0.0.1
 * @port: the server's port
 * @npaths: 1..4 (127.0.0.1, 127.0.0.2, ...)
 * @name: session name
 *
 * Return: the session.
 */
static inline struct ibtrs_clt *f_clt_open(uint16_t port, unsigned int npaths,
					   const char *name)
{
	struct sockaddr_storage dst[4];
	struct ibtrs_addr paths[4];
	struct ibtrs_clt_opts o;
	struct ibtrs_clt *sess;
	unsigned int i;

	CHECK(npaths >= 1 && npaths <= 4);
	for (i = 0; i < npaths; i++) {
		char a[64];

		/* Distinct loopback addresses make distinct paths. */
		snprintf(a, sizeof(a), "ip:127.0.0.%u", i + 1);
		paths[i].dst = &dst[i];
		paths[i].src = NULL;
		CHECK_EQ(ibtrs_addr_to_sockaddr(a, strlen(a), port, &paths[i]),
			 0);
	}
	ibtrs_clt_opts_init(&o, sizeof(o));
	o.sessname = name;
	o.paths = paths;
	o.path_cnt = npaths;
	o.port = port;
	o.no_control = true;
	o.reconnect_delay_sec = 1;
	o.max_reconnect_attempts = -1;
	sess = ibtrs_clt_open_opts(&o);
	CHECK(sess);
	return sess;
}

/* Bytes of @path. */
static inline void f_pread(const char *path, void *buf, size_t len, off_t off)
{
	int fd = open(path, O_RDONLY);

	CHECK(fd >= 0);
	CHECK_EQ(pread(fd, buf, len, off), (long long)len);
	close(fd);
}

static inline void f_pwrite(const char *path, const void *buf, size_t len,
			    off_t off)
{
	int fd = open(path, O_RDWR);

	CHECK(fd >= 0);
	CHECK_EQ(pwrite(fd, buf, len, off), (long long)len);
	close(fd);
}

/* A request waited for by hand: counts its callbacks. */
struct f_wait {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int calls;
	int err;
};

static inline void f_wait_init(struct f_wait *w)
{
	pthread_mutex_init(&w->lock, NULL);
	t_cond_init(&w->cond);
	w->calls = 0;
	w->err = 0;
}

static inline void f_done(void *priv, int err)
{
	struct f_wait *w = priv;

	pthread_mutex_lock(&w->lock);
	w->calls++;
	w->err = err;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* Wait up to @ms for the callback; true when it ran. */
static inline bool f_wait_for(struct f_wait *w, unsigned int ms)
{
	struct timespec ts = t_deadline(ms);
	bool ok;

	pthread_mutex_lock(&w->lock);
	while (!w->calls &&
	       pthread_cond_timedwait(&w->cond, &w->lock, &ts) != ETIMEDOUT)
		;
	ok = w->calls > 0;
	pthread_mutex_unlock(&w->lock);
	return ok;
}

#endif /* IBNBD_FUNC_HARNESS_H */
