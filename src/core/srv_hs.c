// SPDX-License-Identifier: MIT
/*
 * srv_hs.c - a connection from its request to a joined path
 * (docs/protocol.md, "Authentication"): the connection request's checks
 * and the half-open limits, the context's list of handshakes, AUTH_REQ's
 * proofs, the session the connection joins or makes, its hand-over to the
 * session's loop (the backend's move()), the join of its path and
 * AUTH_RSP, or its refusal. Calls srv_sess.c and srv_limits.c, and hands
 * a joined connection to srv_req.c's handler.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "srv_int.h"

#define SRV_EXTRA_RECVS 16	/* heartbeats and control beside the requests */
#define SRV_MAX_HANDSHAKES 1024 /* half-open handshakes of every address */

static void srv_join(struct srv_con *con);

/* The context's loop: @hs off the context's list (its counts stay). */
static void hs_unlist(struct srv_hs *hs)
{
	struct ibtrs_srv_ctx *ctx = hs->con->ctx;
	struct srv_hs **pp;

	if (!hs->listed)
		return;
	for (pp = &ctx->handshakes; *pp; pp = &(*pp)->next) {
		if (*pp == hs) {
			*pp = hs->next;
			break;
		}
	}
	hs->next = NULL;
	hs->listed = false;
}

/* The connection's loop: its handshake is over, and its counts go. */
static void hs_free(struct srv_con *con)
{
	struct ibtrs_srv_ctx *ctx = con->ctx;
	struct srv_hs *hs = con->hs;

	hs_unlist(hs);
	atomic_fetch_sub(&ctx->nr_handshakes, 1);
	srv_ident_drop(ctx, hs->addr, &hs->addr->handshakes);
	con->hs = NULL;
	ibtrs_wipe(hs, sizeof(*hs));
	free(hs);
}

/*
 * The connection's loop: end a connection that has not joined a session.
 * Its half-open count goes with it, and a session it made for itself.
 */
void srv_hs_close(struct srv_con *con, const char *why)
{
	struct ibtrs_srv_ctx *ctx = con->ctx;
	struct srv_hs *hs = con->hs;

	if (!hs)
		return;
	ibtrs_log(IBTRS_LOG_DEBUG, "client %s: handshake closed: %s", hs->peer,
		  why);
	ctx->ops->disconnect(con->xcon);
	/* After the disconnect: the refusal's send it flushed completes
	 * in it and queues close_work again, which must not outlive hs. */
	ibtrs_loop_cancel(con->loop, &hs->close_work);
	ibtrs_loop_cancel(con->loop, &con->join_work);
	con->joining = false;
	if (con->sess && hs->created)
		srv_sess_drop_empty(con->sess);
	hs_free(con);
	srv_con_put(con);
}

static void reject(struct ibtrs_srv_ctx *ctx, struct ibtrs_xprt_connreq *req,
		   int err)
{
	struct ibtrs_conn_rsp r = { .version = IBTRS_PROTO_VER,
				    .err = (uint16_t)-err };
	struct ibtrs_msg_conn_rsp m;

	ibtrs_conn_rsp_encode(&m, &r);
	ctx->ops->reject(req, &m);
}

static struct srv_path *find_path(struct ibtrs_srv *sess, const uint8_t *uuid)
{
	struct srv_path *p;

	for (p = sess->paths; p; p = p->next)
		if (!memcmp(p->uuid, uuid, IBTRS_UUID_LEN))
			return p;
	return NULL;
}

static struct ibtrs_srv *find_sess(struct ibtrs_srv_ctx *ctx,
				   const uint8_t *uuid)
{
	struct ibtrs_srv *s;

	for (s = ctx->sessions; s; s = s->next)
		if (!memcmp(s->uuid, uuid, IBTRS_UUID_LEN))
			return s;
	return NULL;
}

/* The peer's address as text; IPv4 clients of the dual-stack listener
 * are shown as IPv4. */
