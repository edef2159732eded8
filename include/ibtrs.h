/* SPDX-License-Identifier: MIT */
/*
 * ibtrs.h - public API of libibtrs, a user-space implementation of the IBTRS
 * transport (RTRS in mainline Linux).
 *
 * A client opens a session to a server over one or more paths. Each request
 * reserves a tag, which reserves one server chunk; the data of a WRITE is
 * placed into that chunk, the answer of a READ is placed into the client's
 * buffers. The server application sees every request through one callback
 * and answers it with ibtrs_srv_resp_rdma().
 *
 * The functions, types and enums of the IBTRS public header keep their names,
 * argument order and meaning here, in user-space types:
 *   struct kvec                         -> struct iovec
 *   struct scatterlist *, sg_cnt        -> const struct iovec *, sg_cnt
 *   u8/u16/s16/u32                      -> <stdint.h> types
 * Calls returning int return 0 or a negative errno. Calls returning a pointer
 * return NULL and set errno.
 *
 * Error codes with a fixed meaning:
 *   -EAGAIN        no free tag (IBTRS_TAG_NOWAIT)
 *   -ENOTCONN      no connected path
 *   -ECONNABORTED  request lost: its path died or the session was closed
 *   -ETIMEDOUT     an operation did not finish in time
 *   -EMSGSIZE      data or user message longer than the session allows
 *   -EPROTO        malformed message from the peer
 *   -EOPNOTSUPP    the backend lacks the operation
 *
 * Everything after the "Extensions" banner goes beyond the IBTRS header.
 */
#ifndef IBTRS_H
#define IBTRS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library builds with hidden symbols; its API is exported. */
#if defined(IBTRS_BUILD) && defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#define IBTRS_VERSION_MAJOR 0
#define IBTRS_VERSION_MINOR 1

struct ibtrs_tag;
struct ibtrs_clt;
struct ibtrs_srv_ctx;
struct ibtrs_srv;
struct ibtrs_srv_op;

/* Directions of ibtrs_clt_request() and of rdma_ev_fn. */
enum ibtrs_dir {
	IBTRS_READ = 0,
	IBTRS_WRITE = 1,
};

/*
 * Client API
 */

/**
 * enum ibtrs_clt_link_ev - Events about the connectivity of a client session
 * @IBTRS_CLT_LINK_EV_RECONNECTED:	a path came up while no path was up
 * @IBTRS_CLT_LINK_EV_DISCONNECTED:	the last connected path was lost
 */
enum ibtrs_clt_link_ev {
	IBTRS_CLT_LINK_EV_RECONNECTED,
	IBTRS_CLT_LINK_EV_DISCONNECTED,
};

/**
 * struct ibtrs_addr - source and destination address of one path
 * @src: source address, or NULL to let the system choose
 * @dst: destination address
 */
struct ibtrs_addr {
	struct sockaddr_storage *src;
	struct sockaddr_storage *dst;
};

/**
 * typedef link_clt_ev_fn - client link event notification
 * @priv: the @priv given to ibtrs_clt_open()
 * @ev: the event
 *
 * Context: runs on a library thread, with no library lock held.
 */
typedef void(link_clt_ev_fn)(void *priv, enum ibtrs_clt_link_ev ev);

/**
 * ibtrs_clt_open() - open a session to an IBTRS server
 * @priv: user data passed back to @link_ev
 * @link_ev: link event callback, may be NULL
 * @sessname: name of the session, 1..NAME_MAX-1 bytes, no '/'
 * @paths: the paths to establish
 * @path_cnt: number of elements in @paths (1..IBTRS_MAX_PATHS)
 * @port: server port; used where an address of @paths carries no port
 * @pdu_sz: size of the user area that each tag carries (ibtrs_tag_to_pdu())
 * @reconnect_delay_sec: time between reconnect tries
 * @max_segments: maximum number of iovecs of one request's data, 0 for the
 *                default (IBTRS_DEFAULT_MAX_SEGMENTS)
 * @max_reconnect_attempts: reconnect tries after a path failed: 0 never,
 *                          -1 forever, N at most N tries
 *
 * Connects every path and exchanges the session parameters with the server.
 * Succeeds as soon as the paths that could be reached are connected; the
 * others are logged and left to the reconnect policy. Fails when no path
 * could be connected.
 *
 * Return: the session, or NULL with errno set: EINVAL for bad arguments,
 * ECONNREFUSED, EHOSTUNREACH, ETIMEDOUT and the like when no path connected,
 * EPROTO when the server speaks another protocol version, ENOMEM.
 *
 * Context: blocks, up to the connect timeout (2 s by default) per path.
 */
struct ibtrs_clt *
ibtrs_clt_open(void *priv, link_clt_ev_fn *link_ev, const char *sessname,
	       const struct ibtrs_addr *paths, size_t path_cnt, uint16_t port,
	       size_t pdu_sz, uint8_t reconnect_delay_sec,
	       uint16_t max_segments, int16_t max_reconnect_attempts);

/**
 * ibtrs_clt_close() - close a session and free it
 * @sess: the session, or NULL
 *
 * Tells the server the session ends and waits briefly (300 ms at most)
 * for it to close the paths; answers that arrive meanwhile complete their
 * requests normally, and every request still in flight then completes
 * with -ECONNABORTED. When it returns no callback of the session runs or
 * will run.
 * Tags still held by the caller become invalid.
 *
 * Context: blocks. Must not be called from a callback of the same session.
 */
void ibtrs_clt_close(struct ibtrs_clt *sess);

/**
 * ibtrs_tag_from_pdu() - the tag whose user area starts at @pdu
 * @pdu: a pointer returned by ibtrs_tag_to_pdu()
 *
 * Return: the tag.
 */
struct ibtrs_tag *ibtrs_tag_from_pdu(void *pdu);

