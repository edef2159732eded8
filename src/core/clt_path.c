// SPDX-License-Identifier: MIT
/*
 * clt_path.c - client paths: connect and INFO exchange, the state machine,
 * failure and failover, reconnect, heartbeats, and the receive side of
 * requests.
 */
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "auth.h"
#include "clt_int.h"
#include "log.h"

/* ------------------------------------------------------------------ */
/* state machine                                                        */

/*
 * The only place path->state changes. Refuses transitions the table does
 * not allow; records every change with its reason in the event log.
 *
 * Only the loop thread takes a path out of CONNECTED: a request posted
 * from the loop thread finds the path as it was checked without taking
 * path->lock (ibtrs_clt_request(), req_reroute()).
 */
static int path_change(struct clt_path *path, enum ibtrs_path_state to,
		       const char *why)
{
	enum ibtrs_path_state from;

	pthread_rwlock_wrlock(&path->lock);
	from = (enum ibtrs_path_state)atomic_load(&path->state);
	assert(from != IBTRS_PATH_CONNECTED ||
	       ibtrs_loop_on_thread(path->sess->loop));
	if (!ibtrs_path_transition_ok(from, to)) {
		pthread_rwlock_unlock(&path->lock);
		ibtrs_log(IBTRS_LOG_DEBUG,
			  "session %s: path %s: refused %s -> %s (%s)",
			  path->sess->sessname, path_name(path),
			  ibtrs_path_state_str(from), ibtrs_path_state_str(to),
			  why);
		return -EINVAL;
	}
	atomic_store(&path->state, (int)to);
	pthread_rwlock_unlock(&path->lock);
	if (from == IBTRS_PATH_CONNECTED) {
		/* Under the lock: sess_wait_closed() looks, then waits. */
		pthread_mutex_lock(&path->sess->conn_lock);
		pthread_cond_broadcast(&path->sess->closed_cond);
		pthread_mutex_unlock(&path->sess->conn_lock);
	}
	clt_event(path->sess, (int)path->idx, "%s: %s -> %s: %s",
		  path_name(path), ibtrs_path_state_str(from),
		  ibtrs_path_state_str(to), why);
	return 0;
}

static enum ibtrs_path_state path_state(const struct clt_path *path)
{
	return (enum ibtrs_path_state)atomic_load(&path->state);
}

/* ------------------------------------------------------------------ */
/* up and down                                                          */

static void *connector_thread(void *arg);

/*
 * Under conn_lock: the connector thread runs from the first reconnect a
 * session schedules on, so that a session whose paths stay up costs no
 * thread but its loop's (which may be shared).
 */
static void connector_want(struct ibtrs_clt *sess)
{
	int err;

	if (sess->connector_started || sess->conn_stop)
		return;
	err = pthread_create(&sess->connector, NULL, connector_thread, sess);
	if (err)
		ibtrs_log(IBTRS_LOG_ERR,
			  "session %s: cannot start the connector: %s",
			  sess->sessname, strerror(err));
	else
		sess->connector_started = true;
}

static void schedule_reconnect(struct clt_path *path, uint64_t delay_ns)
{
	struct ibtrs_clt *sess = path->sess;
	uint32_t jitter = 0;

	if (getrandom(&jitter, sizeof(jitter), GRND_NONBLOCK) < 0)
		jitter = (uint32_t)ibtrs_now_ns();
	delay_ns += (uint64_t)(jitter % CLT_RECONNECT_JITTER_MS) * 1000000;
	pthread_mutex_lock(&sess->conn_lock);
	path->next_try_ns = ibtrs_now_ns() + delay_ns;
	connector_want(sess);
	pthread_cond_signal(&sess->conn_cond);
	pthread_mutex_unlock(&sess->conn_lock);
}

static bool may_reconnect(struct clt_path *path)
{
	struct ibtrs_clt *sess = path->sess;

	return !atomic_load(&sess->closing) &&
	       !atomic_load(&path->no_reconnect) &&
	       sess->max_reconnect_attempts != 0 &&
	       (sess->max_reconnect_attempts < 0 ||
		atomic_load(&path->attempts) < sess->max_reconnect_attempts);
}

static void disconnect_cons(struct clt_path *path)
{
	unsigned int i;

	for (i = 0; i < path->con_num; i++)
		if (path->cons[i].xcon)
			path->sess->ops->disconnect(path->cons[i].xcon);
}

static void path_counted_down(struct clt_path *path)
{
	struct ibtrs_clt *sess = path->sess;

	if (!path->up)
		return;
	path->up = false;
	if (!--sess->paths_up && sess->opened) {
		clt_event(sess, -1, "no path connected");
		if (sess->link_ev)
			sess->link_ev(sess->priv,
				      IBTRS_CLT_LINK_EV_DISCONNECTED);
	}
}

/*
 * Loop thread: a connected path failed. Its requests move on, and it is
 * reconnected unless the policy says otherwise.
 */
void clt_path_fail(struct clt_path *path, const char *why)
{
	struct ibtrs_clt *sess = path->sess;
	bool retry = may_reconnect(path);

	if (path_state(path) != IBTRS_PATH_CONNECTED)
		return;
	if (path_change(path,
			retry ? IBTRS_PATH_RECONNECTING : IBTRS_PATH_CLOSED,
			why))
		return;
	disconnect_cons(path);
	path_counted_down(path);
	clt_req_failover(path);
	if (retry)
		schedule_reconnect(path, (uint64_t)sess->reconnect_delay_sec *
						 1000000000ull);
	if (!clt_sess_has_hope(sess))
		clt_fail_pending(sess, -ECONNABORTED);
}

/* Loop thread: close a path for good (session close, removal). */
void clt_path_close(struct clt_path *path)
{
	enum ibtrs_path_state st = path_state(path);

	if (st == IBTRS_PATH_CLOSED || st == IBTRS_PATH_DEAD)
		return;
	if (st != IBTRS_PATH_CLOSING &&
	    path_change(path, IBTRS_PATH_CLOSING, "closing"))
		return;
	disconnect_cons(path);
	path_counted_down(path);
	clt_req_failover(path);
	path_change(path, IBTRS_PATH_CLOSED, "closed");
}

/*
 * Loop thread: tell the server the session ends, so that it frees it
 * without a grace period. The server closes the path when it reads this;
 * closing first here could reset the connection before it is read.
 */
void clt_path_say_close(struct clt_path *path)
{
	if (path_state(path) == IBTRS_PATH_CONNECTED && path->cons[0].xcon &&
	    !clt_fault_hit(path, CLT_FAULT_CTL_TX, NULL))
		path->sess->ops->post_write(path->cons[0].xcon, NULL, 0, 0, 0,
					    ibtrs_imm_hb(IBTRS_IMM_CLOSE), 0,
					    IBTRS_XPRT_IMM);
}

/* A frame the backend refused (-EPROTO from its error callback). */
static void path_count_xprt_error(struct clt_path *path, int err)
{
	if (err != -EPROTO)
		return;
	atomic_fetch_add(&path->proto_errors, 1);
	atomic_fetch_add(&path->proto_xprt, 1);
	ibtrs_log(IBTRS_LOG_ERR,
		  "session %s: path %s: transport protocol error",
		  path->sess->sessname, path_name(path));
}

static void path_proto_error(struct clt_path *path, const char *what)
{
	char why[96];

	atomic_fetch_add(&path->proto_errors, 1);
	ibtrs_log(IBTRS_LOG_ERR, "session %s: path %s: protocol error: %s",
		  path->sess->sessname, path_name(path), what);
	snprintf(why, sizeof(why), "protocol error: %s", what);
	clt_path_fail(path, why);
}