static void peer_str(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
	struct sockaddr_in s4 = { .sin_family = AF_INET };

	if (ss->ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
		memcpy(&s4.sin_addr, &s6->sin6_addr.s6_addr[12], 4);
		s4.sin_port = s6->sin6_port;
		ibtrs_sockaddr_to_str((struct sockaddr *)&s4, buf, len);
		return;
	}
	ibtrs_sockaddr_to_str((const struct sockaddr *)ss, buf, len);
}

/* "addr:" and the peer's address without its port: the identity of a
 * client without keys. IPv4 clients of the dual-stack listener read as
 * IPv4. */
static void peer_identity(const struct sockaddr_storage *ss, char *buf,
			  size_t len)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
	char host[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
		inet_ntop(AF_INET, &s6->sin6_addr.s6_addr[12], host,
			  sizeof(host));
	else if (ss->ss_family == AF_INET6)
		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
	else if (ss->ss_family == AF_INET)
		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
	snprintf(buf, len, "addr:%s", host);
}

/* The attributes of every connection: it becomes an I/O one. */
static void con_attr(const struct ibtrs_srv_ctx *ctx,
		     struct ibtrs_xprt_con_attr *attr)
{
	attr->max_send_wr = 2 * ctx->queue_depth + SRV_EXTRA_RECVS;
	attr->max_recv_wr = ctx->queue_depth + SRV_EXTRA_RECVS + 2;
	attr->max_send_sge = 2;
	attr->timeout_ms = (unsigned int)(ctx->hb.timeout_ns / 1000000);
}

static void hs_close_work(struct ibtrs_work *w)
{
	struct srv_hs *hs = container_of(w, struct srv_hs, close_work);

	srv_hs_close(hs->con, "refused");
}

/*
 * Refuse the handshake of @con with @err (negative): AUTH_RSP tells the
 * client why, and the connection is closed once it left (or by the tick,
 * or by the client), so that the answer is not cut off by a reset.
 */
static void hs_refuse(struct srv_con *con, int err)
{
	struct ibtrs_srv_ctx *ctx = con->ctx;
	struct ibtrs_auth_rsp r = { .err = (uint16_t)-err };
	struct iovec iov = { .iov_base = &con->auth_rsp,
			     .iov_len = sizeof(con->auth_rsp) };

	ibtrs_auth_rsp_encode(&con->auth_rsp, &r);
	con->hs->refused = true;
	con->hs->deadline_ns = ibtrs_now_ns();
	if (ctx->ops->post_send(con->xcon, &iov, 1, 0, IBTRS_XPRT_SIGNALED))
		srv_hs_close(con, "refused");
}