/**
 * ibtrs_tag_to_pdu() - the user area of @tag (pdu_sz bytes, 16-byte aligned)
 * @tag: a tag
 *
 * Return: pointer to the user area.
 */
void *ibtrs_tag_to_pdu(struct ibtrs_tag *tag);

enum {
	IBTRS_TAG_NOWAIT = 0,
	IBTRS_TAG_WAIT = 1,
};

/**
 * enum ibtrs_clt_con_type - connection a tag's requests travel on
 * @IBTRS_USR_CON: the connection reserved for service messages (con 0):
 *                 for the occasional control request of an application
 *                 (a flush, a query of its own protocol) that should not
 *                 queue behind bulk I/O; every such request of a path
 *                 shares that one connection
 * @IBTRS_IO_CON: a connection reserved for I/O, chosen by the CPU of the
 *                submitting thread among the path's io_cons: use it for
 *                every data request (with one I/O connection, or on a
 *                path that has only con 0, both go the same way)
 */
enum ibtrs_clt_con_type {
	IBTRS_USR_CON,
	IBTRS_IO_CON,
};

/**
 * ibtrs_clt_get_tag() - reserve a tag (and a server chunk) for one request
 * @sess: the session
 * @con_type: connection type the request will use
 * @wait: IBTRS_TAG_WAIT to sleep until a tag is free, IBTRS_TAG_NOWAIT to
 *        fail at once
 *
 * Return: the tag, or NULL with errno EAGAIN (NOWAIT and no tag free),
 * EINVAL (bad @con_type or @wait) or ECONNABORTED (the session is closing).
 *
 * Context: sleeps if @wait is IBTRS_TAG_WAIT; may be called from callbacks
 * only with IBTRS_TAG_NOWAIT.
 */
struct ibtrs_tag *ibtrs_clt_get_tag(struct ibtrs_clt *sess,
				    enum ibtrs_clt_con_type con_type, int wait);

/**
 * ibtrs_clt_put_tag() - release a tag
 * @sess: the session
 * @tag: a tag from ibtrs_clt_get_tag(), or NULL
 *
 * The tag must have no request in flight. Threads sleeping in
 * ibtrs_clt_get_tag() are woken in batches: while requests of the session
 * are in flight, one per quarter of the queue depth (at most 32) of tags
 * put back; the put that leaves no request in flight wakes them all.
 *
 * Context: any, including callbacks.
 */
void ibtrs_clt_put_tag(struct ibtrs_clt *sess, struct ibtrs_tag *tag);

/**
 * typedef ibtrs_conf_fn - request confirmation
 * @priv: the @priv given to ibtrs_clt_request()
 * @err: 0, or the negative errno of the failure: the server's answer from
 *       ibtrs_srv_resp_rdma() or the rdma_ev return value, unchanged;
 *       -ECONNABORTED when the request was lost
 *
 * Context: runs on a library thread, with no library lock held.
 */
typedef void(ibtrs_conf_fn)(void *priv, int err);

/**
 * ibtrs_clt_request() - transfer data to or from the server
 * @dir: IBTRS_READ or IBTRS_WRITE
 * @conf: confirmation callback
 * @sess: the session
 * @tag: a tag held by the caller, with no request in flight
 * @priv: user data passed back to @conf
 * @vec: user message sent with the request; copied, may live on the stack
 * @nr: number of elements in @vec
 * @len: number of data bytes, the sum of the @sg lengths
 * @sg: data buffers: the source of a WRITE, the destination of a READ
 * @sg_cnt: number of elements in @sg
 *
 * WRITE places @len bytes of @sg into the tag's server chunk; READ asks the
 * server for @len bytes and places its answer into @sg. The @sg buffers are
 * borrowed until @conf runs.
 *
 * Return: 0 when the request was submitted: @conf then runs exactly once.
 * On error @conf is not called: -EINVAL (bad @dir, NULL @tag, @len differs
 * from the @sg sum, @sg_cnt over max_segments), -EMSGSIZE (@len over
 * max_io_size or user message over IBTRS_MAX_USR_MSG), -ENOTCONN (no
 * connected path), -EBUSY (the tag has a request in flight).
 *
 * Context: does not block; may be called from callbacks.
 */
int ibtrs_clt_request(int dir, ibtrs_conf_fn *conf, struct ibtrs_clt *sess,
		      struct ibtrs_tag *tag, void *priv,
		      const struct iovec *vec, size_t nr, size_t len,
		      const struct iovec *sg, unsigned int sg_cnt);

/**
 * struct ibtrs_attrs - session attributes
 * @queue_depth: number of tags (server chunks) of the session
 * @max_io_size: largest data length of one request
 * @sessname: the session name
 * @max_segments: largest number of data iovecs of one request
 * @path_cnt: number of paths of the session
 * @connected_paths: number of those currently connected
 */
struct ibtrs_attrs {
	uint32_t queue_depth;
	uint32_t max_io_size;
	uint8_t sessname[NAME_MAX];
	uint32_t max_segments;
	uint32_t path_cnt;
	uint32_t connected_paths;
};

/**
 * ibtrs_clt_query() - query session attributes
 * @sess: the session
 * @attr: filled on success
 *
 * Return: 0, -EINVAL for NULL arguments, -ECOMM when no path is connected
 * (@attr is filled all the same).
 *
 * Context: any.
 */
int ibtrs_clt_query(struct ibtrs_clt *sess, struct ibtrs_attrs *attr);

/*
 * Server API
 */

/**
 * enum ibtrs_srv_link_ev - server link events, once per session
 * @IBTRS_SRV_LINK_EV_CONNECTED: the first path of a session connected
 * @IBTRS_SRV_LINK_EV_DISCONNECTED: the session's last path is gone and every
 *                                  request of it was answered; the session is
 *                                  freed after the callback returns
 */