/*
 * Loop thread, @path just joined a server session: is it the one the
 * session's requests went to? A join that lands on another incarnation
 * (the server restarted, or ended the session: its grace ran out, or an
 * operator ended it) is a session loss: the new session has no record
 * of what the old one ran. The session's epoch moves on; the paths
 * still up on the old incarnation are failed, and every request posted
 * to it and not answered has an unknown outcome (req_reroute()).
 */
static void path_check_incarnation(struct clt_path *path)
{
	struct ibtrs_clt *sess = path->sess;
	unsigned int i, n = atomic_load(&sess->path_cnt);
	char why[96];

	if (!(path->rsp_flags & IBTRS_RSP_INCARNATION)) {
		if (!sess->inc_unsupported_logged)
			ibtrs_log(
				IBTRS_LOG_WARN,
				"session %s: path %s: the server tells no incarnation: a restart cannot be detected",
				sess->sessname, path_name(path));
		sess->inc_unsupported_logged = true;
		path->epoch = sess->epoch;
		return;
	}
	if (!sess->inc_known || path->incarnation == sess->incarnation) {
		sess->inc_known = true;
		sess->incarnation = path->incarnation;
		atomic_store(&sess->inc_shown, path->incarnation);
		path->epoch = sess->epoch;
		return;
	}
	snprintf(why, sizeof(why), "%s (incarnation %016llx, was %016llx)",
		 path->rsp_flags & IBTRS_RSP_NEW_SESS
			 ? "server made a new session"
			 : "server session changed",
		 (unsigned long long)path->incarnation,
		 (unsigned long long)sess->incarnation);
	sess->incarnation = path->incarnation;
	atomic_store(&sess->inc_shown, path->incarnation);
	sess->epoch++;
	path->epoch = sess->epoch;
	atomic_fetch_add(&sess->session_losses, 1);
	pthread_mutex_lock(&sess->ev_lock);
	snprintf(sess->loss_reason, sizeof(sess->loss_reason), "%s", why);
	pthread_mutex_unlock(&sess->ev_lock);
	clt_event(sess, (int)path->idx, "session lost: %s", why);
	ibtrs_log(IBTRS_LOG_WARN, "session %s: session lost: %s",
		  sess->sessname, why);
	/* Paths still up on the old incarnation lead nowhere now. */
	for (i = 0; i < n; i++) {
		struct clt_path *p = sess->paths[i];

		if (p != path && path_state(p) == IBTRS_PATH_CONNECTED &&
		    p->epoch != sess->epoch)
			clt_path_fail(p, "server session lost");
	}
}

/* Loop thread: a connect finished; the path carries requests again. */
static void path_up_fn(void *arg)
{
	struct clt_path *path = arg;
	struct ibtrs_clt *sess = path->sess;

	if (atomic_load(&path->no_reconnect)) {
		/* Disconnected on request while it was connecting. */
		disconnect_cons(path);
		path_change(path, IBTRS_PATH_CLOSED, "disconnected on request");
		return;
	}
	path_check_incarnation(path);
	if (path_change(path, IBTRS_PATH_CONNECTED, "connected"))
		return;
	atomic_store(&path->hb_rtt_ns, 0);
	path->last_rx_ns = ibtrs_now_ns();
	path->last_hb_tx_ns = 0;
	path->hb_sent_ns = 0;
	path->up = true;
	if (!sess->paths_up++ && sess->opened) {
		clt_event(sess, -1, "reconnected");
		if (sess->link_ev)
			sess->link_ev(sess->priv,
				      IBTRS_CLT_LINK_EV_RECONNECTED);
	}
	clt_req_resubmit_pending(sess);
}

/* ------------------------------------------------------------------ */
/* receive side                                                         */

static void process_info(struct clt_con *con, uint32_t len)
{
	struct clt_path *path = con->path;
	int n;

	n = ibtrs_info_rsp_decode(path->info_buf, len, path->info_desc,
				  IBTRS_MAX_INFO_DESCS);
	pthread_mutex_lock(&path->info_lock);
	path->info_cnt = n;
	path->info_status = n > 0 ? 1 : -EPROTO;
	pthread_cond_signal(&path->info_cond);
	pthread_mutex_unlock(&path->info_lock);
}

static void clt_con_wc(struct ibtrs_xprt_con *xcon, const struct ibtrs_wc *wc)
{
	struct clt_con *con = xcon->ctx;
	struct clt_path *path = con->path;
	struct ibtrs_clt *sess = path->sess;
	const char *what;

	switch (wc->opcode) {
	case IBTRS_WC_WRITE:
		/* A flushed send: the path's failover takes the request. */
		if (wc->status)
			return;
		clt_req_sent(sess, wc->wr_id);
		return;
	case IBTRS_WC_SEND:
		return;
	case IBTRS_WC_RECV:
		if (wc->wr_id == WR_ID_AUTH) {
			/* The connecting thread checks it. */
			pthread_mutex_lock(&path->info_lock);
			con->auth_len = wc->byte_len;
			con->auth_status = 1;
			pthread_cond_broadcast(&path->info_cond);
			pthread_mutex_unlock(&path->info_lock);
			return;
		}
		if (wc->wr_id != WR_ID_INFO || con->cid) {
			path_proto_error(path, "unexpected message");
			return;
		}
		process_info(con, wc->byte_len);
		return;
	case IBTRS_WC_RECV_IMM:
		break;
	}
	if (path_state(path) != IBTRS_PATH_CONNECTED &&
	    path_state(path) != IBTRS_PATH_CLOSING)
		return;
	if (clt_fault_hit(path, CLT_FAULT_RX, NULL)) {
		/* As if it never arrived. */
		sess->ops->post_recv(xcon, NULL, 0, WR_ID_IMM);
		return;
	}
	path->last_rx_ns = ibtrs_loop_now_ns(sess->loop);
	switch (ibtrs_imm_type(wc->imm)) {
	case IBTRS_IMM_IO_RSP:
		what = clt_req_response(con, wc->imm);
		if (what) {
			path_proto_error(path, what);
			return;
		}
		break;
	case IBTRS_IMM_HB:
		sess->ops->post_write(xcon, NULL, 0, 0, 0,
				      ibtrs_imm_hb(IBTRS_IMM_HB_ACK), 0,
				      IBTRS_XPRT_IMM);
		break;
	case IBTRS_IMM_HB_ACK:
		/* The heartbeat may have left in this same batch: the batch's
		 * time can be older than hb_sent_ns, the clock is not. */
		if (path->hb_sent_ns) {
			atomic_store(&path->hb_rtt_ns,
				     ibtrs_now_ns() - path->hb_sent_ns);
			path->hb_sent_ns = 0;
		}
		break;
	default:
		path_proto_error(path, "unknown immediate type");
		return;
	}
	if (path_state(path) == IBTRS_PATH_CONNECTED ||
	    path_state(path) == IBTRS_PATH_CLOSING)
		sess->ops->post_recv(xcon, NULL, 0, WR_ID_IMM);
}

