/* SPDX-License-Identifier: MIT */
/*
 * xprt.h - the transport ops table: what a backend (tcp, ofi, ...) provides
 * to the protocol engine.
 *
 * The contract follows RDMA verbs, and every backend enforces it whatever
 * its wire can do, so that code tested on one backend is right on all:
 * - memory is registered into a protection domain (pd); the backend issues
 *   the key and the address a peer uses for it; a connection reaches only
 *   the regions of its own pd, within their bounds, with their current key;
 * - a WRITE places bytes into a peer's registered memory; with an immediate
 *   it also consumes one receive posted on the peer's connection and
 *   completes it with the 32-bit immediate (IBTRS_WC_RECV_IMM);
 * - a SEND fills the next posted receive; a message longer than that
 *   receive's buffer, or one that finds no receive posted, is fatal to the
 *   connection (no receiver-not-ready retries);
 * - receives are posted before the connection starts (server: before the
 *   accept answer leaves) and then only from the connection's loop thread.
 *
 * Completions and errors are delivered through struct ibtrs_xprt_handler.
 * Receive completions run on the loop thread. Completions of signalled
 * sends may run on any thread that posted (the backend flushes from the
 * posting thread when it can), so their handler must only record and defer.
 * When a connection fails or is disconnected, every signalled work request
 * still queued completes with status -ECANCELED (a verbs flush), then, on a
 * failure, the handler's err() runs once on the loop thread; the protocol
 * engine moves or fails its outstanding requests itself. Every completion
 * of a connection is delivered before disconnect() returns and none after:
 * the engine replays a request with the same wr_id on another connection
 * and relies on no late completion of the old one.
 */
#ifndef IBTRS_XPRT_H
#define IBTRS_XPRT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "ibtrs.h"
#include "keyring.h"

struct ibtrs_loop;
struct ibtrs_xprt_con;
struct ibtrs_xprt_pd;
struct ibtrs_xprt_mr;
struct ibtrs_xprt_listener;
struct ibtrs_xprt_connreq;
struct ibtrs_keyring;
struct ibtrs_psk;

#define IBTRS_XPRT_PRIV_LEN 64 /* connect/accept private data */

enum ibtrs_wc_opcode {
	IBTRS_WC_SEND,	   /* a signalled SEND left */
	IBTRS_WC_WRITE,	   /* a signalled WRITE left */
	IBTRS_WC_RECV,	   /* a SEND from the peer filled a receive */
	IBTRS_WC_RECV_IMM, /* a WRITE with immediate consumed a receive */
};

/**
 * struct ibtrs_wc - a work completion
 * @wr_id: the id given when the work request was posted
 * @status: 0, or -ECANCELED for a send flushed by a failed connection
 * @opcode: what completed
 * @imm: the immediate (IBTRS_WC_RECV_IMM)
 * @byte_len: bytes received (IBTRS_WC_RECV) or written (IBTRS_WC_RECV_IMM)
 */
struct ibtrs_wc {
	uint64_t wr_id;
	int status;
	enum ibtrs_wc_opcode opcode;
	uint32_t imm;
	uint32_t byte_len;
};

/**
 * struct ibtrs_xprt_handler - what a connection reports to its owner
 * @wc: one completion; see the threading rules above
 * @err: the connection failed with @err (negative errno); loop thread, once
 */
struct ibtrs_xprt_handler {
	void (*wc)(struct ibtrs_xprt_con *con, const struct ibtrs_wc *wc);
	void (*err)(struct ibtrs_xprt_con *con, int err);
};

/**
 * struct ibtrs_xprt_tls - TLS of a connection or a listener
 * @mode: enum ibtrs_tls_mode: IBTRS_TLS_OFF, IBTRS_TLS_ON or
 *        IBTRS_TLS_REQUIRE (a client with ON or REQUIRE speaks TLS only)
 * @keys: the pre-shared keys (a server looks the client's identity up)
 * @psk: client: the key it uses, of @keys
 *
 * Only a backend that encrypts (tcp) takes a mode other than OFF; the
 * others refuse it with -EOPNOTSUPP. The pointers need to live only as
 * long as the connect or listen call: a backend copies what it keeps.
 */