enum ibtrs_srv_link_ev {
	IBTRS_SRV_LINK_EV_CONNECTED,
	IBTRS_SRV_LINK_EV_DISCONNECTED,
};

/**
 * typedef rdma_ev_fn - a request arrived
 * @sess: the session
 * @priv: the pointer set by ibtrs_srv_set_sess_priv()
 * @id: the operation; answer it with ibtrs_srv_resp_rdma() exactly once
 * @dir: IBTRS_READ or IBTRS_WRITE
 * @data: WRITE: the client's data; READ: where the answer goes
 * @datalen: bytes at @data
 * @usr: the user message of the request
 * @usrlen: bytes at @usr
 *
 * @data and @usr stay valid until ibtrs_srv_resp_rdma() is called for @id.
 *
 * Return: 0, after which the application calls ibtrs_srv_resp_rdma() now or
 * later; or a negative errno, which is sent to the client at once (the
 * application must then not call ibtrs_srv_resp_rdma() for @id).
 *
 * Context: runs on a library thread, with no library lock held.
 */
typedef int(rdma_ev_fn)(struct ibtrs_srv *sess, void *priv,
			struct ibtrs_srv_op *id, int dir, void *data,
			size_t datalen, const void *usr, size_t usrlen);

/**
 * typedef link_ev_fn - server link event
 * @sess: the session
 * @ev: the event
 * @priv: the pointer set by ibtrs_srv_set_sess_priv()
 *
 * A non-zero return for IBTRS_SRV_LINK_EV_CONNECTED refuses the session: its
 * connections are closed and IBTRS_SRV_LINK_EV_DISCONNECTED is not sent.
 *
 * Context: runs on a library thread, with no library lock held.
 */
typedef int(link_ev_fn)(struct ibtrs_srv *sess, enum ibtrs_srv_link_ev ev,
			void *priv);

/**
 * ibtrs_srv_open() - open a server context listening on @port
 * @rdma_ev: request callback
 * @link_ev: link event callback, may be NULL
 * @port: TCP port; 0 picks a free one (see ibtrs_srv_get_port())
 *
 * Listens on every address, IPv6 and IPv4, with the default queue depth and
 * chunk size (ibtrs_srv_open_opts() chooses others).
 *
 * Return: the context, or NULL with errno set: EINVAL, EADDRINUSE, ENOMEM.
 *
 * Context: may block briefly.
 */
struct ibtrs_srv_ctx *ibtrs_srv_open(rdma_ev_fn *rdma_ev, link_ev_fn *link_ev,
				     unsigned int port);

/**
 * ibtrs_srv_close() - close a server context and all its sessions
 * @ctx: the context, or NULL
 *
 * Closes every connection, waits until the application has answered every
 * request it was given (ibtrs_srv_resp_rdma()), sends
 * IBTRS_SRV_LINK_EV_DISCONNECTED for every connected session and frees it.
 *
 * Context: blocks. Must not be called from a callback of the context.
 */
void ibtrs_srv_close(struct ibtrs_srv_ctx *ctx);

/**
 * ibtrs_srv_resp_rdma() - finish a request
 * @id: the operation given to rdma_ev_fn
 * @err: 0, or a negative errno (-1..-4095) delivered to the client's conf
 *
 * For a READ the @datalen bytes at @data are sent to the client first.
 * After the call the chunk of @id belongs to the library again.
 *
 * Context: any thread, inside or after rdma_ev_fn; does not block.
 */
void ibtrs_srv_resp_rdma(struct ibtrs_srv_op *id, int err);

/**
 * ibtrs_srv_set_sess_priv() - set the private pointer of a session
 * @sess: the session
 * @priv: the pointer passed to later callbacks of @sess
 */
void ibtrs_srv_set_sess_priv(struct ibtrs_srv *sess, void *priv);

/**
 * ibtrs_srv_get_queue_depth() - number of chunks of a session
 * @sess: the session
 *
 * Return: the queue depth.
 */
int ibtrs_srv_get_queue_depth(struct ibtrs_srv *sess);

/**
 * ibtrs_srv_get_sess_name() - the name the client gave the session
 * @sess: the session
 * @sessname: buffer for the NUL-terminated name
 * @len: size of @sessname
 *
 * Return: 0, -EINVAL for NULL arguments, -ENOBUFS when @len is too small
 * (the name is truncated).
 */
int ibtrs_srv_get_sess_name(struct ibtrs_srv *sess, char *sessname, size_t len);

/**
 * ibtrs_srv_get_identity() - who the client of a session is
 * @sess: the session
 * @identity: buffer for the NUL-terminated identity
 * @len: size of @identity
 *
 * With keys, the identity of the key the client proved (the name before
 * ':' in the key file); without keys, "addr:" and the client's address as
 * its first path came from (no port). A link_ev() callback can refuse a
 * session of an identity at IBTRS_SRV_LINK_EV_CONNECTED (ibtrs(7),
 * "Security").
 *
 * Return: 0, -EINVAL for NULL arguments, -ENOBUFS when @len is too small
 * (the identity is truncated).
 *
 * Context: any.
 */
int ibtrs_srv_get_identity(struct ibtrs_srv *sess, char *identity, size_t len);

/**
 * ibtrs_addr_to_sockaddr() - parse a path string
 * @str: "DST" or "SRC,DST"; each address is "ip:ADDR" where ADDR is an IPv4
 *       address, an IPv6 address (optionally with "%ifname"), or a host
 *       name; an IPv6 address may be written in brackets with a port,
 *       "ip:[::1]:4000", an IPv4 address or name with ":PORT" appended
 * @len: length of @str (it need not be NUL-terminated)
 * @port: port stored in the destination when @str names none
 * @addr: @addr->dst must point to storage and is filled; @addr->src is
 *        filled if @str has a source and @addr->src points to storage, and
 *        set to NULL if @str has no source: a struct reused for the next
 *        string needs @addr->src pointed at storage again, or a string with
 *        a source fails with -EINVAL
 *
 * Return: 0, -EINVAL for a malformed string, a missing destination storage
 * or a source given without storage; -EHOSTUNREACH when a host name does not
 * resolve.
 *
 * Context: may block in name resolution for host names.
 */