static void clt_con_err(struct ibtrs_xprt_con *xcon, int err)
{
	struct clt_con *con = xcon->ctx;
	struct clt_path *path = con->path;
	char why[80];

	path_count_xprt_error(path, err);
	if (path_state(path) == IBTRS_PATH_CONNECTING) {
		/* The connecting thread is waiting for INFO: wake it. */
		pthread_mutex_lock(&path->info_lock);
		if (!path->info_status)
			path->info_status = err;
		pthread_cond_broadcast(&path->info_cond);
		pthread_mutex_unlock(&path->info_lock);
		return;
	}
	/* A cut cable brings no reset either: the heartbeat will tell. */
	if (clt_fault_hit(path, CLT_FAULT_ERR, NULL))
		return;
	snprintf(why, sizeof(why), "connection %u: %s", con->cid,
		 strerror(-err));
	clt_path_fail(path, why);
}

const struct ibtrs_xprt_handler clt_handler = {
	.wc = clt_con_wc,
	.err = clt_con_err,
};

/* ------------------------------------------------------------------ */
/* connect                                                              */

static void destroy_fn(void *arg)
{
	struct clt_path *path = arg;
	unsigned int i;

	disconnect_cons(path);
	for (i = 0; i < path->con_num; i++) {
		path->sess->ops->destroy(path->cons[i].xcon);
		path->cons[i].xcon = NULL;
	}
}

/*
 * Disconnect and free every connection of @path. Runs as loop work: the
 * loop may hold events of these connections in the batch it is handling.
 */
void clt_path_destroy_cons(struct clt_path *path)
{
	ibtrs_loop_call(path->sess->loop, destroy_fn, path);
}

/* What a server's refusal @err (negative) says, beyond its errno. */
static const char *refusal_hint(int err)
{
	switch (err) {
	case -EUSERS:
		return " (this client is at the server's limit of sessions or connections per client)";
	case -EAGAIN:
		return " (too many unfinished handshakes from this address)";
	case -EACCES:
		return " (this client does not authenticate)";
	default:
		return "";
	}
}

/*
 * Wait for AUTH_RSP on @con (or a failure of the path's connections).
 * Return: 0 with the answer in @con->auth_buf, or a negative errno.
 */
static int con_wait_auth(struct clt_con *con)
{
	struct clt_path *path = con->path;
	struct timespec ts;
	int ret = 0;

	ibtrs_deadline_in(&ts, path->sess->connect_timeout_ms);
	pthread_mutex_lock(&path->info_lock);
	while (!con->auth_status && path->info_status >= 0 && !ret)
		ret = -pthread_cond_timedwait(&path->info_cond,
					      &path->info_lock, &ts);
	if (con->auth_status)
		ret = 0;
	else if (path->info_status < 0)
		ret = path->info_status;
	pthread_mutex_unlock(&path->info_lock);
	return ret;
}

/*
 * The handshake of a started connection (docs/protocol.md,
 * "Authentication"): AUTH_REQ with the proof of the key (with keys) and
 * of the session's secret (when this client holds it), then AUTH_RSP,
 * whose proof must be the server's. The connection that created the
 * server session brings its secret.
 */
static int con_auth(struct clt_con *con, const struct ibtrs_conn_req *cr,
		    const uint8_t ns[IBTRS_NONCE_LEN])
{
	struct clt_path *path = con->path;
	struct ibtrs_clt *sess = path->sess;
	const struct ibtrs_psk *psk = sess->sec.psk;
	struct ibtrs_auth_hs ah = {
		.version = cr->version,
		.cid = cr->cid,
		.cid_num = cr->cid_num,
		.flags = cr->first_conn ? IBTRS_CONN_FIRST : 0,
		.identity = psk ? psk->identity : "",
	};
	struct iovec iov = { .iov_base = &con->auth_req,
			     .iov_len = sizeof(con->auth_req) };
	uint8_t priv[IBTRS_AUTH_KEY_LEN], secret[IBTRS_AUTH_KEY_LEN];
	uint8_t shared[IBTRS_AUTH_KEY_LEN], proof[IBTRS_AUTH_KEY_LEN];
	struct ibtrs_auth_req ar;
	struct ibtrs_auth_rsp rsp;
	bool has_secret, created;
	int ret;

	memset(&ar, 0, sizeof(ar));
	memcpy(ah.nc, cr->nonce, IBTRS_NONCE_LEN);
	memcpy(ah.ns, ns, IBTRS_NONCE_LEN);
	memcpy(ah.sess_uuid, cr->sess_uuid, IBTRS_UUID_LEN);
	memcpy(ah.path_uuid, cr->path_uuid, IBTRS_UUID_LEN);
	ret = ibtrs_auth_keypair(priv, ar.pub);
	if (ret)
		return ret;
	memcpy(ah.pub_c, ar.pub, IBTRS_AUTH_KEY_LEN);
	if (psk) {
		ar.flags |= IBTRS_AUTH_PSK;
		ar.id_len = (uint8_t)strlen(psk->identity);
		memcpy(ar.identity, psk->identity, ar.id_len);
		ibtrs_auth_proof_psk(ar.proof_psk, psk->key, psk->len, &ah);
	}
	pthread_mutex_lock(&sess->auth_lock);
	has_secret = sess->has_secret;
	memcpy(secret, sess->secret, sizeof(secret));
	pthread_mutex_unlock(&sess->auth_lock);
	if (has_secret) {
		ar.flags |= IBTRS_AUTH_JOIN;
		ibtrs_auth_proof_sess(ar.proof_sess, secret, &ah);
	}
	ibtrs_auth_req_encode(&con->auth_req, &ar);
	ibtrs_wipe(&ar, sizeof(ar));
	ret = sess->ops->post_send(con->xcon, &iov, 1, 0, 0);
	if (!ret)
		ret = con_wait_auth(con);
	if (!ret &&
	    ibtrs_auth_rsp_decode(&con->auth_buf, con->auth_len, &rsp)) {
		ibtrs_log(IBTRS_LOG_ERR,
			  "session %s: path %s: connection %u: bad AUTH_RSP",
			  sess->sessname, path_name(path), con->cid);
		ret = -EPROTO;
	}
	if (!ret && rsp.err) {
		ret = -(int)rsp.err;
		if (ret == -EACCES)
			ibtrs_log(
				IBTRS_LOG_ERR,
				"session %s: path %s: server refused the authentication of connection %u (%s): %s",
				sess->sessname, path_name(path), con->cid,
				psk ? "wrong key or unknown identity"
				    : "no key, or no proof of the session",
				strerror(-ret));
		else
			ibtrs_log(
				IBTRS_LOG_ERR,
				"session %s: path %s: server refused connection %u: %s%s",
				sess->sessname, path_name(path), con->cid,
				strerror(-ret), refusal_hint(ret));
	}
	if (ret)
		goto out;
	created = rsp.flags & IBTRS_RSP_NEW_SESS;
	if (created) {
		/* The session is new: its secret from this exchange. */
		ret = ibtrs_auth_x25519(shared, priv, rsp.pub);
		if (ret) {
			ibtrs_log(
				IBTRS_LOG_ERR,
				"session %s: path %s: server sent a bad public key",
				sess->sessname, path_name(path));
			ret = -EACCES;
			goto out;
		}
		ibtrs_auth_secret(secret, psk ? psk->key : NULL,
				  psk ? psk->len : 0, shared, &ah, rsp.pub);
	} else if (!has_secret && !psk) {
		ibtrs_log(
			IBTRS_LOG_ERR,
			"session %s: path %s: server joined this client to a session it never made",
			sess->sessname, path_name(path));
		ret = -EACCES;
		goto out;
	}
	if (psk)
		ibtrs_auth_proof_srv(proof, psk->key, psk->len, &ah,
				     created ? rsp.pub : NULL, rsp.flags,
				     rsp.incarnation);
	else
		ibtrs_auth_proof_srv(proof, secret, sizeof(secret), &ah,
				     created ? rsp.pub : NULL, rsp.flags,
				     rsp.incarnation);
	if (!ibtrs_auth_equal(proof, rsp.proof)) {
		ibtrs_log(
			IBTRS_LOG_ERR,
			"session %s: path %s: server did not prove %s: refused",
			sess->sessname, path_name(path),
			psk ? "the key" : "the session's secret");
		ret = -EACCES;
		goto out;
	}
	if (created) {
		pthread_mutex_lock(&sess->auth_lock);
		memcpy(sess->secret, secret, sizeof(secret));
		sess->has_secret = true;
		pthread_mutex_unlock(&sess->auth_lock);
	}
	if (!con->cid) {
		path->rsp_flags = rsp.flags;
		path->incarnation = rsp.incarnation;
	} else if (rsp.incarnation != path->incarnation) {
		/* The connections of one path join one session. */
		ret = -EPROTO;
	}
out:
	ibtrs_wipe(priv, sizeof(priv));
	ibtrs_wipe(secret, sizeof(secret));
	ibtrs_wipe(shared, sizeof(shared));
	return ret;
}