/* An authentication failure: counted, logged (rate-limited), refused. */
static void hs_auth_fail(struct srv_con *con, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void hs_auth_fail(struct srv_con *con, int err, const char *fmt, ...)
{
	char why[192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	atomic_fetch_add(&con->ctx->auth_failed, 1);
	ibtrs_log_rl(IBTRS_LOG_WARN,
		     "client %s refused: authentication failed: %s",
		     con->hs->peer, why);
	hs_refuse(con, err);
}

/* A limit reached: counted, logged (rate-limited), refused. */
static void hs_limit(struct srv_con *con, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void hs_limit(struct srv_con *con, int err, const char *fmt, ...)
{
	char why[192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	atomic_fetch_add(&con->ctx->refused_limit, 1);
	ibtrs_log_rl(IBTRS_LOG_WARN, "client %s refused: %s", con->hs->peer,
		     why);
	hs_refuse(con, err);
}

/*
 * The session for a connection that proved itself (or NULL and *@err):
 * the one it joins, or a new one when there is none and the connection
 * may create it (FIRST, cid 0). A new session gets its secret from an
 * X25519 exchange with @ar's key; the server's public key goes to @pub_s.
 */
static struct ibtrs_srv *
hs_new_sess(struct srv_con *con, const struct ibtrs_auth_req *ar,
	    const struct ibtrs_auth_hs *ah, const struct ibtrs_psk *psk,
	    const char *identity, struct srv_ident *id,
	    uint8_t pub_s[IBTRS_AUTH_KEY_LEN], int *err)
{
	struct ibtrs_srv_ctx *ctx = con->ctx;
	struct srv_hs *hs = con->hs;
	uint8_t priv[IBTRS_AUTH_KEY_LEN], shared[IBTRS_AUTH_KEY_LEN];
	struct ibtrs_srv *sess;
	int ret;

	if (!srv_ident_may_open(ctx, id)) {
		*err = -EUSERS;
		hs_limit(con, -EUSERS,
			 "identity %s holds %u sessions, its limit", identity,
			 atomic_load(&id->sessions));
		return NULL;
	}
	ret = ibtrs_auth_keypair(priv, pub_s);
	if (!ret)
		ret = ibtrs_auth_x25519(shared, priv, ar->pub);
	ibtrs_wipe(priv, sizeof(priv));
	if (ret) {
		ibtrs_wipe(shared, sizeof(shared));
		*err = -EACCES;
		hs_auth_fail(con, -EACCES, "bad public key");
		return NULL;
	}
	sess = srv_sess_create(ctx, hs->cr.sess_uuid, &ret);
	if (!sess) {
		ibtrs_wipe(shared, sizeof(shared));
		ibtrs_log(IBTRS_LOG_WARN,
			  "client %s refused: cannot create a session: %s",
			  hs->peer, strerror(-ret));
		*err = ret;
		hs_refuse(con, ret);
		return NULL;
	}
	ibtrs_auth_secret(sess->secret, psk ? psk->key : NULL,
			  psk ? psk->len : 0, shared, ah, pub_s);
	ibtrs_wipe(shared, sizeof(shared));
	snprintf(sess->identity, sizeof(sess->identity), "%s", identity);
	sess->keyed = psk != NULL;
	sess->gen_from_1 = hs->cr.caps & IBTRS_CAP_GEN_FROM_1;
	sess->ident = id;
	atomic_fetch_add(&id->sessions, 1);
	return sess;
}

/*
 * Loop thread: AUTH_REQ arrived on @con. Only a connection that proved
 * what it claims is attached to a session (docs/protocol.md,
 * "Authentication"): then, and only then, what a connection request did
 * before is done. Here, on the context's loop, the session it joins is
 * found or made and AUTH_RSP is written; the rest (its path, its pd, its
 * receives, the answer) is its session's loop's: srv_join().
 */
static void srv_auth(struct srv_con *con, uint32_t len)
{
	struct ibtrs_srv_ctx *ctx = con->ctx;
	struct srv_hs *hs = con->hs;
	const struct ibtrs_conn_req *cr = &hs->cr;
	const struct ibtrs_psk *psk = NULL;
	struct ibtrs_auth_req ar;
	struct ibtrs_auth_hs ah = {
		.version = cr->version,
		.cid = cr->cid,
		.cid_num = cr->cid_num,
		.flags = cr->first_conn ? IBTRS_CONN_FIRST : 0,
	};
	struct ibtrs_auth_rsp rsp = { .flags = IBTRS_RSP_INCARNATION };
	uint8_t proof[IBTRS_AUTH_KEY_LEN], pub_s[IBTRS_AUTH_KEY_LEN] = { 0 };
	char identity[IBTRS_IDENTITY_MAX + 1];
	struct ibtrs_srv *sess;
	struct srv_ident *id;
	bool created = false;
	int ret;

	if (ibtrs_auth_req_decode(&hs->req, len, &ar)) {
		atomic_fetch_add(&ctx->proto_errors, 1);
		hs_auth_fail(con, -EPROTO, "malformed AUTH_REQ");
		return;
	}
	memcpy(ah.nc, cr->nonce, IBTRS_NONCE_LEN);
	memcpy(ah.ns, hs->ns, IBTRS_NONCE_LEN);
	memcpy(ah.sess_uuid, cr->sess_uuid, IBTRS_UUID_LEN);
	memcpy(ah.path_uuid, cr->path_uuid, IBTRS_UUID_LEN);
	memcpy(ah.pub_c, ar.pub, IBTRS_AUTH_KEY_LEN);
	ah.identity = ar.identity;

	/* Who: a key's identity where the server has keys. */
	if (ctx->sec.keys) {
		if (!(ar.flags & IBTRS_AUTH_PSK)) {
			hs_auth_fail(con, -EACCES,
				     "no key (this server requires one)");
			return;
		}
		psk = ibtrs_keyring_find(ctx->sec.keys, ar.identity);
		if (!psk) {
			hs_auth_fail(con, -EACCES, "unknown identity %s",
				     ar.identity);
			return;
		}
		ibtrs_auth_proof_psk(proof, psk->key, psk->len, &ah);
		if (!ibtrs_auth_equal(proof, ar.proof_psk)) {
			hs_auth_fail(con, -EACCES, "identity %s: wrong key",
				     ar.identity);
			return;
		}
		/* TLS proved a key too: it must be the same identity's. */
		if (hs->tls_identity[0] &&
		    strcmp(hs->tls_identity, psk->identity)) {
			hs_auth_fail(con, -EACCES,
				     "identity %s, but TLS proved identity %s",
				     psk->identity, hs->tls_identity);
			return;
		}
		snprintf(identity, sizeof(identity), "%s", psk->identity);
	} else {
		snprintf(identity, sizeof(identity), "%s", hs->addr->name);
	}
	id = srv_ident_get(ctx, identity);
	if (!id) {
		hs_refuse(con, -ENOMEM);
		return;
	}
	if (atomic_load(&id->cons) >= ctx->max_cons_per_client) {
		hs_limit(con, -EUSERS,
			 "identity %s holds %u connections, its limit",
			 identity, atomic_load(&id->cons));
		srv_ident_put(ctx, id);
		return;
	}

	/* Which session: joining one takes the proof of its secret. */
	sess = find_sess(ctx, cr->sess_uuid);
	if (sess) {
		if (!(ar.flags & IBTRS_AUTH_JOIN)) {
			hs_auth_fail(
				con, -EACCES,
				"session exists, and no proof of its secret");
			goto put_id;
		}
		ibtrs_auth_proof_sess(proof, sess->secret, &ah);
		if (!ibtrs_auth_equal(proof, ar.proof_sess)) {
			hs_auth_fail(con, -EACCES,
				     "wrong proof of the session's secret");
			goto put_id;
		}
		if (sess->keyed != (psk != NULL) ||
		    (psk && strcmp(sess->identity, identity))) {
			hs_auth_fail(con, -EACCES,
				     "identity %s does not own the session",
				     identity);
			goto put_id;
		}
	}
	if (!sess) {
		if (!cr->first_conn || cr->cid) {
			hs_refuse(con, -ENXIO);
			goto put_id;
		}
		sess = hs_new_sess(con, &ar, &ah, psk, identity, id, pub_s,
				   &ret);
		if (!sess)
			goto put_id;
		created = true;
	}
	rsp.flags |= created ? IBTRS_RSP_NEW_SESS : 0;
	rsp.incarnation = sess->incarnation;
	memcpy(rsp.pub, pub_s, sizeof(pub_s));
	if (psk)
		ibtrs_auth_proof_srv(rsp.proof, psk->key, psk->len, &ah,
				     created ? pub_s : NULL, rsp.flags,
				     rsp.incarnation);
	else
		ibtrs_auth_proof_srv(rsp.proof, sess->secret,
				     IBTRS_AUTH_KEY_LEN, &ah,
				     created ? pub_s : NULL, rsp.flags,
				     rsp.incarnation);
	ibtrs_auth_rsp_encode(&con->auth_rsp, &rsp);
	ibtrs_wipe(&rsp, sizeof(rsp));
	ibtrs_wipe(proof, sizeof(proof));

	/*
	 * Proved: the connection leaves the half-open list (the tick no
	 * longer times it out; its counts stay until it joined), counts as
	 * its client's (first: without keys that is the record of its
	 * address) and holds its session. Its path is the session's loop's
	 * business: the connection goes there to join it (srv_join()).
	 */
	hs_unlist(hs);
	hs->created = created;
	hs->req_len = len;
	con->ident = id;
	atomic_fetch_add(&id->cons, 1);
	srv_ident_put(ctx, id);
	atomic_fetch_add(&sess->refs, 1);
	con->sess = sess;
	if (!cr->cid)
		ibtrs_log(IBTRS_LOG_DEBUG, "client %s: identity %s, session %s",
			  hs->peer, identity, created ? "new" : "joined");
	if (sess->sl->loop == con->loop) {
		srv_join(con);
		return;
	}
	/* Not from within this receive: its event is still running. */
	con->joining = true;
	ibtrs_loop_queue(con->loop, &con->join_work);
	return;

put_id:
	srv_ident_put(ctx, id);
}

/* The context's loop: a connection back from a session that ended. */
static void srv_auth_again(struct srv_con *con)
{
	struct ibtrs_srv_ctx *ctx = con->ctx;
	struct srv_hs *hs = con->hs;

	if (ctx->closing) {
		srv_hs_close(con, "server closing");
		return;
	}
	hs->listed = true;
	hs->next = ctx->handshakes;
	ctx->handshakes = hs;
	srv_auth(con, hs->req_len);
}

static void srv_con_back(struct ibtrs_xprt_con *xcon, int err)
{
	struct srv_con *con = xcon->ctx;

	if (err) {
		srv_hs_close(con, "hand-over failed");
		return;
	}
	srv_auth_again(con);
}

/*
 * The session's loop: the session of a proved connection ended before it
 * joined (its last path was the one it replaces, or it ended meanwhile).
 * The context's loop looks again: a new session, as the connection would
 * have found without the old one.
 */
static void srv_rejoin(struct srv_con *con)
{
	struct ibtrs_srv_ctx *ctx = con->ctx;
	struct ibtrs_srv *sess = con->sess;
	struct ibtrs_loop *from = con->loop;
	int ret;

	con->sess = NULL;
	con->hs->created = false;
	srv_ident_drop(ctx, con->ident, &con->ident->cons);
	con->ident = NULL;
	srv_sess_put(sess);
	if (from == ctx->loop) {
		srv_auth_again(con);
		return;
	}
	con->loop = ctx->loop;
	ret = ctx->ops->move(con->xcon, ctx->loop, srv_con_back);
	if (ret) {
		con->loop = from;
		srv_hs_close(con, "hand-over failed");
	}
}

/*
 * The session's loop, the connection on it: what a connection request
 * did before is done now (a reconnecting path replaces its old self, a
 * new path is made), the connection moves to the session's pd, gets its
 * receives, and AUTH_RSP (made by srv_auth()) tells the client the
 * session and proves the server.
 */
static void srv_join(struct srv_con *con)
{
	struct ibtrs_srv_ctx *ctx = con->ctx;
	struct srv_hs *hs = con->hs;
	const struct ibtrs_conn_req *cr = &hs->cr;
	struct ibtrs_srv *sess = con->sess;
	struct iovec iov = { .iov_base = &con->auth_rsp,
			     .iov_len = sizeof(con->auth_rsp) };
	struct srv_path *path;
	unsigned int i;
	int ret;

	con->joining = false;
	srv_sess_on_loop(sess);
	path = sess->dying ? NULL : find_path(sess, cr->path_uuid);
	if (path && !cr->cid) {
		/* The client reconnects this path: the old one is stale. */
		srv_path_close(path, "replaced by a reconnect");
		path = NULL;
	}
	if (sess->dying) {
		srv_rejoin(con);
		return;
	}
	if (!path) {
		if (cr->cid) {
			hs_refuse(con, -ENXIO);
			goto drop_empty;
		}
		if (sess->nr_paths >= IBTRS_MAX_PATHS) {
			hs_limit(con, -ENOSPC,
				 "session holds %u paths, the limit",
				 sess->nr_paths);
			goto drop_empty;
		}
		path = srv_path_add(sess, cr->path_uuid, cr->cid_num, hs->peer);
		if (!path) {
			hs_refuse(con, -ENOMEM);
			goto drop_empty;
		}
	} else if (path->cid_num != cr->cid_num || path->cons[cr->cid] ||
		   path->connected) {
		hs_refuse(con, -EBUSY);
		return;
	}

	/* Into the session: its memory becomes reachable now. */
	ret = ctx->ops->bind_pd(con->xcon, sess->pd);
	if (ret) {
		ibtrs_log(IBTRS_LOG_WARN, "client %s: connection %u failed: %s",
			  hs->peer, cr->cid, strerror(-ret));
		hs_refuse(con, ret);
		srv_path_close(path, "connection setup failed");
		return;
	}
	con->path = path;
	con->cid = cr->cid;
	path->cons[cr->cid] = con;
	path->nr_cons++;
	hs_free(con);
	/* Its completions are its session's from now on. */
	con->xcon->handler = &srv_io_handler;

	/* Receives first: con 0's first one takes INFO_REQ. */
	ret = 0;
	if (!con->cid)
		ret = ctx->ops->post_recv(con->xcon, con->info_buf,
					  sizeof(con->info_buf), WR_ID_INFO);
	for (i = 0; !ret && i < ctx->queue_depth + SRV_EXTRA_RECVS; i++)
		ret = ctx->ops->post_recv(con->xcon, NULL, 0, WR_ID_IMM);
	if (!ret)
		ret = ctx->ops->post_send(con->xcon, &iov, 1, 0, 0);
	if (ret) {
		ibtrs_log(IBTRS_LOG_WARN,
			  "session %s: connection %u failed: %s",
			  sess->sessname, con->cid, strerror(-ret));
		srv_path_close(path, "connection setup failed");
	}
	return;

drop_empty:
	/* A session made for this request goes with it; one waiting for its
	 * client to return stays. */
	if (hs->created)
		srv_sess_end_if_empty(sess);
}

static void srv_con_arrived(struct ibtrs_xprt_con *xcon, int err)
{
	struct srv_con *con = xcon->ctx;

	if (err) {
		srv_hs_close(con, "hand-over failed");
		return;
	}
	srv_join(con);
}

/* The context's loop, off the event batch: hand it to its session's. */
static void con_join_work(struct ibtrs_work *w)
{
	struct srv_con *con = container_of(w, struct srv_con, join_work);
	struct ibtrs_srv_ctx *ctx = con->ctx;
	struct ibtrs_loop *to = con->sess->sl->loop;
	int ret;

	if (!con->joining)
		return;
	if (ctx->closing) {
		srv_hs_close(con, "server closing");
		return;
	}
	/* Its frees go there from now on; nobody else holds it yet. */
	con->loop = to;
	ret = ctx->ops->move(con->xcon, to, srv_con_arrived);
	if (ret) {
		con->loop = ctx->loop;
		ibtrs_log(IBTRS_LOG_WARN,
			  "client %s: hand-over to the session's loop: %s",
			  con->hs->peer, strerror(-ret));
		srv_hs_close(con, "hand-over failed");
	}
}

/*
 * A connection's completions until it joined its session (then
 * srv_io_handler's): before AUTH_REQ, and after a refusal, nothing is
 * taken.
 */
static void srv_hs_wc(struct ibtrs_xprt_con *xcon, const struct ibtrs_wc *wc)
{
	struct srv_con *con = xcon->ctx;

	if (!con->hs)
		return; /* closed: what its disconnect flushed */
	if (wc->opcode == IBTRS_WC_SEND) {
		/* The refusal left (or was flushed): close, but not from
		 * within the send that completed it. */
		if (con->hs->refused)
			ibtrs_loop_queue(con->loop, &con->hs->close_work);
		return;
	}
	/* One AUTH_REQ: nothing may follow it before AUTH_RSP. */
	if (wc->opcode == IBTRS_WC_RECV && wc->wr_id == WR_ID_AUTH &&
	    !con->hs->refused && !con->joining && con->hs->listed) {
		srv_auth(con, wc->byte_len);
		return;
	}
	if (!con->hs->refused) {
		atomic_fetch_add(&con->ctx->proto_errors, 1);
		atomic_fetch_add(&con->ctx->auth_failed, 1);
		ibtrs_log_rl(IBTRS_LOG_WARN,
			     "client %s refused: no AUTH_REQ first",
			     con->hs->peer);
	}
	srv_hs_close(con, "unexpected message before AUTH_REQ");
}

static void srv_hs_err(struct ibtrs_xprt_con *xcon, int err)
{
	srv_hs_close(xcon->ctx, strerror(-err));
}

static const struct ibtrs_xprt_handler srv_hs_handler = {
	.wc = srv_hs_wc,
	.err = srv_hs_err,
};

/*
 * A connection request. Cheap checks only, and no session is touched: a
 * connection joins one only once AUTH_REQ proved it may (srv_auth()).
 * Until then it sits in the context's empty pd with one receive posted,
 * counted against the half-open limits, and the tick closes it if
 * AUTH_REQ does not come in time.
 */
void srv_connreq(void *arg, struct ibtrs_xprt_connreq *req,
		 const struct ibtrs_connreq_info *info)
{
	struct ibtrs_srv_ctx *ctx = arg;
	struct ibtrs_xprt_con_attr attr;
	struct ibtrs_conn_req cr;
	struct ibtrs_conn_rsp r = {
		.version = IBTRS_PROTO_VER,
		.queue_depth = (uint16_t)ctx->queue_depth,
		.max_io_size = ctx->max_io_size,
		.chunk_size = ctx->chunk_size,
		.max_usr_msg = IBTRS_MAX_USR_MSG,
		.flags = IBTRS_RSP_AUTH,
	};
	struct ibtrs_msg_conn_rsp m;
	char peer[IBTRS_SOCKADDR_STR_LEN] = "?";
	char addr_id[IBTRS_IDENTITY_MAX + 1];
	struct srv_ident *addr;
	struct srv_con *con;
	struct srv_hs *hs;
	int ret;

	peer_str(&info->peer, peer, sizeof(peer));
	ret = ibtrs_conn_req_decode(info->priv, sizeof(info->priv), &cr);
	if (ret == -EPROTONOSUPPORT) {
		ibtrs_log(
			IBTRS_LOG_WARN,
			"client %s refused: protocol version %u.%u, this server speaks %u.%u",
			peer, cr.version >> 8, cr.version & 0xff,
			IBTRS_PROTO_VER_MAJOR, IBTRS_PROTO_VER_MINOR);
		reject(ctx, req, ret);
		return;
	}
	if (ret) {
		atomic_fetch_add(&ctx->proto_errors, 1);
		ibtrs_log(IBTRS_LOG_WARN,
			  "client %s refused: bad connection request", peer);
		reject(ctx, req, -EPROTO);
		return;
	}
	if (!(cr.caps & IBTRS_CAP_AUTH)) {
		atomic_fetch_add(&ctx->auth_failed, 1);
		ibtrs_log_rl(
			IBTRS_LOG_WARN,
			"client %s refused: it does not authenticate (protocol %u.%u; this server requires authentication, protocol %u.%u)",
			peer, cr.version >> 8, cr.version & 0xff,
			IBTRS_PROTO_VER_MAJOR, IBTRS_PROTO_VER_MINOR);
		reject(ctx, req, -EACCES);
		return;
	}
	peer_identity(&info->peer, addr_id, sizeof(addr_id));
	addr = srv_ident_get(ctx, addr_id);
	if (!addr) {
		reject(ctx, req, -ENOMEM);
		return;
	}
	if (atomic_load(&addr->handshakes) >= ctx->max_hs_per_client ||
	    atomic_load(&ctx->nr_handshakes) >= SRV_MAX_HANDSHAKES) {
		atomic_fetch_add(&ctx->refused_limit, 1);
		ibtrs_log_rl(
			IBTRS_LOG_WARN,
			"client %s refused: %u handshakes unfinished from %s, %u in all (limits %u, %u)",
			peer, atomic_load(&addr->handshakes), addr_id,
			atomic_load(&ctx->nr_handshakes),
			ctx->max_hs_per_client, SRV_MAX_HANDSHAKES);
		srv_ident_put(ctx, addr);
		reject(ctx, req, -EAGAIN);
		return;
	}
	pthread_mutex_lock(&ctx->lock);
	ret = srv_mem_fits(ctx, srv_con_mem(ctx)) ? 0 : -ENOSPC;
	if (!ret) {
		ctx->mem_used += srv_con_mem(ctx);
		ctx->nr_cons++;
	}
	pthread_mutex_unlock(&ctx->lock);
	if (ret) {
		ibtrs_log_rl(
			IBTRS_LOG_WARN,
			"server: memory limit reached: connection refused");
		srv_ident_put(ctx, addr);
		reject(ctx, req, ret);
		return;
	}
	con = calloc(1, sizeof(*con));
	hs = calloc(1, sizeof(*hs));
	ret = con && hs ? ibtrs_random(hs->ns, sizeof(hs->ns)) : -ENOMEM;
	if (ret) {
		reject(ctx, req, ret);
		goto free_con;
	}
	/* @info goes with @req at accept. */
	snprintf(hs->tls_identity, sizeof(hs->tls_identity), "%s",
		 info->tls_identity);
	memcpy(r.nonce, hs->ns, sizeof(r.nonce));
	ibtrs_conn_rsp_encode(&m, &r);
	con_attr(ctx, &attr);
	ret = ctx->ops->accept(req, ctx->auth_pd, &attr, &m, &con->xcon);
	if (ret)
		goto free_con;
	con->ctx = ctx;
	con->loop = ctx->loop;
	con->hs = hs;
	con->free_work.fn = srv_con_free_work;
	con->join_work.fn = con_join_work;
	atomic_init(&con->refs, 1);
	con->xcon->handler = &srv_hs_handler;
	con->xcon->ctx = con;
	hs->con = con;
	hs->cr = cr;
	hs->addr = addr;
	hs->deadline_ns = ibtrs_now_ns() + ctx->hs_timeout_ns;
	hs->close_work.fn = hs_close_work;
	snprintf(hs->peer, sizeof(hs->peer), "%s", peer);
	atomic_fetch_add(&addr->handshakes, 1);
	atomic_fetch_add(&ctx->nr_handshakes, 1);
	srv_ident_put(ctx, addr); /* the count holds it now */
	hs->listed = true;
	hs->next = ctx->handshakes;
	ctx->handshakes = hs;
	ret = ctx->ops->post_recv(con->xcon, &hs->req, sizeof(hs->req),
				  WR_ID_AUTH);
	if (!ret)
		ret = ctx->ops->start(con->xcon, ctx->loop);
	if (ret) {
		ibtrs_log(IBTRS_LOG_WARN, "client %s: connection failed: %s",
			  peer, strerror(-ret));
		srv_hs_close(con, "start failed");
	}
	return;

free_con:
	if (con && con->xcon)
		ctx->ops->destroy(con->xcon);
	free(con);
	free(hs);
	pthread_mutex_lock(&ctx->lock);
	ctx->nr_cons--;
	pthread_mutex_unlock(&ctx->lock);
	srv_con_mem_put(ctx);
	srv_ident_put(ctx, addr);
}

/* Close the handshakes past their deadline (refused ones included). */
void srv_tick_handshakes(struct ibtrs_srv_ctx *ctx, uint64_t now)
{
	struct srv_hs *hs, *next;

	for (hs = ctx->handshakes; hs; hs = next) {
		next = hs->next;
		if (now < hs->deadline_ns)
			continue;
		if (!hs->refused) {
			atomic_fetch_add(&ctx->refused_limit, 1);
			ibtrs_log_rl(
				IBTRS_LOG_WARN,
				"client %s: no AUTH_REQ within %llu ms: closed",
				hs->peer,
				(unsigned long long)(ctx->hs_timeout_ns /
						     1000000));
		}
		srv_hs_close(hs->con, hs->refused ? "refused" : "timed out");
	}
}