int ibtrs_addr_to_sockaddr(const char *str, size_t len, uint16_t port,
			   struct ibtrs_addr *addr);

/* ======================================================================
 * Extensions beyond the IBTRS header
 * ====================================================================== */

#define IBTRS_MAX_PATHS 16
#define IBTRS_MAX_USR_MSG 1024
#define IBTRS_DEFAULT_MAX_SEGMENTS 128
#define IBTRS_DEFAULT_PORT 1234
#define IBTRS_DEFAULT_QUEUE_DEPTH 128
#define IBTRS_DEFAULT_MAX_IO_SIZE (128 * 1024)
#define IBTRS_MAX_QUEUE_DEPTH 4096
#define IBTRS_MAX_BUSY_POLL_US 1000000
#define IBTRS_MAX_IO_CONS 8
/* Most loop threads a process's shared client loops can have. */
#define IBTRS_MAX_LOOP_THREADS 64

/**
 * enum ibtrs_tls_mode - TLS 1.3 with pre-shared keys (tcp backend only)
 * @IBTRS_TLS_DEFAULT: as the environment variable IBTRS_TLS says
 *                     ("off", "on" or "require"), else off
 * @IBTRS_TLS_OFF: plaintext; a TLS peer is refused with a clear error
 * @IBTRS_TLS_ON: a server accepts TLS and plaintext clients; a client
 *                speaks TLS and never falls back to plaintext
 * @IBTRS_TLS_REQUIRE: TLS only, on both sides
 *
 * TLS needs a key file (@tls_psk_file of the options). Independently of
 * TLS, every connection of every backend is authenticated (ibtrs(7),
 * "Security"): with a key file by the key, without one by the session's
 * own secret.
 */
enum ibtrs_tls_mode {
	IBTRS_TLS_DEFAULT = 0,
	IBTRS_TLS_OFF = 1,
	IBTRS_TLS_ON = 2,
	IBTRS_TLS_REQUIRE = 3,
};

/**
 * struct ibtrs_srv_opts - options of ibtrs_srv_open_opts()
 * @size: sizeof(struct ibtrs_srv_opts), set by ibtrs_srv_opts_init()
 * @port: TCP port; 0 picks a free one
 * @listen_addr: address to listen on, NULL for every address
 * @queue_depth: chunks per session, 1..IBTRS_MAX_QUEUE_DEPTH
 * @max_io_size: largest data length of one request; each chunk has
 *               @max_io_size plus IBTRS_MAX_USR_MSG and a small header
 * @max_sessions: sessions served at once (default 512); a client beyond
 *                that, or beyond @max_memory, is refused
 * @hb_timeout_ms: a path that received nothing for this long is closed
 *                 (default 1000, min 100)
 * @sess_grace_ms: how long a session whose last path died is kept for the
 *                 client to come back, with its chunks and the results of
 *                 its requests (default 10000)
 * @no_control: keep the context off the process's control socket
 * @busy_poll_us: after an event the server's thread polls for this many
 *                microseconds before it sleeps (default 0: never;
 *                at most IBTRS_MAX_BUSY_POLL_US); spends CPU to cut the
 *                wake-up latency
 * @busy_poll_adaptive: with @busy_poll_us, poll for a window of at most
 *                      @busy_poll_us that grows while events come closer
 *                      together than that and closes while they come
 *                      further apart: polls under load, sleeps at once
 *                      when idle (default false)
 * @backend: backend name, NULL for the default ("tcp")
 * @rdma_ev: request callback
 * @link_ev: link event callback, may be NULL
 * @max_memory: server-wide memory limit in bytes (default 8 GiB; 0: none):
 *              every session counts its whole chunk pool, its operations
 *              and 64 KiB, every connection 384 KiB plus 1 KiB a chunk
 *              (and 640 KiB more with @tls on or require);
 *              a session or
 *              connection that would go beyond it is refused. The pools
 *              are reserved address space: a page costs memory only once
 *              a request wrote it, so the resident memory follows the
 *              requests and stays below this bound (ibtrs(7))
 * @tls: enum ibtrs_tls_mode (appended, as every field below)
 * @tls_psk_file: key file in the format of psktool ("identity:hexkey" per
 *                line); NULL: the environment variable IBTRS_TLS_PSK, else
 *                none. With keys, only a client that proves one of them
 *                connects, and a session belongs to that identity
 * @max_sessions_per_client: sessions one client identity (its key's
 *                           identity, or without keys its source address)
 *                           may hold, those in grace included (default 64;
 *                           0: the default); beyond it a new session is
 *                           refused with EUSERS, and no session is ended
 *                           to make room
 * @max_cons_per_client: connections one client identity may hold
 *                       (default 1024; 0: the default); beyond it refused
 *                       with EUSERS
 * @max_handshakes_per_client: connections from one source address that
 *                             have not finished their handshake (default
 *                             16; 0: the default; at most 1024 of all
 *                             addresses together); beyond it new ones are
 *                             refused with EAGAIN
 * @handshake_timeout_ms: a connection whose handshake has not finished
 *                        after this long is closed (default 5000; 0: the
 *                        default)
 * @loop_threads: loop threads of the context (default 1; 0 or 1: one, at
 *                most IBTRS_SRV_MAX_LOOPS): the first also runs the
 *                listener and every handshake; a new session is placed on
 *                the one with the fewest sessions, and all of it (its
 *                paths, requests, heartbeats) runs there. A backend that
 *                cannot move a connection between loops runs one, and
 *                says so in the log (ibtrs(7), "Threads and callbacks")
 */