static int con_connect(struct clt_path *path, unsigned int cid)
{
	struct ibtrs_clt *sess = path->sess;
	struct clt_con *con = &path->cons[cid];
	struct ibtrs_conn_req cr = {
		.version = IBTRS_PROTO_VER,
		.cid = (uint16_t)cid,
		.cid_num = (uint16_t)path->con_num,
		.recon_cnt = path->recon_cnt,
		.first_conn = cid == 0,
		.caps = IBTRS_CAP_GEN_FROM_1 | IBTRS_CAP_AUTH,
	};
	struct ibtrs_xprt_tls tls = { .mode = sess->sec.tls,
				      .keys = sess->sec.keys,
				      .psk = sess->sec.psk };
	struct ibtrs_xprt_con_attr attr = {
		.tls = &tls,
		.max_send_wr = IBTRS_MAX_QUEUE_DEPTH + CLT_EXTRA_RECVS,
		.max_recv_wr = IBTRS_MAX_QUEUE_DEPTH + CLT_EXTRA_RECVS + 2,
		.max_send_sge = sess->max_segments + 1u,
		.timeout_ms = (unsigned int)(sess->hb.timeout_ns / 1000000),
	};
	uint8_t rsp[IBTRS_XPRT_PRIV_LEN];
	struct ibtrs_msg_conn_req m;
	struct ibtrs_conn_rsp r;
	unsigned int i;
	int ret;

	if (sess->have_geometry)
		attr.max_send_wr = attr.max_recv_wr =
			sess->queue_depth + CLT_EXTRA_RECVS + 2;
	memcpy(cr.sess_uuid, sess->uuid, IBTRS_UUID_LEN);
	memcpy(cr.path_uuid, path->uuid, IBTRS_UUID_LEN);
	ret = ibtrs_random(cr.nonce, sizeof(cr.nonce));
	if (ret)
		return ret;
	ibtrs_conn_req_encode(&m, &cr);
	memset(rsp, 0, sizeof(rsp));
	ret = sess->ops->connect(
		sess->pd, path->has_src ? (struct sockaddr *)&path->src : NULL,
		(struct sockaddr *)&path->dst, &attr, &m, rsp,
		sess->connect_timeout_ms, &con->xcon);
	if (ret && ret != -ECONNREFUSED)
		return ret;
	if (ret && !con->xcon &&
	    ibtrs_conn_rsp_decode(rsp, sizeof(rsp), &r) == -EPROTO)
		return ret; /* refused by the network: no answer at all */
	ret = ibtrs_conn_rsp_decode(rsp, sizeof(rsp), &r);
	if (ret == -EPROTONOSUPPORT) {
		ibtrs_log(
			IBTRS_LOG_ERR,
			"session %s: path %s: server speaks protocol %u.%u, this client %u.%u",
			sess->sessname, path_name(path), r.version >> 8,
			r.version & 0xff, IBTRS_PROTO_VER_MAJOR,
			IBTRS_PROTO_VER_MINOR);
		ret = -EPROTO;
	} else if (!ret && r.err) {
		ret = -(int)r.err;
		ibtrs_log(
			IBTRS_LOG_ERR,
			"session %s: path %s: server refused connection %u: %s%s",
			sess->sessname, path_name(path), cid, strerror(-ret),
			refusal_hint(ret));
		/* The server's word for a version mismatch. */
		if (ret == -EPROTONOSUPPORT)
			ret = -EPROTO;
	} else if (!ret && !con->xcon) {
		ret = -ECONNREFUSED;
	} else if (!ret && !(r.flags & IBTRS_RSP_AUTH)) {
		ibtrs_log(
			IBTRS_LOG_ERR,
			"session %s: path %s: server does not authenticate (protocol %u.%u): refused",
			sess->sessname, path_name(path), r.version >> 8,
			r.version & 0xff);
		ret = -EPROTO;
	}
	if (!ret)
		ret = clt_set_geometry(sess, &r);
	if (ret) {
		if (con->xcon) {
			sess->ops->disconnect(con->xcon);
			sess->ops->destroy(con->xcon);
			con->xcon = NULL;
		}
		return ret;
	}
	con->path = path;
	con->cid = cid;
	con->xcon->handler = &clt_handler;
	con->xcon->ctx = con;
	pthread_mutex_lock(&path->info_lock);
	con->auth_status = 0;
	pthread_mutex_unlock(&path->info_lock);
	/* AUTH_RSP comes first, then INFO_RSP on con 0, then immediates. */
	ret = sess->ops->post_recv(con->xcon, &con->auth_buf,
				   sizeof(con->auth_buf), WR_ID_AUTH);
	if (!ret && !cid)
		ret = sess->ops->post_recv(con->xcon, path->info_buf,
					   sizeof(path->info_buf), WR_ID_INFO);
	for (i = 0; !ret && i < sess->queue_depth + CLT_EXTRA_RECVS; i++)
		ret = sess->ops->post_recv(con->xcon, NULL, 0, WR_ID_IMM);
	if (!ret)
		ret = sess->ops->start(con->xcon, sess->loop);
	if (!ret)
		ret = con_auth(con, &cr, r.nonce);
	return ret;
}

/* Build the per-chunk table from the server's descriptors. */
static int path_set_rbufs(struct clt_path *path)
{
	struct ibtrs_clt *sess = path->sess;
	uint64_t total = 0;
	uint32_t chunk = 0;
	int i;

	for (i = 0; i < path->info_cnt; i++) {
		if (path->info_desc[i].len % sess->chunk_size)
			return -EPROTO;
		total += path->info_desc[i].len;
	}
	if (total != (uint64_t)sess->queue_depth * sess->chunk_size)
		return -EPROTO;
	if (!path->rbufs)
		path->rbufs = calloc(sess->queue_depth, sizeof(*path->rbufs));
	if (!path->rbufs)
		return -ENOMEM;
	for (i = 0; i < path->info_cnt; i++) {
		uint32_t n = path->info_desc[i].len / sess->chunk_size, j;

		for (j = 0; j < n; j++, chunk++) {
			path->rbufs[chunk].addr =
				path->info_desc[i].addr +
				(uint64_t)j * sess->chunk_size;
			path->rbufs[chunk].key = path->info_desc[i].key;
		}
	}
	return 0;
}

