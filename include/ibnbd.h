/* SPDX-License-Identifier: MIT */
/*
 * ibnbd.h - public API of libibnbd: network block devices over an ibtrs
 * session (the IBNBD role; RNBD on RTRS in mainline Linux).
 *
 * ibnbd is a consumer of the public ibtrs API only. Its messages ride in
 * the user message of ibtrs_clt_request(), its data in the request's chunk.
 *
 * Client: ibnbd_clt_attach() an existing struct ibtrs_clt session (one
 * version exchange), then ibnbd_dev_open() exports of the server by name,
 * and ibnbd_submit() READ, WRITE, FLUSH, DISCARD and WRITE_ZEROES to them.
 * Requests in flight when a path dies complete after the transport's
 * failover, without error and without running twice; requests submitted
 * while no path is connected wait, up to the queue timeout, for one.
 *
 * Server: ibnbd_srv_create() a table of exports (files and block devices,
 * by name), and hand it every request of an ibtrs server that
 * ibnbd_is_request() recognises, with ibnbd_srv_rdma_ev(). I/O runs
 * asynchronously through io_uring, straight between the chunk and the
 * file.
 *
 * Calls returning int return 0 or a negative errno; calls returning a
 * pointer return NULL and set errno.
 *
 * Link with $(pkg-config --cflags --libs libibnbd).
 */
#ifndef IBNBD_H
#define IBNBD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <ibtrs.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(IBNBD_BUILD) && defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#define IBNBD_VERSION_MAJOR 0
#define IBNBD_VERSION_MINOR 1

/* Longest export name, without the terminating NUL. */
#define IBNBD_NAME_MAX 255

/**
 * enum ibnbd_access_mode - how a device is opened
 * @IBNBD_ACCESS_RO: read only; any number of opens of one export
 * @IBNBD_ACCESS_RW: read and write; one at a time per export
 * @IBNBD_ACCESS_MIGRATION: read and write, granted beside an existing rw
 *                          open (the other end of a live migration)
 */
enum ibnbd_access_mode {
	IBNBD_ACCESS_RO = 0,
	IBNBD_ACCESS_RW = 1,
	IBNBD_ACCESS_MIGRATION = 2,
};

/**
 * enum ibnbd_op - block operations
 * @IBNBD_OP_READ: read @len bytes at @offset into the buffers
 * @IBNBD_OP_WRITE: write the buffers' @len bytes at @offset
 * @IBNBD_OP_FLUSH: make every completed write durable (@offset, @len 0)
 * @IBNBD_OP_DISCARD: the range may be deallocated; it reads as zeros after
 * @IBNBD_OP_WRITE_ZEROES: the range reads as zeros after; deallocated
 *                         unless IBNBD_F_NOUNMAP
 */
enum ibnbd_op {
	IBNBD_OP_READ = 0,
	IBNBD_OP_WRITE = 1,
	IBNBD_OP_FLUSH = 2,
	IBNBD_OP_DISCARD = 3,
	IBNBD_OP_WRITE_ZEROES = 4,
};

/* Flags of ibnbd_submit(). */
/* The write is durable when it completes (WRITE, WRITE_ZEROES, DISCARD). */
#define IBNBD_F_FUA 0x1u
/* Flush every earlier completed write before this request runs. */
#define IBNBD_F_PREFLUSH 0x2u
/* WRITE_ZEROES: keep the range allocated. */
#define IBNBD_F_NOUNMAP 0x4u
/* Fail with -EAGAIN instead of sleeping when no tag is free (local). */
#define IBNBD_F_NOWAIT 0x100u

/* Flags of struct ibnbd_geometry. */
#define IBNBD_DEV_READONLY 0x1u	     /* opened or exported read only */
#define IBNBD_DEV_FUA 0x2u	     /* IBNBD_F_FUA is done natively */
#define IBNBD_DEV_WRITE_CACHE 0x4u   /* writes need FLUSH to be durable */
#define IBNBD_DEV_DISCARD 0x8u	     /* IBNBD_OP_DISCARD is supported */
#define IBNBD_DEV_WRITE_ZEROES 0x10u /* IBNBD_OP_WRITE_ZEROES too */