#define IBTRS_SRV_MAX_LOOPS 64

struct ibtrs_srv_opts {
	size_t size;
	uint16_t port;
	const struct sockaddr *listen_addr;
	uint32_t queue_depth;
	uint32_t max_io_size;
	uint32_t max_sessions;
	const char *backend;
	rdma_ev_fn *rdma_ev;
	link_ev_fn *link_ev;
	uint32_t hb_timeout_ms;
	uint32_t sess_grace_ms;
	bool no_control;
	uint32_t busy_poll_us;
	bool busy_poll_adaptive;
	uint64_t max_memory;
	int tls;
	const char *tls_psk_file;
	uint32_t max_sessions_per_client;
	uint32_t max_cons_per_client;
	uint32_t max_handshakes_per_client;
	uint32_t handshake_timeout_ms;
	uint32_t loop_threads;
};

/**
 * ibtrs_srv_opts_init() - fill @opts with the defaults
 * @opts: options to fill
 * @size: sizeof(*opts) as the caller knows it
 */
void ibtrs_srv_opts_init(struct ibtrs_srv_opts *opts, size_t size);

/**
 * ibtrs_srv_open_opts() - open a server context with options
 * @opts: the options; @opts->rdma_ev must be set
 *
 * Return: as ibtrs_srv_open().
 *
 * Context: may block briefly.
 */
struct ibtrs_srv_ctx *ibtrs_srv_open_opts(const struct ibtrs_srv_opts *opts);

/**
 * ibtrs_srv_get_port() - the port a server context listens on
 * @ctx: the context
 *
 * Return: the port (useful after opening with port 0).
 */
uint16_t ibtrs_srv_get_port(struct ibtrs_srv_ctx *ctx);

/**
 * struct ibtrs_srv_stats - counters of a server context
 * @size: sizeof(struct ibtrs_srv_stats), set by the caller
 * @sessions: sessions now (including those kept for a returning client)
 * @paths: paths now
 * @requests: requests given to rdma_ev
 * @replays: requests a client sent again after a failover, answered
 *           without calling rdma_ev again
 * @busy: requests refused with -EBUSY because an earlier request on the
 *        same tag was still running
 * @proto_errors: protocol errors of every kind: a malformed connection
 *                request (refused), and the three kinds below
 * @stale: requests not run, answered -ESTALE, because their tag had
 *         already run a newer request: late copies from a path that died
 *         (extension)
 * @proto_xprt: connections the backend closed for a malformed frame or an
 *              access out of bounds (transport level; the path is closed)
 * @proto_msg: paths closed for a malformed message (message level)
 * @gen_rejected: requests refused with -EPROTO for a generation outside the
 *                tag's window; the path stays, the tag's state is unchanged
 * @refused_full: new sessions refused with -ENOSPC because the server held
 *                max_sessions (sessions in grace are never ended for room)
 * @auth_failed: connections refused by the authentication: no key where
 *               the server has keys, an unknown identity, a wrong proof of
 *               the key or of the session's secret, a malformed AUTH_REQ,
 *               a client that does not authenticate (ibtrs(7), "Security")
 * @refused_limit: connections refused by a per-client limit: sessions,
 *                 connections or half-open handshakes of one identity or
 *                 source address, half-open handshakes in total, paths of
 *                 a session; and handshakes closed by the handshake timeout
 */
struct ibtrs_srv_stats {
	size_t size;
	uint32_t sessions;
	uint32_t paths;
	uint64_t requests;
	uint64_t replays;
	uint64_t busy;
	uint64_t proto_errors;
	uint64_t stale;
	uint64_t proto_xprt;
	uint64_t proto_msg;
	uint64_t gen_rejected;
	uint64_t refused_full;
	uint64_t auth_failed;
	uint64_t refused_limit;
};

/**
 * ibtrs_srv_get_stats() - read the counters of a server context
 * @ctx: the context
 * @st: filled on success; @st->size must be set
 *
 * Return: 0, -EINVAL for NULL arguments or a bad @st->size.
 *
 * Context: any.
 */
int ibtrs_srv_get_stats(struct ibtrs_srv_ctx *ctx, struct ibtrs_srv_stats *st);