/* Connect every connection of @path and exchange INFO; blocks. */
static int path_handshake(struct clt_path *path)
{
	struct ibtrs_clt *sess = path->sess;
	struct iovec iov = { .iov_base = &path->info_req,
			     .iov_len = sizeof(path->info_req) };
	struct timespec ts;
	unsigned int cid;
	int ret = 0;

	/* A dropping path reaches nothing, its connects included. */
	if (clt_fault_hit(path, CLT_FAULT_CONNECT, NULL))
		return -EHOSTUNREACH;
	path->recon_cnt++;
	pthread_mutex_lock(&path->info_lock);
	path->info_status = 0;
	pthread_mutex_unlock(&path->info_lock);
	for (cid = 0; cid < path->con_num && !ret; cid++)
		ret = con_connect(path, cid);
	if (ret)
		goto fail;

	ibtrs_info_req_encode(&path->info_req, sess->sessname);
	ret = sess->ops->post_send(path->cons[0].xcon, &iov, 1, 0, 0);
	if (ret)
		goto fail;
	ibtrs_deadline_in(&ts, sess->connect_timeout_ms);
	pthread_mutex_lock(&path->info_lock);
	while (!path->info_status && !ret)
		ret = -pthread_cond_timedwait(&path->info_cond,
					      &path->info_lock, &ts);
	if (path->info_status < 0)
		ret = path->info_status;
	pthread_mutex_unlock(&path->info_lock);
	if (ret)
		goto fail;
	ret = path_set_rbufs(path);
	if (ret)
		goto fail;
	return 0;

fail:
	clt_path_destroy_cons(path);
	return ret;
}

/*
 * Connect @path from CLOSED or RECONNECTING; blocks. On failure the path
 * is left RECONNECTING with a retry scheduled, or CLOSED.
 */
static int path_connect(struct clt_path *path, const char *why)
{
	struct ibtrs_clt *sess = path->sess;
	char msg[96];
	int ret;

	pthread_mutex_lock(&path->connect_lock);
	ret = path_change(path, IBTRS_PATH_CONNECTING, why);
	if (ret)
		goto unlock;
	/* The connections of the last life of the path, if any. */
	clt_path_destroy_cons(path);
	ret = path_handshake(path);
	if (!ret) {
		atomic_store(&path->attempts, 0);
		ibtrs_loop_call(sess->loop, path_up_fn, path);
		if (path_state(path) != IBTRS_PATH_CONNECTED)
			ret = -ECONNABORTED;
		goto unlock;
	}
	atomic_fetch_add(&path->attempts, 1);
	/* A drop injected for testing is said to be one, not taken for a
	 * real network error. */
	if (atomic_load(&path->fault) == IBTRS_FAULT_DROP)
		snprintf(msg, sizeof(msg),
			 "connect failed: injected fault: drop");
	else
		snprintf(msg, sizeof(msg), "connect failed: %s",
			 strerror(-ret));
	if (may_reconnect(path)) {
		if (!path_change(path, IBTRS_PATH_RECONNECTING, msg))
			schedule_reconnect(path,
					   (uint64_t)sess->reconnect_delay_sec *
						   1000000000ull);
	} else {
		path_change(path, IBTRS_PATH_CLOSED, msg);
	}
unlock:
	pthread_mutex_unlock(&path->connect_lock);
	return ret;
}

int clt_path_open(struct clt_path *path)
{
	return path_connect(path, "connecting");
}

/* ------------------------------------------------------------------ */
/* connector thread                                                     */

static void pending_check_fn(void *arg)
{
	struct ibtrs_clt *sess = arg;

	if (!clt_sess_has_hope(sess))
		clt_fail_pending(sess, -ECONNABORTED);
}

static void *connector_thread(void *arg)
{
	struct ibtrs_clt *sess = arg;

	pthread_setname_np(pthread_self(), "ibtrs-conn");
	pthread_mutex_lock(&sess->conn_lock);
	while (!sess->conn_stop) {
		struct clt_path *due = NULL;
		uint64_t now = ibtrs_now_ns(), next = UINT64_MAX;
		unsigned int i, n = atomic_load(&sess->path_cnt);

		for (i = 0; i < n; i++) {
			struct clt_path *p = sess->paths[i];

			if (!p->next_try_ns)
				continue;
			if (p->next_try_ns <= now) {
				due = p;
				break;
			}
			if (p->next_try_ns < next)
				next = p->next_try_ns;
		}
		if (!due) {
			if (next == UINT64_MAX) {
				pthread_cond_wait(&sess->conn_cond,
						  &sess->conn_lock);
			} else {
				struct timespec ts;
				uint64_t wait = next - now, t;

				clock_gettime(CLOCK_REALTIME, &ts);
				t = (uint64_t)ts.tv_nsec + wait;
				ts.tv_sec += (time_t)(t / 1000000000ull);
				ts.tv_nsec = (long)(t % 1000000000ull);
				pthread_cond_timedwait(&sess->conn_cond,
						       &sess->conn_lock, &ts);
			}
			continue;
		}
		due->next_try_ns = 0;
		pthread_mutex_unlock(&sess->conn_lock);
		if (path_state(due) == IBTRS_PATH_RECONNECTING) {
			atomic_fetch_add(&due->reconnect_attempts, 1);
			if (!path_connect(due, "reconnecting"))
				atomic_fetch_add(&due->reconnects, 1);
			else
				ibtrs_loop_call(sess->loop, pending_check_fn,
						sess);
		}
		pthread_mutex_lock(&sess->conn_lock);
	}
	pthread_mutex_unlock(&sess->conn_lock);
	return NULL;
}

void clt_connector_stop(struct ibtrs_clt *sess)
{
	bool started;

	pthread_mutex_lock(&sess->conn_lock);
	sess->conn_stop = true;
	started = sess->connector_started;
	pthread_cond_signal(&sess->conn_cond);
	pthread_mutex_unlock(&sess->conn_lock);
	if (started)
		pthread_join(sess->connector, NULL);
	sess->connector_started = false;
}

/* ------------------------------------------------------------------ */
/* tick: heartbeats, gray failure, delayed responses, pending deadlines */

/* What already arrived on @path is life: deliver it now (hb.h). */
static void path_drain(struct clt_path *path)
{
	unsigned int i;

	for (i = 0; i < path->con_num; i++)
		if (path->cons[i].xcon &&
		    path_state(path) == IBTRS_PATH_CONNECTED)
			path->sess->ops->drain(path->cons[i].xcon);
}

/*
 * The heartbeat of one connected path, the loop @late_ns late. True if the
 * path is silent even after its receive side was drained: the verdict is
 * then in @why, for clt_paths_tick() to act on.
 */
static bool tick_path(struct ibtrs_clt *sess, struct clt_path *path,
		      uint64_t now, uint64_t late_ns, char *why, size_t len)
{
	/* A dropping path sends no heartbeat, as a cut cable would not. */
	bool may_send = !clt_fault_hit(path, CLT_FAULT_CTL_TX, NULL);
	enum ibtrs_hb_action a;

	ibtrs_hb_credit(now, late_ns, &path->last_rx_ns);
	a = ibtrs_hb_tick(&sess->hb, now, path->last_rx_ns,
			  &path->last_hb_tx_ns, may_send, why, len);
	if (a == IBTRS_HB_DEAD) {
		path_drain(path);
		if (path_state(path) != IBTRS_PATH_CONNECTED)
			return false;
		a = ibtrs_hb_tick(&sess->hb, now, path->last_rx_ns,
				  &path->last_hb_tx_ns, may_send, why, len);
	}
	switch (a) {
	case IBTRS_HB_DEAD:
		return true;
	case IBTRS_HB_SEND:
		if (!path->hb_sent_ns)
			path->hb_sent_ns = now;
		sess->ops->post_write(path->cons[0].xcon, NULL, 0, 0, 0,
				      ibtrs_imm_hb(IBTRS_IMM_HB), WR_ID_HB,
				      IBTRS_XPRT_IMM);
		return false;
	case IBTRS_HB_NONE:
		return false;
	}
	return false;
}