/**
 * struct ibnbd_geometry - what ibnbd_dev_open() learned of a device
 * @size: bytes
 * @logical_block_size: offsets and lengths are multiples of it (512..65536)
 * @physical_block_size: the device's own block, >= @logical_block_size
 * @max_io_size: largest READ or WRITE, bytes: the lower of the export's
 *               limit and the session's max_io_size
 * @max_discard: largest DISCARD, bytes (0: none)
 * @max_write_zeroes: largest WRITE_ZEROES, bytes (0: none)
 * @discard_granularity: bytes
 * @max_segments: largest number of buffers of one request
 * @flags: IBNBD_DEV_*
 * @device_id: the server's id of this open (for logs)
 */
struct ibnbd_geometry {
	uint64_t size;
	uint32_t logical_block_size;
	uint32_t physical_block_size;
	uint32_t max_io_size;
	uint32_t max_discard;
	uint32_t max_write_zeroes;
	uint32_t discard_granularity;
	uint32_t max_segments;
	uint32_t flags;
	uint32_t device_id;
};

/*
 * Client API
 */

struct ibnbd_clt;
struct ibnbd_dev;

/**
 * struct ibnbd_clt_opts - options of ibnbd_clt_attach()
 * @size: sizeof(struct ibnbd_clt_opts), set by ibnbd_clt_opts_init()
 * @queue_timeout_ms: how long a request submitted while no path is
 *                    connected waits for one before it fails with
 *                    -ENOTCONN (default 30000; 0 fails at once)
 */
struct ibnbd_clt_opts {
	size_t size;
	uint32_t queue_timeout_ms;
};

/**
 * ibnbd_clt_opts_init() - fill @opts with the defaults
 * @opts: options to fill
 * @size: sizeof(*opts) as the caller knows it
 */
void ibnbd_clt_opts_init(struct ibnbd_clt_opts *opts, size_t size);

/**
 * ibnbd_clt_attach() - start ibnbd on an open ibtrs session
 * @sess: the session; it stays the caller's, and must outlive the result
 * @opts: options, or NULL for the defaults
 *
 * Exchanges the protocol version with the server. The session's tags
 * carry no user area ibnbd needs: any pdu_sz works.
 *
 * Return: the client, or NULL with errno: EINVAL, EPROTONOSUPPORT (the
 * server speaks another major version), EPROTO (a malformed answer),
 * ENOTCONN, ENOMEM, or the server's answer.
 *
 * Context: blocks (one request round trip).
 */
struct ibnbd_clt *ibnbd_clt_attach(struct ibtrs_clt *sess,
				   const struct ibnbd_clt_opts *opts);

/**
 * ibnbd_clt_detach() - stop ibnbd on a session
 * @clt: the client, or NULL
 *
 * Every device must be closed first (ibnbd_dev_close()).
 *
 * Return: 0, or -EBUSY while a device is open (nothing changes).
 *
 * Context: blocks briefly.
 */
int ibnbd_clt_detach(struct ibnbd_clt *clt);

/**
 * ibnbd_dev_open() - open an export of the server
 * @clt: the client
 * @name: the export name, 1..IBNBD_NAME_MAX bytes, no '/'
 * @mode: the access mode
 * @geo: filled with the device's geometry on success, may be NULL
 *
 * Return: the device, or NULL with errno: EINVAL (bad arguments), EACCES
 * (the server's allow list does not let this client's identity open the
 * export: ibnbd_srv_allow()), ENOENT (no such export), EROFS (rw asked of a
 * read-only export), EBUSY (the export is open rw elsewhere and @mode is not
 * migration), EMFILE (the session holds the most devices the server allows),
 * ENOTCONN, EPROTO.
 *
 * Context: blocks (one request round trip).
 */
struct ibnbd_dev *ibnbd_dev_open(struct ibnbd_clt *clt, const char *name,
				 enum ibnbd_access_mode mode,
				 struct ibnbd_geometry *geo);

/**
 * ibnbd_dev_close() - close a device and free it
 * @dev: the device, or NULL
 *
 * Waits until every request of @dev has completed (their callbacks have
 * returned), then tells the server.
 *
 * Return: 0, or the negative errno of the CLOSE request (the device is
 * freed all the same).
 *
 * Context: blocks. Must not be called from a callback of @dev.
 */
int ibnbd_dev_close(struct ibnbd_dev *dev);