/**
 * struct ibtrs_clt_opts - options of ibtrs_clt_open_opts()
 * @size: sizeof(struct ibtrs_clt_opts), set by ibtrs_clt_opts_init()
 * @priv, @link_ev, @sessname, @paths, @path_cnt, @port, @pdu_sz,
 * @reconnect_delay_sec, @max_segments, @max_reconnect_attempts:
 *     as for ibtrs_clt_open()
 * @connect_timeout_ms: time allowed to connect one path (default 2000)
 * @io_cons: I/O connections per path besides con 0 (default 1, at most
 *           IBTRS_MAX_IO_CONS)
 * @backend: backend name, NULL for the default ("tcp")
 * @policy: multipath policy (default IBTRS_MP_MIN_INFLIGHT)
 * @hb_timeout_ms: a path that received nothing for this long is declared
 *                 dead (default 1000, min 100); heartbeats go out every
 *                 quarter of it, and TCP_USER_TIMEOUT is set to it
 * @failover_timeout_ms: how long a request whose path died may wait for a
 *                       path to come back before it fails with
 *                       -ECONNABORTED (default 30000)
 * @no_control: keep the session off the process's control socket (see
 *              ibtrs(7): `ibtrs status` and path control); the
 *              environment variable IBTRS_CONTROL=0 does the same for all
 * @busy_poll_us: after an event the session's thread polls for this many
 *                microseconds before it sleeps (default 0: never; at most
 *                IBTRS_MAX_BUSY_POLL_US); spends CPU to cut the wake-up
 *                latency of completions
 * @busy_poll_adaptive: with @busy_poll_us, poll for a window of at most
 *                      @busy_poll_us that grows while events come closer
 *                      together than that and closes while they come
 *                      further apart: polls under load, sleeps at once
 *                      when idle (default false)
 * @no_path_timeout_ms: how long a new request may wait for a path when
 *                      none is connected but one is connecting or being
 *                      reconnected: ibtrs_clt_request() then returns 0
 *                      and the request is posted as soon as a path is up,
 *                      or completes with -ECONNABORTED when the time is
 *                      up or no path is left to wait for; bounded by the
 *                      tags, as every request. 0 (the default): such a
 *                      request fails at once with -ENOTCONN (appended)
 * @replay_on_session_loss: after a session loss (a path rejoined a server
 *                          session of another incarnation: the server
 *                          restarted or ended the session), send the
 *                          requests that were in flight to the new
 *                          session instead of completing them with
 *                          -ECONNRESET. Such a request may then run twice:
 *                          only for idempotent requests (a block device
 *                          writing the same data to the same offset).
 *                          Default false. See ibtrs(7), "At most once".
 *                          (appended: set @size to use it)
 * @tls: enum ibtrs_tls_mode (appended, as every field below)
 * @tls_psk_file: key file in the format of psktool; NULL: the environment
 *                variable IBTRS_TLS_PSK, else none. With a key, the client
 *                proves it and the server must prove it back
 * @identity: which key of the file to use; NULL: the environment variable
 *            IBTRS_IDENTITY, else the file's first key
 * @loop_threads: 0 (the default): the session runs on a loop thread of
 *                its own, as it always did. N (1..IBTRS_MAX_LOOP_THREADS):
 *                on one of the process's shared client loops, the one of
 *                the first N with the fewest sessions, made on first use
 *                and ended when its last session closes: many sessions of
 *                one process then take N threads, not one each, and
 *                completions of several sessions are handled in one
 *                batch. Each session keeps its own tick and its state
 *                stays its loop thread's; a session asking for busy
 *                polling sets it for its whole loop. A blocking call on a
 *                session must then not come from a callback of any
 *                session on the same loop; an open with loop_threads from
 *                a callback on any shared loop fails with EDEADLK. See
 *                ibtrs(7), "Threads".
 *                (appended)
 */
struct ibtrs_clt_opts {
	size_t size;
	void *priv;
	link_clt_ev_fn *link_ev;
	const char *sessname;
	const struct ibtrs_addr *paths;
	size_t path_cnt;
	uint16_t port;
	size_t pdu_sz;
	uint8_t reconnect_delay_sec;
	uint16_t max_segments;
	int16_t max_reconnect_attempts;
	uint32_t connect_timeout_ms;
	uint32_t io_cons;
	const char *backend;
	int policy;
	uint32_t hb_timeout_ms;
	uint32_t failover_timeout_ms;
	bool no_control;
	uint32_t busy_poll_us;
	bool busy_poll_adaptive;
	uint32_t no_path_timeout_ms;
	bool replay_on_session_loss;
	int tls;
	const char *tls_psk_file;
	const char *identity;
	uint32_t loop_threads;
};

/**
 * ibtrs_clt_opts_init() - fill @opts with the defaults
 * @opts: options to fill
 * @size: sizeof(*opts) as the caller knows it
 */
void ibtrs_clt_opts_init(struct ibtrs_clt_opts *opts, size_t size);

/**
 * ibtrs_clt_open_opts() - open a client session with options
 * @opts: the options
 *
 * Return: as ibtrs_clt_open().
 *
 * Context: blocks, as ibtrs_clt_open().
 */
struct ibtrs_clt *ibtrs_clt_open_opts(const struct ibtrs_clt_opts *opts);

/**
 * enum ibtrs_path_state - state of a client path
 */
enum ibtrs_path_state {
	IBTRS_PATH_CONNECTING,
	IBTRS_PATH_CONNECTED,
	IBTRS_PATH_RECONNECTING,
	IBTRS_PATH_CLOSING,
	IBTRS_PATH_CLOSED,
	IBTRS_PATH_DEAD,
};

/**
 * ibtrs_path_state_str() - name of a path state
 * @state: the state
 *
 * Return: a static string such as "connected".
 */
const char *ibtrs_path_state_str(enum ibtrs_path_state state);

/**
 * struct ibtrs_path_stats - counters of one client path
 * @size: sizeof(struct ibtrs_path_stats), set by the caller
 * @state: current state
 * @src: source address as text ("" when the system chose it)
 * @dst: destination address as text
 * @inflight: requests in flight on the path now
 * @rd_ops: completed READ requests
 * @rd_bytes: data bytes of completed READ requests
 * @wr_ops: completed WRITE requests
 * @wr_bytes: data bytes of completed WRITE requests
 * @errors: requests completed with an error
 * @proto_errors: protocol errors of the peer seen on the path, each of which
 *                failed it: malformed messages, and the transport-level
 *                ones counted in @proto_xprt
 * @failovers: requests moved from this path to another after it failed
 * @reconnect_attempts: connects tried after the path failed
 * @reconnects: of those, the successful ones
 * @hb_rtt_us: last heartbeat round trip, microseconds (0: none yet)
 * @lat_p50_us, @lat_p99_us, @lat_p999_us: request latency percentiles,
 *                                         microseconds, since the last reset
 * @lat_max_us: the longest request latency since the last reset,
 *              microseconds (appended: set @size to see it)
 * @demoted: the path is connected but sick (gray failure: far slower than
 *           the others, or lossy): it gets no new requests but probes
 *           while another path is healthy (appended)
 * @demote_reason: "slow" or "lossy" while @demoted, else "" (appended)
 * @demotions: times the path was demoted (appended)
 * @readmissions: times it was re-admitted after probation (appended)
 * @proto_xprt: of @proto_errors, the frames the backend refused
 *              (transport level; appended)
 */