/*
 * Gray failure: a path alive but sick. Every CLT_GRAY_WINDOW_MS (or tick,
 * if longer) each connected path is judged over the window just ended:
 * bad if its cost, the median request latency divided by the mean of
 * the requests in flight on it (so that a loaded path and an idle one
 * compare), is above CLT_GRAY_FACTOR times and CLT_GRAY_FLOOR_US more
 * than the best other healthy path's (each with
 * CLT_GRAY_MIN_REQS requests at least), or if the backend retransmitted
 * CLT_GRAY_LOSS_PCT % of what it sent (of CLT_GRAY_MIN_SEGS at least, and
 * CLT_GRAY_MIN_RETRANS segments: a starved loopback peer makes TCP send a
 * few again, 2 of 65 seen under a sanitizer on a loaded host; 1 % of any
 * amount on a demoted path). CLT_GRAY_BAD_WINDOWS bad windows in
 * a row demote it while another path is healthy: the policy gives it only
 * its probes (path.h), heartbeats go on. A demoted path is judged on its
 * probes (one is enough): good only if their cost is within 3/2 of the
 * best other path's plus CLT_GRAY_FLOOR_US. A window without a probe
 * counts neither way; one without evidence against a path in use is
 * good. After its probation of good windows in a row
 * it is re-admitted; a path demoted again within CLT_GRAY_FLAP_MS of its
 * re-admission serves a probation twice as long, up to
 * CLT_GRAY_PROBATION_MAX windows.
 */
#define CLT_GRAY_WINDOW_MS 500
#define CLT_GRAY_FACTOR 4
#define CLT_GRAY_FLOOR_US 1000
#define CLT_GRAY_MIN_REQS 4
#define CLT_GRAY_LOSS_PCT 2
#define CLT_GRAY_MIN_SEGS 256
#define CLT_GRAY_MIN_RETRANS 8
#define CLT_GRAY_BAD_WINDOWS 3
#define CLT_GRAY_PROBATION 6
#define CLT_GRAY_PROBATION_MAX 48
#define CLT_GRAY_FLAP_MS 30000

const char *clt_gray_reason_str(int reason)
{
	switch (reason) {
	case CLT_GRAY_SLOW:
		return "slow";
	case CLT_GRAY_LOSSY:
		return "lossy";
	default:
		return "";
	}
}

/* Loop thread: a path not connected starts afresh when it is again. */
static void gray_reset(struct clt_path *path)
{
	uint64_t n;

	if (atomic_load(&path->demoted)) {
		atomic_store(&path->demoted, false);
		atomic_store(&path->gray_reason, CLT_GRAY_NONE);
		clt_event(path->sess, (int)path->idx,
			  "%s: no longer demoted: not connected",
			  path_name(path));
	}
	path->gray_bad = path->gray_good = 0;
	path->gray_p50_ns = path->gray_n = 0;
	path->gray_inflight_sum = path->gray_ticks = 0;
	path->gray_segs = path->gray_retrans = 0;
	atomic_store_explicit(&path->lat_band, false, memory_order_relaxed);
	atomic_store_explicit(&path->lat_cost_ns, 0, memory_order_relaxed);
	ibtrs_hist_window(&path->hist, path->gray_snap, 0.5, &n);
}

/* The window just ended for @path: latency, and whether it lost data. */
static bool gray_measure(struct clt_path *path, uint64_t *dsegs,
			 uint64_t *dretrans)
{
	const struct ibtrs_xprt_ops *ops = path->sess->ops;
	struct ibtrs_xprt_health h;
	uint64_t segs = 0, retrans = 0;
	bool have = false;
	unsigned int i;

	path->gray_p50_ns = ibtrs_hist_window(&path->hist, path->gray_snap, 0.5,
					      &path->gray_n);
	/* Little's law: a request's latency on a loaded path is mostly its
	 * wait behind the others in flight. Per request in flight it is
	 * the path's own cost, the same loaded or idle. */
	if (path->gray_ticks && path->gray_inflight_sum > path->gray_ticks)
		path->gray_p50_ns = path->gray_p50_ns * path->gray_ticks /
				    path->gray_inflight_sum;
	path->gray_inflight_sum = path->gray_ticks = 0;
	/* Min-latency's measure: kept from the last window with requests. */
	if (path->gray_n)
		atomic_store_explicit(&path->lat_cost_ns, path->gray_p50_ns,
				      memory_order_relaxed);
	for (i = 0; i < path->con_num; i++) {
		if (!path->cons[i].xcon || ops->health(path->cons[i].xcon, &h))
			continue;
		segs += h.segs_out;
		retrans += h.retrans;
		have = true;
	}
	if (!have)
		return false;
	/* Connections renewed since: counters start again. */
	*dsegs = segs >= path->gray_segs ? segs - path->gray_segs : segs;
	*dretrans = retrans >= path->gray_retrans ? retrans - path->gray_retrans
						  : retrans;
	path->gray_segs = segs;
	path->gray_retrans = retrans;
	if (atomic_load(&path->demoted))
		return *dretrans && *dretrans * 100 >= *dsegs;
	return *dsegs >= CLT_GRAY_MIN_SEGS &&
	       *dretrans >= CLT_GRAY_MIN_RETRANS &&
	       *dretrans * 100 >= *dsegs * CLT_GRAY_LOSS_PCT;
}

/* The best median of the healthy connected paths but @self; 0: none. */
static uint64_t gray_best_other(struct ibtrs_clt *sess,
				const struct clt_path *self)
{
	unsigned int i, n = atomic_load(&sess->path_cnt);
	uint64_t best = 0;

	for (i = 0; i < n; i++) {
		struct clt_path *p = sess->paths[i];

		if (p == self || path_state(p) != IBTRS_PATH_CONNECTED ||
		    atomic_load(&p->demoted) || p->gray_n < CLT_GRAY_MIN_REQS)
			continue;
		if (!best || p->gray_p50_ns < best)
			best = p->gray_p50_ns;
	}
	return best;
}

/* A connected path that is not demoted and was not bad this window. */
static bool gray_other_healthy(struct ibtrs_clt *sess,
			       const struct clt_path *self)
{
	unsigned int i, n = atomic_load(&sess->path_cnt);

	for (i = 0; i < n; i++) {
		struct clt_path *p = sess->paths[i];

		if (p != self && path_state(p) == IBTRS_PATH_CONNECTED &&
		    !atomic_load(&p->demoted) && !p->gray_bad)
			return true;
	}
	return false;
}