struct ibtrs_xprt_tls {
	int mode;
	const struct ibtrs_keyring *keys;
	const struct ibtrs_psk *psk;
};

/* True when @tls (may be NULL) asks for TLS. */
static inline bool ibtrs_xprt_tls_on(const struct ibtrs_xprt_tls *tls)
{
	return tls && tls->mode != IBTRS_TLS_OFF &&
	       tls->mode != IBTRS_TLS_DEFAULT;
}

/**
 * struct ibtrs_xprt_con_attr - connection resources, as for a verbs QP
 * @max_send_wr: work requests that may be queued at once
 * @max_recv_wr: receives that may be posted at once
 * @max_send_sge: iovecs per work request
 * @timeout_ms: a backend that can detect a dead peer by itself (TCP user
 *              timeout, keepalive) declares the connection failed after
 *              about this long; 0 leaves its defaults
 * @tls: connect only: TLS to speak, NULL for none
 */
struct ibtrs_xprt_con_attr {
	unsigned int max_send_wr;
	unsigned int max_recv_wr;
	unsigned int max_send_sge;
	unsigned int timeout_ms;
	const struct ibtrs_xprt_tls *tls;
};

/**
 * struct ibtrs_xprt_con - base of every backend connection
 * @ops: the backend
 * @handler: completion and error sink, set before the connection starts
 * @ctx: the owner's pointer
 */
struct ibtrs_xprt_con {
	const struct ibtrs_xprt_ops *ops;
	const struct ibtrs_xprt_handler *handler;
	void *ctx;
};

/**
 * struct ibtrs_xprt_mr - base of a registered memory region
 * @addr: the address a peer puts into its WRITEs for offset 0
 * @key: the key a peer uses; changes at every ibtrs_xprt_ops.mr_map()
 */
struct ibtrs_xprt_mr {
	uint64_t addr;
	uint32_t key;
};

/* Flags of post_write and post_send. */
#define IBTRS_XPRT_SIGNALED 0x1 /* deliver a send-side completion */
#define IBTRS_XPRT_IMM 0x2	/* post_write: carry @imm */
/*
 * The caller need not have the work request on its way when the post
 * returns: more will follow, and completions of earlier ones are due. A
 * backend may hand the sending to its loop thread, to gather it with
 * others into one system call.
 */
#define IBTRS_XPRT_LAZY 0x4

/**
 * struct ibtrs_connreq - a connection request waiting on a listener
 * @priv: the client's private data
 * @peer: the client's address
 * @local: the address the client connected to
 * @tls_identity: the PSK identity the client proved in a TLS handshake
 *                under the connection, "" without TLS; the core holds the
 *                authentication's identity to it
 */
struct ibtrs_connreq_info {
	uint8_t priv[IBTRS_XPRT_PRIV_LEN];
	struct sockaddr_storage peer;
	struct sockaddr_storage local;
	char tls_identity[IBTRS_IDENTITY_MAX + 1];
};

/**
 * struct ibtrs_xprt_health - what a backend knows of a connection's link
 * @segs_out: segments (or messages) sent since the connection began
 * @retrans: of those, retransmitted ones, timeouts included
 * @rtt_us: the backend's smoothed round-trip time, 0 if unknown
 */
struct ibtrs_xprt_health {
	uint64_t segs_out;
	uint64_t retrans;
	uint32_t rtt_us;
};

/**
 * struct ibtrs_xprt_ops - a backend
 *
 * Every slot is filled at registration; slots a backend leaves NULL return
 * -EOPNOTSUPP, so the core never checks for NULL.
 */
struct ibtrs_xprt_ops {
	const char *name;