struct ibtrs_path_stats {
	size_t size;
	enum ibtrs_path_state state;
	char src[80];
	char dst[80];
	uint64_t inflight;
	uint64_t rd_ops;
	uint64_t rd_bytes;
	uint64_t wr_ops;
	uint64_t wr_bytes;
	uint64_t errors;
	uint64_t proto_errors;
	uint64_t failovers;
	uint64_t reconnect_attempts;
	uint64_t reconnects;
	uint64_t hb_rtt_us;
	uint64_t lat_p50_us;
	uint64_t lat_p99_us;
	uint64_t lat_p999_us;
	uint64_t lat_max_us;
	bool demoted;
	char demote_reason[16];
	uint64_t demotions;
	uint64_t readmissions;
	uint64_t proto_xprt;
};

/**
 * struct ibtrs_clt_stats - counters of a client session
 * @size: sizeof(struct ibtrs_clt_stats), set by the caller
 * @incarnation: the server session's incarnation, as its last join told
 *               it; 0 before the first join or with a server that tells
 *               none
 * @session_losses: joins that found another incarnation than the session
 *                  had: the server restarted or ended the session
 * @unknown_outcome: requests in flight at a session loss, completed with
 *                   -ECONNRESET: they may or may not have run
 * @replayed_after_loss: such requests sent to the new server session
 *                       instead (replay_on_session_loss)
 * @proto_errors: protocol errors of every path, as in ibtrs_path_stats
 * @proto_xprt: of those, the transport-level ones
 */
struct ibtrs_clt_stats {
	size_t size;
	uint64_t incarnation;
	uint64_t session_losses;
	uint64_t unknown_outcome;
	uint64_t replayed_after_loss;
	uint64_t proto_errors;
	uint64_t proto_xprt;
};

/**
 * ibtrs_clt_get_stats() - read the session-wide counters of a client
 * @sess: the session
 * @st: filled on success; @st->size must be set
 *
 * Return: 0, -EINVAL for NULL arguments or a bad @st->size.
 *
 * Context: any.
 */
int ibtrs_clt_get_stats(struct ibtrs_clt *sess, struct ibtrs_clt_stats *st);

/**
 * ibtrs_clt_path_stats() - read the counters of one path
 * @sess: the session
 * @idx: path index, 0..path_cnt-1 (ibtrs_clt_query())
 * @st: filled on success; @st->size must be set
 *
 * Return: 0, -EINVAL for NULL arguments or a bad @st->size, -ENOENT for an
 * @idx out of range.
 *
 * Context: any.
 */
int ibtrs_clt_path_stats(struct ibtrs_clt *sess, unsigned int idx,
			 struct ibtrs_path_stats *st);

/**
 * enum ibtrs_mp_policy - how a session picks the path of a request
 * @IBTRS_MP_ROUND_ROBIN: each connected path in turn
 * @IBTRS_MP_MIN_INFLIGHT: the connected path with the fewest requests in
 *                         flight (the default)
 * @IBTRS_MP_MIN_LATENCY: the connected path with the lowest heartbeat RTT
 */
enum ibtrs_mp_policy {
	IBTRS_MP_ROUND_ROBIN = 0,
	IBTRS_MP_MIN_INFLIGHT = 1,
	IBTRS_MP_MIN_LATENCY = 2,
};

/**
 * ibtrs_mp_policy_str() - name of a policy ("round-robin", "min-inflight",
 * "min-latency")
 * @policy: the policy
 *
 * Return: a static string, "unknown" for a bad value.
 */
const char *ibtrs_mp_policy_str(int policy);

/**
 * ibtrs_clt_set_policy() - switch the multipath policy of a session
 * @sess: the session
 * @policy: an enum ibtrs_mp_policy value
 *
 * Takes effect for the next request; requests in flight are not moved.
 *
 * Return: 0, -EINVAL for a bad @policy.
 *
 * Context: any.
 */
int ibtrs_clt_set_policy(struct ibtrs_clt *sess, int policy);

/**
 * ibtrs_clt_get_policy() - the multipath policy of a session
 * @sess: the session
 *
 * Return: an enum ibtrs_mp_policy value, -EINVAL for a NULL @sess.
 */
int ibtrs_clt_get_policy(struct ibtrs_clt *sess);

/**
 * ibtrs_clt_add_path() - add a path to an open session
 * @sess: the session
 * @addr: source (may be NULL) and destination of the path
 *
 * Connects the path and adds it to the session; if the connect fails the
 * path stays in the session and is reconnected like any failed path.
 *
 * Return: the index of the new path (>= 0), -EINVAL, -ENOSPC when the
 * session has IBTRS_MAX_PATHS paths, or -EEXIST when a path with the same
 * addresses exists.
 *
 * Context: blocks up to the connect timeout.
 */
int ibtrs_clt_add_path(struct ibtrs_clt *sess, const struct ibtrs_addr *addr);

/**
 * ibtrs_clt_remove_path() - remove a path from a session
 * @sess: the session
 * @idx: path index
 *
 * New requests stop going to the path; the requests in flight on it finish
 * (those still running after 5 s move to another path); then the path is
 * closed and its state becomes IBTRS_PATH_DEAD. Indexes of other paths do
 * not change.
 *
 * Return: 0, -ENOENT for a bad or already removed @idx.
 *
 * Context: blocks until the path drained.
 */
int ibtrs_clt_remove_path(struct ibtrs_clt *sess, unsigned int idx);