static void gray_judge(struct ibtrs_clt *sess, struct clt_path *path,
		       bool lossy, uint64_t dsegs, uint64_t dretrans,
		       uint64_t now)
{
	bool demoted = atomic_load(&path->demoted);
	uint64_t best = gray_best_other(sess, path);
	uint64_t floor = CLT_GRAY_FLOOR_US * 1000ull;
	bool slow;

	/* Hysteresis: a demoted path's probes run without a queue, so they
	 * must be about as fast as the loaded healthy paths to count good;
	 * a path in use is bad only when far slower. */
	if (demoted)
		slow = best && path->gray_n &&
		       path->gray_p50_ns > best + best / 2 + floor;
	else
		slow = best && path->gray_n >= CLT_GRAY_MIN_REQS &&
		       path->gray_p50_ns > best * CLT_GRAY_FACTOR &&
		       path->gray_p50_ns > best + floor;
	/* No probe in this window: no evidence for the probation. */
	if (demoted && !path->gray_n && !lossy)
		return;
	if (!slow && !lossy) {
		path->gray_bad = 0;
		if (demoted && ++path->gray_good >= path->gray_probation) {
			atomic_store(&path->demoted, false);
			atomic_store(&path->gray_reason, CLT_GRAY_NONE);
			atomic_fetch_add(&path->readmissions, 1);
			clt_event(
				sess, (int)path->idx,
				"%s: re-admitted: %u good windows after %llu ms demoted",
				path_name(path), path->gray_good,
				(unsigned long long)(now -
						     path->gray_since_ns) /
					1000000);
			path->gray_since_ns = now;
			path->gray_good = 0;
		}
		return;
	}
	path->gray_good = 0;
	if (demoted || ++path->gray_bad < CLT_GRAY_BAD_WINDOWS ||
	    !gray_other_healthy(sess, path))
		return;
	/* Demoted again soon after its re-admission: a longer probation. */
	if (path->gray_probation && path->gray_since_ns &&
	    now - path->gray_since_ns < CLT_GRAY_FLAP_MS * 1000000ull)
		path->gray_probation = path->gray_probation * 2 <
						       CLT_GRAY_PROBATION_MAX
					       ? path->gray_probation * 2
					       : CLT_GRAY_PROBATION_MAX;
	else
		path->gray_probation = CLT_GRAY_PROBATION;
	path->gray_since_ns = now;
	path->gray_bad = 0;
	atomic_store(&path->gray_reason, slow ? CLT_GRAY_SLOW : CLT_GRAY_LOSSY);
	atomic_store(&path->demoted, true);
	atomic_fetch_add(&path->demotions, 1);
	if (slow)
		clt_event(
			sess, (int)path->idx,
			"%s: demoted: slow: median %llu us over %llu requests, %llu us on the best other path; probation %u windows",
			path_name(path),
			(unsigned long long)path->gray_p50_ns / 1000,
			(unsigned long long)path->gray_n,
			(unsigned long long)best / 1000, path->gray_probation);
	else
		clt_event(
			sess, (int)path->idx,
			"%s: demoted: lossy: %llu of %llu segments retransmitted; probation %u windows",
			path_name(path), (unsigned long long)dretrans,
			(unsigned long long)dsegs, path->gray_probation);
}

/*
 * Min-latency hysteresis: who is in the band of the fastest (path.h), by
 * the cost per request in flight once a path has one, by the heartbeat
 * RTT until then.
 */
static void gray_band(struct ibtrs_clt *sess)
{
	struct ibtrs_policy_path pp[IBTRS_MAX_PATHS];
	unsigned int i, n = atomic_load(&sess->path_cnt);

	for (i = 0; i < n; i++) {
		struct clt_path *p = sess->paths[i];

		memset(&pp[i], 0, sizeof(pp[i]));
		pp[i].usable = path_state(p) == IBTRS_PATH_CONNECTED &&
			       !atomic_load(&p->demoted);
		pp[i].cost_ns = atomic_load(&p->lat_cost_ns);
		pp[i].rtt_ns = atomic_load(&p->hb_rtt_ns);
		pp[i].in_band = atomic_load(&p->lat_band);
	}
	ibtrs_policy_band(pp, n);
	for (i = 0; i < n; i++)
		atomic_store_explicit(&sess->paths[i]->lat_band, pp[i].in_band,
				      memory_order_relaxed);
}

static void gray_tick(struct ibtrs_clt *sess, uint64_t now)
{
	uint64_t win = CLT_GRAY_WINDOW_MS * 1000000ull;
	uint64_t dsegs[IBTRS_MAX_PATHS] = { 0 }, dre[IBTRS_MAX_PATHS] = { 0 };
	bool lossy[IBTRS_MAX_PATHS] = { false };
	unsigned int i, n = atomic_load(&sess->path_cnt);

	gray_band(sess);
	for (i = 0; i < n; i++) {
		struct clt_path *p = sess->paths[i];

		p->gray_inflight_sum += atomic_load(&p->inflight);
		p->gray_ticks++;
	}
	if (!sess->gray_win_ns) {
		sess->gray_win_ns = now;
		return;
	}
	if (now - sess->gray_win_ns < win)
		return;
	sess->gray_win_ns = now;
	/* Measure every path first: each is judged against the others. */
	for (i = 0; i < n; i++)
		if (path_state(sess->paths[i]) == IBTRS_PATH_CONNECTED)
			lossy[i] = gray_measure(sess->paths[i], &dsegs[i],
						&dre[i]);
	for (i = 0; i < n; i++)
		if (path_state(sess->paths[i]) == IBTRS_PATH_CONNECTED)
			gray_judge(sess, sess->paths[i], lossy[i], dsegs[i],
				   dre[i], now);
}

void clt_paths_tick(struct ibtrs_clt *sess, uint64_t now, uint64_t late)
{
	unsigned int i, n = atomic_load(&sess->path_cnt);
	unsigned int alive = 0, nsilent = 0;
	struct clt_path *silent[IBTRS_MAX_PATHS];
	char why[IBTRS_MAX_PATHS][64];

	for (i = 0; i < n; i++) {
		struct clt_path *p = sess->paths[i];

		if (path_state(p) != IBTRS_PATH_CONNECTED) {
			if (p->gray_n || p->gray_bad || p->gray_good ||
			    atomic_load(&p->demoted))
				gray_reset(p);
			continue;
		}
		alive++;
		if (tick_path(sess, p, now, late, why[nsilent], sizeof(why[0])))
			silent[nsilent++] = p;
	}
	/* Every path silent on the same tick: this host more likely stalled
	 * than every peer failed at once (hb.h). */
	if (ibtrs_hb_hold(alive, nsilent, &sess->hb_held))
		clt_event(
			sess, -1,
			"all %u paths silent at once: a local stall? checked again next tick",
			nsilent);
	else
		for (i = 0; i < nsilent; i++)
			clt_path_fail(silent[i], why[i]);
	gray_tick(sess, now);
}

/* ------------------------------------------------------------------ */
/* paths: allocation and the public control calls                       */