	/* --- protection domains and memory registration --- */
	/* A pd holding up to @max_mrs regions. */
	int (*pd_alloc)(struct ibtrs_xprt_pd **pd, unsigned int max_mrs);
	/* All connections of the pd must be destroyed first. */
	void (*pd_free)(struct ibtrs_xprt_pd *pd);
	/* A region slot holding up to @max_sge iovecs, not yet mapped. */
	int (*mr_alloc)(struct ibtrs_xprt_pd *pd, unsigned int max_sge,
			struct ibtrs_xprt_mr **mr);
	/* Map @iov (fast registration); issues a new key. */
	int (*mr_map)(struct ibtrs_xprt_mr *mr, const struct iovec *iov,
		      unsigned int cnt);
	/* Invalidate the current key: the peer's WRITEs to it now fail. */
	void (*mr_unmap)(struct ibtrs_xprt_mr *mr);
	void (*mr_free)(struct ibtrs_xprt_mr *mr);
	/*
	 * Make what the peer wrote into @mr visible in the mapped iovecs
	 * (a backend that placed it in a bounce buffer copies it out here).
	 * Called on the loop thread after the response that follows those
	 * writes arrived, before the key is unmapped.
	 */
	void (*mr_sync)(struct ibtrs_xprt_mr *mr);

	/* --- connection setup --- */
	/*
	 * Connect to @dst (from @src if not NULL), sending @priv and
	 * receiving the server's answer into @rsp; blocks up to @timeout_ms.
	 * A rejected connect returns -ECONNREFUSED with @rsp filled.
	 * The connection is not started.
	 */
	int (*connect)(struct ibtrs_xprt_pd *pd, const struct sockaddr *src,
		       const struct sockaddr *dst,
		       const struct ibtrs_xprt_con_attr *attr, const void *priv,
		       void *rsp, unsigned int timeout_ms,
		       struct ibtrs_xprt_con **con);
	/*
	 * Listen on @addr with @tls (NULL: none). @connreq runs on the loop
	 * thread for each connection request; the callee answers it with
	 * accept or reject, now or later on the loop thread.
	 */
	int (*listen)(struct ibtrs_loop *loop, const struct sockaddr *addr,
		      const struct ibtrs_xprt_tls *tls,
		      void (*connreq)(void *arg, struct ibtrs_xprt_connreq *req,
				      const struct ibtrs_connreq_info *info),
		      void *arg, struct ibtrs_xprt_listener **listener);
	/* Bound address of the listener. */
	int (*listener_addr)(struct ibtrs_xprt_listener *listener,
			     struct sockaddr_storage *addr);
	void (*listener_close)(struct ibtrs_xprt_listener *listener);
	/*
	 * Accept @req into @pd. The answer @priv is sent when the connection
	 * is started, so that receives can be posted in between.
	 */
	int (*accept)(struct ibtrs_xprt_connreq *req, struct ibtrs_xprt_pd *pd,
		      const struct ibtrs_xprt_con_attr *attr, const void *priv,
		      struct ibtrs_xprt_con **con);
	/* Refuse @req, sending @priv, and free it. */
	void (*reject)(struct ibtrs_xprt_connreq *req, const void *priv);
	/* Start delivering completions on @loop; sends the accept answer. */
	int (*start)(struct ibtrs_xprt_con *con, struct ibtrs_loop *loop);
	/*
	 * Stop the connection: no more completions or err() calls, posts
	 * fail with -ENOTCONN, and no thread is still sending from the
	 * buffers of queued work requests when it returns. Loop thread, or
	 * before start. After err() the connection is already stopped.
	 */
	void (*disconnect)(struct ibtrs_xprt_con *con);
	/* Free a disconnected connection; no other thread may use it. */
	void (*destroy)(struct ibtrs_xprt_con *con);
	/*
	 * Move @con to @pd: the peer's WRITEs reach @pd's regions from now
	 * on, and no longer those of its former pd. Loop thread (or before
	 * start), while the peer is told nothing of @pd's regions yet. A
	 * backend whose pds share one hardware domain allows only a @pd on
	 * the same domain (-EINVAL otherwise).
	 */
	int (*bind_pd)(struct ibtrs_xprt_con *con, struct ibtrs_xprt_pd *pd);
	/*
	 * Hand a started connection over to @loop: from a work item on the
	 * connection's loop thread (ibtrs_loop_queue()), not from an event
	 * callback: the batch of events being handled may hold one of the
	 * connection's, which would then run on the old loop. The connection
	 * leaves its loop at once, carrying the work it had queued there;
	 * then @done(@con, err) runs on @loop's thread: with 0 the connection
	 * is watched there and delivers everything (what arrived meanwhile
	 * too) on @loop from then on; with an error it is stopped as by
	 * disconnect(), without an err() call. Between the call and @done no
	 * completion or err() is delivered; posts may still be made, but the
	 * connection is neither disconnected nor destroyed. Return:
	 * 0 and @done will run, or an error (nothing moved). With @con NULL it
	 * only tells whether the backend can move: -EINVAL if it can, the
	 * stub's -EOPNOTSUPP if not.
	 */
	int (*move)(struct ibtrs_xprt_con *con, struct ibtrs_loop *loop,
		    void (*done)(struct ibtrs_xprt_con *con, int err));