/**
 * ibnbd_dev_geometry() - the geometry of an open device
 * @dev: the device
 * @geo: filled
 */
void ibnbd_dev_geometry(struct ibnbd_dev *dev, struct ibnbd_geometry *geo);

/**
 * typedef ibnbd_done_fn - completion of one request
 * @priv: the @priv given to ibnbd_submit()
 * @err: 0, or the negative errno of the failure: the server's (-EIO,
 *       -ENOSPC, -EROFS, -EINVAL...) or -ENOTCONN when no path came up
 *       within the queue timeout, -ECONNABORTED when the request was lost
 *
 * Context: runs on a library thread, with no library lock held; may call
 * ibnbd_submit() with IBNBD_F_NOWAIT.
 */
typedef void(ibnbd_done_fn)(void *priv, int err);

/**
 * ibnbd_submit() - start one block request
 * @dev: the device
 * @op: the operation
 * @flags: IBNBD_F_*
 * @offset: byte offset, a multiple of the logical block size
 * @len: bytes, a multiple of the logical block size; for READ and WRITE
 *       the sum of the @iov lengths, at most max_io_size; 0 for FLUSH
 * @iov: READ: where the data goes; WRITE: the data; NULL otherwise. The
 *       buffers are borrowed until @done runs
 * @iovcnt: number of elements of @iov, at most max_segments
 * @done: completion callback
 * @priv: passed to @done
 *
 * Return: 0 when submitted: @done then runs exactly once. On error @done
 * is not called: -EINVAL (bad op, flags, alignment, a range past the end
 * of the device, @len and @iov disagree), -EMSGSIZE (@len over the limit
 * of @op), -EROFS (a write to a read-only device), -EOPNOTSUPP (DISCARD
 * or WRITE_ZEROES the device lacks), -EAGAIN (IBNBD_F_NOWAIT and no tag
 * free), -ESHUTDOWN (the device is closing).
 *
 * Context: sleeps until a tag is free unless IBNBD_F_NOWAIT.
 */
int ibnbd_submit(struct ibnbd_dev *dev, enum ibnbd_op op, uint32_t flags,
		 uint64_t offset, uint32_t len, const struct iovec *iov,
		 unsigned int iovcnt, ibnbd_done_fn *done, void *priv);

/**
 * ibnbd_submit_sync() - run one block request and wait for it
 * @dev, @op, @flags, @offset, @len, @iov, @iovcnt: as ibnbd_submit()
 *
 * Return: 0, or the negative errno ibnbd_submit() or the completion gave.
 *
 * Context: blocks. Must not be called from a callback.
 */
int ibnbd_submit_sync(struct ibnbd_dev *dev, enum ibnbd_op op, uint32_t flags,
		      uint64_t offset, uint32_t len, const struct iovec *iov,
		      unsigned int iovcnt);

/*
 * Server API
 */

struct ibnbd_srv;
struct ibnbd_srv_sess;

/**
 * struct ibnbd_srv_opts - options of ibnbd_srv_create()
 * @size: sizeof(struct ibnbd_srv_opts), set by ibnbd_srv_opts_init()
 * @direct: open exports with O_DIRECT (the page cache is bypassed)
 * @max_io_size: the ibtrs server's max_io_size, reported as the devices'
 *               max transfer (default IBTRS_DEFAULT_MAX_IO_SIZE)
 * @max_devices: devices one session may hold open (default 64)
 * @ring_entries: io_uring submission queue size (default 256)
 */
struct ibnbd_srv_opts {
	size_t size;
	bool direct;
	uint32_t max_io_size;
	uint32_t max_devices;
	uint32_t ring_entries;
};

/**
 * ibnbd_srv_opts_init() - fill @opts with the defaults
 * @opts: options to fill
 * @size: sizeof(*opts) as the caller knows it
 */
void ibnbd_srv_opts_init(struct ibnbd_srv_opts *opts, size_t size);

/**
 * ibnbd_srv_create() - an ibnbd server with no exports yet
 * @opts: options, or NULL for the defaults
 *
 * Return: the server, or NULL with errno: EINVAL, ENOMEM, EOPNOTSUPP
 * (built without liburing), or the error of io_uring_queue_init().
 */