/**
 * ibtrs_clt_disconnect_path() - close a path but keep it in the session
 * @sess: the session
 * @idx: path index
 *
 * Requests in flight on it move to other paths. The path is not
 * reconnected until ibtrs_clt_reconnect_path().
 *
 * Return: 0, -ENOENT for a bad @idx.
 *
 * Context: does not wait for the path to close.
 */
int ibtrs_clt_disconnect_path(struct ibtrs_clt *sess, unsigned int idx);

/**
 * ibtrs_clt_reconnect_path() - close a path if needed and connect it again
 * @sess: the session
 * @idx: path index
 *
 * Resets the path's reconnect attempts.
 *
 * Return: 0 once connected, -ENOENT for a bad @idx, or the connect error.
 *
 * Context: blocks up to the connect timeout.
 */
int ibtrs_clt_reconnect_path(struct ibtrs_clt *sess, unsigned int idx);

struct ibtrs_mem;

#define IBTRS_MAX_MEM_REGS 64

/**
 * ibtrs_clt_mem_reg() - register memory for requests without a copy
 * @sess: the session
 * @addr: start of the memory
 * @len: its length, > 0
 *
 * Backends that need registered memory (ofi: RDMA hardware) send a
 * WRITE's data straight from @addr..@addr+@len when every data iovec of the
 * request lies inside registered memory, and let the server write a READ's
 * answer straight into it when the request has one data iovec inside it;
 * other requests go through the backend's registered bounce buffers, a
 * copy. The tcp backend never copies and needs no registration. The
 * server may write anywhere in the region of a READ in flight, as with
 * RTRS without always_invalidate.
 *
 * Return: the registration, or NULL with errno EINVAL, ENOSPC (more than
 * IBTRS_MAX_MEM_REGS regions) or the backend's error.
 *
 * Context: may block; not from callbacks.
 */
struct ibtrs_mem *ibtrs_clt_mem_reg(struct ibtrs_clt *sess, void *addr,
				    size_t len);

/**
 * ibtrs_clt_mem_dereg() - undo ibtrs_clt_mem_reg()
 * @sess: the session
 * @mem: the registration, or NULL
 *
 * No request using the memory may be in flight.
 *
 * Context: may block; not from callbacks.
 */
void ibtrs_clt_mem_dereg(struct ibtrs_clt *sess, struct ibtrs_mem *mem);

/**
 * ibtrs_clt_reset_stats() - zero the counters and histograms of every path
 * @sess: the session
 */
void ibtrs_clt_reset_stats(struct ibtrs_clt *sess);

/**
 * struct ibtrs_event - one entry of a session's event log
 * @ts_ns: CLOCK_REALTIME time of the event, nanoseconds
 * @path: index of the path it concerns, -1 for the session
 * @msg: what happened, e.g. "connected -> reconnecting: heartbeat timeout"
 */
struct ibtrs_event {
	uint64_t ts_ns;
	int path;
	char msg[116];
};

#define IBTRS_EVENT_LOG_LEN 128

/**
 * ibtrs_clt_get_events() - read the session's recent events, oldest first
 * @sess: the session
 * @ev: array to fill
 * @max: elements in @ev
 *
 * The log keeps the last IBTRS_EVENT_LOG_LEN events.
 *
 * Return: the number of events copied.
 *
 * Context: any.
 */
size_t ibtrs_clt_get_events(struct ibtrs_clt *sess, struct ibtrs_event *ev,
			    size_t max);

/*
 * Fault injection (ibtrs_clt_inject_fault(), enum ibtrs_fault_type) is a
 * test interface outside this stable API: see <ibtrs_fault.h>.
 */

/**
 * ibtrs_control_dir() - the directory of the control sockets
 * @buf: filled with the NUL-terminated path
 * @len: size of @buf
 *
 * Each process with an open session or server context answers on
 * <dir>/<pid>.sock: $IBTRS_RUNTIME_DIR if set, else /run/ibtrs for root,
 * else $XDG_RUNTIME_DIR/ibtrs, else /tmp/ibtrs-<uid>. One request line,
 * one JSON line back: "status", "policy SESS POLICY", "path add SESS ADDR",
 * "path remove|reconnect|disconnect SESS IDX", "fault SESS IDX TYPE [ARG]",
 * "stats reset [SESS]" (see ibtrs(7)).
 *
 * Return: 0, -ENAMETOOLONG when @buf is too small.
 */
int ibtrs_control_dir(char *buf, size_t len);

/**
 * enum ibtrs_log_level - log levels; a message is emitted when its level is
 * at most the current level
 */
enum ibtrs_log_level {
	IBTRS_LOG_NONE = 0,
	IBTRS_LOG_ERR = 1,
	IBTRS_LOG_WARN = 2,
	IBTRS_LOG_INFO = 3,
	IBTRS_LOG_DEBUG = 4,
};

/**
 * typedef ibtrs_log_fn - log callback
 * @arg: the @arg given to ibtrs_set_log_fn()
 * @level: level of the message
 * @msg: the message, NUL-terminated, without a trailing newline
 */
typedef void(ibtrs_log_fn)(void *arg, enum ibtrs_log_level level,
			   const char *msg);

/**
 * ibtrs_set_log_fn() - route log messages to @fn
 * @fn: callback, or NULL to log to stderr
 * @arg: passed to @fn
 *
 * Logging is silent by default; the level comes from the environment
 * variable IBTRS_LOG_LEVEL (0..4 or none, err, warn, info, debug) unless set
 * with ibtrs_set_log_level().
 *
 * Context: any; @fn may be called from any thread, concurrently.
 */
void ibtrs_set_log_fn(ibtrs_log_fn *fn, void *arg);

/**
 * ibtrs_set_log_level() - set the log level
 * @level: the new level
 */
void ibtrs_set_log_level(enum ibtrs_log_level level);

#if defined(IBTRS_BUILD) && defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif /* IBTRS_H */