struct clt_path *clt_path_alloc(struct ibtrs_clt *sess,
				const struct ibtrs_addr *addr, unsigned int idx)
{
	struct clt_path *path;

	path = calloc(1, sizeof(*path));
	if (!path)
		return NULL;
	path->sess = sess;
	path->idx = idx;
	memcpy(&path->dst, addr->dst, sizeof(path->dst));
	if (path->dst.ss_family == AF_INET &&
	    !((struct sockaddr_in *)&path->dst)->sin_port)
		((struct sockaddr_in *)&path->dst)->sin_port =
			htons(sess->port);
	else if (path->dst.ss_family == AF_INET6 &&
		 !((struct sockaddr_in6 *)&path->dst)->sin6_port)
		((struct sockaddr_in6 *)&path->dst)->sin6_port =
			htons(sess->port);
	if (addr->src) {
		memcpy(&path->src, addr->src, sizeof(path->src));
		path->has_src = true;
		ibtrs_sockaddr_to_str((struct sockaddr *)&path->src,
				      path->src_str, sizeof(path->src_str));
	}
	ibtrs_sockaddr_to_str((struct sockaddr *)&path->dst, path->dst_str,
			      sizeof(path->dst_str));
	if (path->has_src) {
		size_t n = strlen(path->src_str);

		/* A source without a port is shown without ":0". */
		if (n > 2 && !strcmp(path->src_str + n - 2, ":0"))
			n -= 2;
		snprintf(path->name, sizeof(path->name), "%.*s->%s", (int)n,
			 path->src_str, path->dst_str);
	} else
		snprintf(path->name, sizeof(path->name), "%s", path->dst_str);
	ibtrs_uuid_gen(path->uuid);
	path->con_num = 1 + sess->io_cons;
	atomic_init(&path->state, IBTRS_PATH_CLOSED);
	pthread_rwlock_init(&path->lock, NULL);
	pthread_mutex_init(&path->connect_lock, NULL);
	pthread_mutex_init(&path->info_lock, NULL);
	pthread_cond_init(&path->info_cond, NULL);
	return path;
}

void clt_path_free(struct clt_path *path)
{
	if (!path)
		return;
	pthread_rwlock_destroy(&path->lock);
	pthread_mutex_destroy(&path->connect_lock);
	pthread_mutex_destroy(&path->info_lock);
	pthread_cond_destroy(&path->info_cond);
	free(path->rbufs);
	free(path);
}

static bool same_addr(const struct sockaddr_storage *a,
		      const struct sockaddr_storage *b)
{
	socklen_t la = ibtrs_sockaddr_len((const struct sockaddr *)a);

	return la && la == ibtrs_sockaddr_len((const struct sockaddr *)b) &&
	       !memcmp(a, b, la);
}

int ibtrs_clt_add_path(struct ibtrs_clt *sess, const struct ibtrs_addr *addr)
{
	struct clt_path *path;
	unsigned int i, n;
	int ret;

	if (!sess || !addr || !addr->dst ||
	    (addr->dst->ss_family != AF_INET &&
	     addr->dst->ss_family != AF_INET6))
		return -EINVAL;
	pthread_mutex_lock(&sess->paths_lock);
	n = atomic_load(&sess->path_cnt);
	if (n == IBTRS_MAX_PATHS) {
		pthread_mutex_unlock(&sess->paths_lock);
		return -ENOSPC;
	}
	path = clt_path_alloc(sess, addr, n);
	if (!path) {
		pthread_mutex_unlock(&sess->paths_lock);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		struct clt_path *p = sess->paths[i];

		if (path_state(p) != IBTRS_PATH_DEAD &&
		    same_addr(&p->dst, &path->dst) &&
		    p->has_src == path->has_src &&
		    (!p->has_src || same_addr(&p->src, &path->src))) {
			pthread_mutex_unlock(&sess->paths_lock);
			clt_path_free(path);
			return -EEXIST;
		}
	}
	sess->paths[n] = path;
	atomic_store(&sess->path_cnt, n + 1);
	pthread_mutex_unlock(&sess->paths_lock);
	clt_event(sess, (int)n, "path %s added", path_name(path));
	ret = clt_path_open(path);
	if (ret)
		ibtrs_log(IBTRS_LOG_WARN,
			  "session %s: added path %s: connect failed: %s",
			  sess->sessname, path_name(path), strerror(-ret));
	return (int)n;
}

static void path_closing_fn(void *arg)
{
	struct clt_path *path = arg;

	path->no_reconnect = true;
	if (path_state(path) == IBTRS_PATH_CONNECTED)
		path_change(path, IBTRS_PATH_CLOSING, "removing: draining");
	path_counted_down(path);
}

static void path_remove_fn(void *arg)
{
	struct clt_path *path = arg;

	clt_path_close(path);
	path_change(path, IBTRS_PATH_DEAD, "removed");
	if (!clt_sess_has_hope(path->sess))
		clt_fail_pending(path->sess, -ECONNABORTED);
}

/*
 * The path a control call acts on, or NULL for a bad or removed index; a
 * reconnect the connector has scheduled for it is called off, the caller
 * decides what happens next.
 */
static struct clt_path *path_for_control(struct ibtrs_clt *sess,
					 unsigned int idx)
{
	struct clt_path *path = sess ? clt_path_get(sess, idx) : NULL;

	if (!path || path_state(path) == IBTRS_PATH_DEAD)
		return NULL;
	pthread_mutex_lock(&sess->conn_lock);
	path->next_try_ns = 0;
	pthread_mutex_unlock(&sess->conn_lock);
	return path;
}

int ibtrs_clt_remove_path(struct ibtrs_clt *sess, unsigned int idx)
{
	struct clt_path *path = path_for_control(sess, idx);
	uint64_t deadline;

	if (!path)
		return -ENOENT;
	pthread_mutex_lock(&path->connect_lock);
	/* No new requests; let those in flight finish (bounded). */
	ibtrs_loop_call(sess->loop, path_closing_fn, path);
	deadline = ibtrs_real_now_ns() + CLT_DRAIN_TIMEOUT_MS * 1000000ull;
	while (atomic_load(&path->inflight) && ibtrs_real_now_ns() < deadline) {
		struct timespec ts = { .tv_nsec = 1000000 };

		nanosleep(&ts, NULL);
	}
	ibtrs_loop_call(sess->loop, path_remove_fn, path);
	clt_path_destroy_cons(path);
	pthread_mutex_unlock(&path->connect_lock);
	return 0;
}

static void path_disconnect_fn(void *arg)
{
	struct clt_path *path = arg;
	struct ibtrs_clt *sess = path->sess;

	path->no_reconnect = true;
	if (path_state(path) == IBTRS_PATH_CONNECTED) {
		clt_path_fail(path, "disconnected on request");
	} else if (path_state(path) == IBTRS_PATH_RECONNECTING) {
		path_change(path, IBTRS_PATH_CLOSED, "disconnected on request");
		if (!clt_sess_has_hope(sess))
			clt_fail_pending(sess, -ECONNABORTED);
	}
}

int ibtrs_clt_disconnect_path(struct ibtrs_clt *sess, unsigned int idx)
{
	struct clt_path *path = path_for_control(sess, idx);

	if (!path)
		return -ENOENT;
	ibtrs_loop_call(sess->loop, path_disconnect_fn, path);
	return 0;
}

static void path_reset_fn(void *arg)
{
	struct clt_path *path = arg;

	path->no_reconnect = true; /* this caller reconnects it */
	clt_path_fail(path, "reconnect on request");
	if (path_state(path) == IBTRS_PATH_RECONNECTING)
		path_change(path, IBTRS_PATH_CLOSED, "reconnect on request");
	path->no_reconnect = false;
}

int ibtrs_clt_reconnect_path(struct ibtrs_clt *sess, unsigned int idx)
{
	struct clt_path *path = path_for_control(sess, idx);

	if (!path)
		return -ENOENT;
	atomic_store(&path->attempts, 0);
	pthread_mutex_lock(&path->connect_lock);
	ibtrs_loop_call(sess->loop, path_reset_fn, path);
	clt_path_destroy_cons(path);
	pthread_mutex_unlock(&path->connect_lock);
	return path_connect(path, "reconnect on request");
}