	/* --- data path, any thread unless noted --- */
	int (*post_send)(struct ibtrs_xprt_con *con, const struct iovec *iov,
			 unsigned int cnt, uint64_t wr_id, unsigned int flags);
	/* Loop thread, or before start. */
	int (*post_recv)(struct ibtrs_xprt_con *con, void *buf, uint32_t len,
			 uint64_t wr_id);
	int (*post_write)(struct ibtrs_xprt_con *con, const struct iovec *iov,
			  unsigned int cnt, uint64_t raddr, uint32_t rkey,
			  uint32_t imm, uint64_t wr_id, unsigned int flags);

	/* --- health, loop thread, after start --- */
	/*
	 * Deliver now what already arrived on @con, as the loop's next wait
	 * would, so that a peer is not judged silent while its messages wait
	 * in a socket or a completion queue. Not from within a completion.
	 */
	int (*drain)(struct ibtrs_xprt_con *con);
	/* Fill @h for @con; -EOPNOTSUPP where the backend cannot tell. */
	int (*health)(struct ibtrs_xprt_con *con, struct ibtrs_xprt_health *h);

	/* --- diagnostics --- */
	/* Local and peer address of the connection as text. */
	void (*addr_str)(struct ibtrs_xprt_con *con, char *local, char *peer,
			 size_t len);
	/*
	 * What protects the bytes of @con, as text into @buf of @len bytes:
	 * "off", or e.g. "tls1.3 aes-128-gcm user-space" (or "kernel" where
	 * kTLS does the record layer). Any thread, after connect or accept.
	 */
	void (*sec_str)(struct ibtrs_xprt_con *con, char *buf, size_t len);
};

/*
 * Look a backend up by name; NULL or "" selects the one named by the
 * environment variable IBTRS_BACKEND, else the default (tcp). Returns NULL
 * for an unknown name.
 */
const struct ibtrs_xprt_ops *ibtrs_xprt_find(const char *name);

/* --- helpers shared by the backends --- */

/* Regions of one pd at most: the slot index is the low 16 bits of a key. */
#define IBTRS_XPRT_MAX_MRS 0x10000

/*
 * A backend's new pd: *@pd gets @size zeroed bytes and *@table a zeroed
 * table of @max_mrs slots of @slot bytes each, both to be freed with
 * free(). @max_mrs must be 1 to IBTRS_XPRT_MAX_MRS.
 * Return: 0, -EINVAL for a bad @max_mrs, -ENOMEM.
 */
int ibtrs_xprt_pd_new(size_t size, unsigned int max_mrs, size_t slot, void **pd,
		      void **table);

/*
 * How a backend reads the local (@peer false) or the peer address of
 * @con into @ss. Return: 0, or nonzero if it is not known.
 */
typedef int (*ibtrs_xprt_name_fn)(struct ibtrs_xprt_con *con, bool peer,
				  struct sockaddr_storage *ss);

/*
 * The addr_str slot built on @name: the local and the peer address of @con
 * as text into @local and @peer, of @len bytes each; an address @name does
 * not know is "". Nothing is written if @len is 0.
 */
void ibtrs_xprt_addr_str(struct ibtrs_xprt_con *con, ibtrs_xprt_name_fn name,
			 char *local, char *peer, size_t len);

extern const struct ibtrs_xprt_ops ibtrs_xprt_tcp_ops;
extern const struct ibtrs_xprt_ops ibtrs_xprt_ofi_ops;
extern const struct ibtrs_xprt_ops ibtrs_xprt_loop_ops;

#endif /* IBTRS_XPRT_H */
