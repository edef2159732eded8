// SPDX-License-Identifier: MIT
/*
 * srv_limits.c - what the server's limits count (ibtrs.7, "Server
 * limits"): each session's and connection's share of the memory limit,
 * and the per-client records (struct srv_ident) of sessions, connections
 * and handshakes. Calls no other file of the server.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srv_int.h"

/*
 * What the memory limit counts (ibtrs.7, "Server limits"): a session
 * SRV_SESS_MEM plus its whole chunk pool and its operations, a
 * connection SRV_CON_MEM plus SRV_CON_MEM_CHUNK a chunk (its state here
 * and the backend's buffers: the tcp backend's receive staging buffer
 * and its work requests, three a chunk), and SRV_CON_MEM_TLS more where
 * TLS may run under it (the TLS layer's send and receive buffers and
 * GnuTLS's records). Worst cases: the pool is
 * reserved address space whose pages cost memory only once a request has
 * used them.
 */
#define SRV_SESS_MEM (64u << 10)
#define SRV_CON_MEM (384u << 10)
#define SRV_CON_MEM_CHUNK 1024u
#define SRV_CON_MEM_TLS (640u << 10)

/* What one session counts against the memory limit. */
uint64_t srv_sess_mem(const struct ibtrs_srv_ctx *ctx)
{
	return SRV_SESS_MEM +
	       (uint64_t)ctx->queue_depth *
		       (ctx->chunk_size + sizeof(struct ibtrs_srv_op));
}

/* What one connection counts against the memory limit. */
uint64_t srv_con_mem(const struct ibtrs_srv_ctx *ctx)
{
	return SRV_CON_MEM + (uint64_t)ctx->queue_depth * SRV_CON_MEM_CHUNK +
	       (ctx->sec.tls != IBTRS_TLS_OFF ? SRV_CON_MEM_TLS : 0);
}

/* Whether @more fits under the memory limit. Context: ctx->lock held. */
bool srv_mem_fits(const struct ibtrs_srv_ctx *ctx, uint64_t more)
{
	return !ctx->max_memory || ctx->mem_used + more <= ctx->max_memory;
}

/*
 * The record of @name, made if missing, held until srv_ident_put(); NULL
 * without memory. A count is raised only under a hold.
 */
struct srv_ident *srv_ident_get(struct ibtrs_srv_ctx *ctx, const char *name)
{
	struct srv_ident *id;

	pthread_mutex_lock(&ctx->ident_lock);
	for (id = ctx->idents; id; id = id->next)
		if (!strcmp(id->name, name))
			break;
	if (!id) {
		id = calloc(1, sizeof(*id));
		if (id) {
			snprintf(id->name, sizeof(id->name), "%s", name);
			id->next = ctx->idents;
			ctx->idents = id;
		}
	}
	if (id)
		id->holds++;
	pthread_mutex_unlock(&ctx->ident_lock);
	return id;
}

/* Under ident_lock: free @id if it counts and holds nothing any more. */
static void ident_gc(struct ibtrs_srv_ctx *ctx, struct srv_ident *id)
{
	struct srv_ident **pp;

	if (id->holds || atomic_load(&id->sessions) || atomic_load(&id->cons) ||
	    atomic_load(&id->handshakes))
		return;
	for (pp = &ctx->idents; *pp; pp = &(*pp)->next) {
		if (*pp == id) {
			*pp = id->next;
			break;
		}
	}
	free(id);
}

/* Drop the hold of srv_ident_get(). */
void srv_ident_put(struct ibtrs_srv_ctx *ctx, struct srv_ident *id)
{
	if (!id)
		return;
	pthread_mutex_lock(&ctx->ident_lock);
	id->holds--;
	ident_gc(ctx, id);
	pthread_mutex_unlock(&ctx->ident_lock);
}

/* Lower one of @id's counts; any thread. */
void srv_ident_drop(struct ibtrs_srv_ctx *ctx, struct srv_ident *id,
		    _Atomic unsigned int *count)
{
	atomic_fetch_sub(count, 1);
	pthread_mutex_lock(&ctx->ident_lock);
	ident_gc(ctx, id);
	pthread_mutex_unlock(&ctx->ident_lock);
}

/* A connection's share of the memory limit goes. */
void srv_con_mem_put(struct ibtrs_srv_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	ctx->mem_used -= srv_con_mem(ctx);
	pthread_cond_broadcast(&ctx->cond);
	pthread_mutex_unlock(&ctx->lock);
}

/* Sessions of @id, and whether one more is allowed. */
bool srv_ident_may_open(const struct ibtrs_srv_ctx *ctx,
			const struct srv_ident *id)
{
	return !id || atomic_load(&id->sessions) < ctx->max_sess_per_client;
}