struct ibnbd_srv *ibnbd_srv_create(const struct ibnbd_srv_opts *opts);

/**
 * ibnbd_srv_add_export() - export a file or block device by name
 * @srv: the server
 * @name: the name clients open, 1..IBNBD_NAME_MAX bytes, no '/', not "."
 *        or ".."
 * @path: a regular file or a block device
 * @readonly: refuse rw opens of this export
 *
 * The file is opened now and stays open until ibnbd_srv_destroy().
 *
 * Return: 0, -EINVAL (a bad name, or @path is neither a regular file nor
 * a block device), -EEXIST (the name is taken), or the errno of opening
 * @path.
 */
int ibnbd_srv_add_export(struct ibnbd_srv *srv, const char *name,
			 const char *path, bool readonly);

/**
 * ibnbd_srv_add_export_dir() - export every file of a directory
 * @srv: the server
 * @dir: the directory; each regular file and block device in it (not in
 *       its subdirectories) is exported by its file name
 * @readonly: export them read only
 *
 * Return: the number of exports added, or a negative errno.
 */
int ibnbd_srv_add_export_dir(struct ibnbd_srv *srv, const char *dir,
			     bool readonly);

/**
 * ibnbd_srv_allow() - let the identities of a pattern open some exports
 * @srv: the server
 * @identity: fnmatch(3) pattern (flags 0) of client identities, as
 *            ibtrs_srv_get_identity() names them: a key's identity with
 *            keys, "addr:" and the client's address without
 * @export: fnmatch(3) pattern of export names
 *
 * Without any rule, every identity may open every export. With rules, an
 * OPEN is granted only when one rule matches both the session's identity
 * and the export's name; any other is refused with -EACCES (whether the
 * export exists or not). Rules can be added while the server runs; an
 * open device stays open.
 *
 * Return: 0, -EINVAL (a NULL or empty pattern, an @identity over 255
 * bytes or an @export over IBNBD_NAME_MAX), -ENOMEM.
 */
int ibnbd_srv_allow(struct ibnbd_srv *srv, const char *identity,
		    const char *export);

/**
 * ibnbd_is_request() - whether a request's user message is ibnbd's
 * @usr: the user message given to rdma_ev_fn
 * @usrlen: its length
 *
 * Return: true when it starts with the ibnbd header (it may still be
 * malformed: ibnbd_srv_rdma_ev() answers that).
 */
bool ibnbd_is_request(const void *usr, size_t usrlen);

/**
 * ibnbd_srv_rdma_ev() - serve one ibnbd request of an ibtrs server
 * @srv: the server
 * @sessp: the ibnbd state of the ibtrs session, NULL before its first
 *         request: created then, and kept by the caller (e.g. in the
 *         session's private pointer) until ibnbd_srv_sess_free()
 * @sess: the ibtrs session; its identity (ibtrs_srv_get_identity(), read at
 *        its first request) is what the allow list checks
 * @id, @dir, @data, @datalen, @usr, @usrlen: as given to rdma_ev_fn
 *
 * Return: as rdma_ev_fn: 0 when @id is or will be answered with
 * ibtrs_srv_resp_rdma(), or a negative errno for the caller to return.
 *
 * Context: an rdma_ev_fn callback; does not block on I/O.
 */
int ibnbd_srv_rdma_ev(struct ibnbd_srv *srv, struct ibnbd_srv_sess **sessp,
		      struct ibtrs_srv *sess, struct ibtrs_srv_op *id, int dir,
		      void *data, size_t datalen, const void *usr,
		      size_t usrlen);

/**
 * ibnbd_srv_sess_free() - forget an ibtrs session's devices
 * @s: the state ibnbd_srv_rdma_ev() created, or NULL
 *
 * Closes every device the session left open. Call it from the
 * IBTRS_SRV_LINK_EV_DISCONNECTED event (every request is answered then).
 */
void ibnbd_srv_sess_free(struct ibnbd_srv_sess *s);

/**
 * ibnbd_srv_destroy() - close every export and free the server
 * @srv: the server, or NULL
 *
 * Every session's state must have been freed (ibnbd_srv_sess_free()).
 */
void ibnbd_srv_destroy(struct ibnbd_srv *srv);

#if defined(IBNBD_BUILD) && defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif /* IBNBD_H */
