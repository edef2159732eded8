// SPDX-License-Identifier: MIT
/*
 * xprt.c - the table of backends; missing slots become -EOPNOTSUPP stubs.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "xprt.h"

int ibtrs_xprt_pd_new(size_t size, unsigned int max_mrs, size_t slot, void **pd,
		      void **table)
{
	if (!max_mrs || max_mrs > IBTRS_XPRT_MAX_MRS)
		return -EINVAL;
	*pd = calloc(1, size);
	if (!*pd)
		return -ENOMEM;
	*table = calloc(max_mrs, slot);
	if (!*table) {
		free(*pd);
		*pd = NULL;
		return -ENOMEM;
	}
	return 0;
}

void ibtrs_xprt_addr_str(struct ibtrs_xprt_con *con, ibtrs_xprt_name_fn name,
			 char *local, char *peer, size_t len)
{
	struct sockaddr_storage ss;

	if (!len)
		return;
	local[0] = peer[0] = '\0';
	if (!name(con, false, &ss))
		ibtrs_sockaddr_to_str((struct sockaddr *)&ss, local, len);
	if (!name(con, true, &ss))
		ibtrs_sockaddr_to_str((struct sockaddr *)&ss, peer, len);
}

static int stub_pd_alloc(struct ibtrs_xprt_pd **pd, unsigned int max_mrs)
{
	(void)pd, (void)max_mrs;
	return -EOPNOTSUPP;
}

static void stub_pd_free(struct ibtrs_xprt_pd *pd)
{
	(void)pd;
}

static int stub_mr_alloc(struct ibtrs_xprt_pd *pd, unsigned int max_sge,
			 struct ibtrs_xprt_mr **mr)
{
	(void)pd, (void)max_sge, (void)mr;
	return -EOPNOTSUPP;
}

static int stub_mr_map(struct ibtrs_xprt_mr *mr, const struct iovec *iov,
		       unsigned int cnt)
{
	(void)mr, (void)iov, (void)cnt;
	return -EOPNOTSUPP;
}

static void stub_mr_void(struct ibtrs_xprt_mr *mr)
{
	(void)mr;
}

static int stub_connect(struct ibtrs_xprt_pd *pd, const struct sockaddr *src,
			const struct sockaddr *dst,
			const struct ibtrs_xprt_con_attr *attr,
			const void *priv, void *rsp, unsigned int timeout_ms,
			struct ibtrs_xprt_con **con)
{
	(void)pd, (void)src, (void)dst, (void)attr, (void)priv, (void)rsp;
	(void)timeout_ms, (void)con;
	return -EOPNOTSUPP;
}

static int stub_listen(struct ibtrs_loop *loop, const struct sockaddr *addr,
		       const struct ibtrs_xprt_tls *tls,
		       void (*connreq)(void *arg,
				       struct ibtrs_xprt_connreq *req,
				       const struct ibtrs_connreq_info *info),
		       void *arg, struct ibtrs_xprt_listener **listener)
{
	(void)loop, (void)addr, (void)tls, (void)connreq, (void)arg;
	(void)listener;
	return -EOPNOTSUPP;
}

static int stub_listener_addr(struct ibtrs_xprt_listener *listener,
			      struct sockaddr_storage *addr)
{
	(void)listener, (void)addr;
	return -EOPNOTSUPP;
}

static void stub_listener_close(struct ibtrs_xprt_listener *listener)
{
	(void)listener;
}

static int stub_accept(struct ibtrs_xprt_connreq *req, struct ibtrs_xprt_pd *pd,
		       const struct ibtrs_xprt_con_attr *attr, const void *priv,
		       struct ibtrs_xprt_con **con)
{
	(void)req, (void)pd, (void)attr, (void)priv, (void)con;
	return -EOPNOTSUPP;
}

static void stub_reject(struct ibtrs_xprt_connreq *req, const void *priv)
{
	(void)req, (void)priv;
}

static int stub_start(struct ibtrs_xprt_con *con, struct ibtrs_loop *loop)
{
	(void)con, (void)loop;
	return -EOPNOTSUPP;
}

static int stub_move(struct ibtrs_xprt_con *con, struct ibtrs_loop *loop,
		     void (*done)(struct ibtrs_xprt_con *con, int err))
{
	(void)con, (void)loop, (void)done;
	return -EOPNOTSUPP;
}

static void stub_con_void(struct ibtrs_xprt_con *con)
{
	(void)con;
}

static int stub_post_send(struct ibtrs_xprt_con *con, const struct iovec *iov,
			  unsigned int cnt, uint64_t wr_id, unsigned int flags)
{
	(void)con, (void)iov, (void)cnt, (void)wr_id, (void)flags;
	return -EOPNOTSUPP;
}

static int stub_post_recv(struct ibtrs_xprt_con *con, void *buf, uint32_t len,
			  uint64_t wr_id)
{
	(void)con, (void)buf, (void)len, (void)wr_id;
	return -EOPNOTSUPP;
}

static int stub_post_write(struct ibtrs_xprt_con *con, const struct iovec *iov,
			   unsigned int cnt, uint64_t raddr, uint32_t rkey,
			   uint32_t imm, uint64_t wr_id, unsigned int flags)
{
	(void)con, (void)iov, (void)cnt, (void)raddr, (void)rkey, (void)imm;
	(void)wr_id, (void)flags;
	return -EOPNOTSUPP;
}

static int stub_drain(struct ibtrs_xprt_con *con)
{
	(void)con;
	return -EOPNOTSUPP;
}

static int stub_health(struct ibtrs_xprt_con *con, struct ibtrs_xprt_health *h)
{
	(void)con, (void)h;
	return -EOPNOTSUPP;
}

static int stub_name(struct ibtrs_xprt_con *con, bool peer,
		     struct sockaddr_storage *ss)
{
	(void)con, (void)peer, (void)ss;
	return -EOPNOTSUPP;
}

static void stub_addr_str(struct ibtrs_xprt_con *con, char *local, char *peer,
			  size_t len)
{
	ibtrs_xprt_addr_str(con, stub_name, local, peer, len);
}

static void stub_sec_str(struct ibtrs_xprt_con *con, char *buf, size_t len)
{
	(void)con;
	if (len)
		snprintf(buf, len, "off");
}

#define FILL(slot, stub)                \
	do {                            \
		if (!o->slot)           \
			o->slot = stub; \
	} while (0)

static void fill_stubs(struct ibtrs_xprt_ops *o)
{
	FILL(pd_alloc, stub_pd_alloc);
	FILL(pd_free, stub_pd_free);
	FILL(mr_alloc, stub_mr_alloc);
	FILL(mr_map, stub_mr_map);
	FILL(mr_unmap, stub_mr_void);
	FILL(mr_free, stub_mr_void);
	FILL(mr_sync, stub_mr_void);
	FILL(connect, stub_connect);
	FILL(listen, stub_listen);
	FILL(listener_addr, stub_listener_addr);
	FILL(listener_close, stub_listener_close);
	FILL(accept, stub_accept);
	FILL(reject, stub_reject);
	FILL(start, stub_start);
	FILL(disconnect, stub_con_void);
	FILL(destroy, stub_con_void);
	FILL(move, stub_move);
	FILL(post_send, stub_post_send);
	FILL(post_recv, stub_post_recv);
	FILL(post_write, stub_post_write);
	FILL(drain, stub_drain);
	FILL(health, stub_health);
	FILL(addr_str, stub_addr_str);
	FILL(sec_str, stub_sec_str);
}

/* Every backend, the default first. */
static const struct ibtrs_xprt_ops *const backends[] = {
	&ibtrs_xprt_tcp_ops,
	&ibtrs_xprt_loop_ops,
#ifdef IBTRS_HAVE_OFI
	&ibtrs_xprt_ofi_ops,
#endif
};

#define NR_BACKENDS (sizeof(backends) / sizeof(backends[0]))

static struct ibtrs_xprt_ops registered[NR_BACKENDS];
static pthread_once_t registered_once = PTHREAD_ONCE_INIT;

static void register_backends(void)
{
	size_t i;

	for (i = 0; i < NR_BACKENDS; i++) {
		registered[i] = *backends[i];
		fill_stubs(&registered[i]);
	}
}

const struct ibtrs_xprt_ops *ibtrs_xprt_find(const char *name)
{
	size_t i;

	pthread_once(&registered_once, register_backends);
	if (!name || !*name)
		name = getenv("IBTRS_BACKEND");
	if (!name || !*name)
		return &registered[0];
	for (i = 0; i < NR_BACKENDS; i++)
		if (!strcmp(registered[i].name, name))
			return &registered[i];
	return NULL;
}
