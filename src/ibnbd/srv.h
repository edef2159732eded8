/* SPDX-License-Identifier: MIT */
/*
 * srv.h - internals of the ibnbd server: the export table (srv_export.c)
 * and the sessions and their devices (srv.c), on top of the I/O engine
 * (srv_uring.h), which knows only files and steps and tells the server
 * of a finished request through its completion callback.
 *
 * Locking: srv->lock guards the export table and every export's open
 * counts; sess->lock guards a session's device table and its free list of
 * requests; the ring has its own (srv_uring.h). None is held while
 * another is taken, except sess->lock around srv->lock when a device's
 * last reference goes (srv_dev_put()).
 */
#ifndef IBNBD_SRV_H
#define IBNBD_SRV_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "ibnbd.h"
#include "proto.h"
#include "srv_uring.h"

/* Largest DISCARD and WRITE_ZEROES the server advertises, bytes. */
#define SRV_MAX_DISCARD (1u << 30)
/* Most devices a session may hold; device ids keep the slot in 16 bits. */
#define SRV_MAX_DEVICES 65535u

/**
 * struct srv_export - one exported file or block device
 * @next: next in the table
 * @name: the name clients open
 * @path: the path given at export time, for messages
 * @file: the file as the I/O engine sees it, open until
 *	ibnbd_srv_destroy()
 * @readonly: rw opens are refused
 * @blkdev: @file is a block device (geometry from ioctls)
 * @discard: the backing store can punch holes (DISCARD advertised)
 * @ro_opens: read-only opens now (srv->lock)
 * @rw_opens: rw and migration opens now (srv->lock)
 */
struct srv_export {
	struct srv_export *next;
	char name[IBNBD_NAME_MAX + 1];
	char path[PATH_MAX];
	struct srv_file file;
	bool readonly;
	bool blkdev;
	bool discard;
	unsigned int ro_opens;
	unsigned int rw_opens;
};

/**
 * struct srv_geo - the geometry of an export, probed at each OPEN
 * @size: bytes, rounded down to @lbs
 * @lbs: logical block size
 * @pbs: physical block size
 */
struct srv_geo {
	uint64_t size;
	uint32_t lbs;
	uint32_t pbs;
};

/* Longest client identity kept: ibtrs' key identities and "addr:" with an
 * IPv6 address and its scope fit. */
#define SRV_IDENTITY_MAX 255

/**
 * struct srv_allow - one rule of the allow list (ibnbd_srv_allow())
 * @next: next rule, in the order added
 * @identity: fnmatch(3) pattern of client identities
 * @export: fnmatch(3) pattern of export names
 */
struct srv_allow {
	struct srv_allow *next;
	char identity[SRV_IDENTITY_MAX + 1];
	char export[IBNBD_NAME_MAX + 1];
};

/**
 * struct ibnbd_srv - the server
 * @opts: its options
 * @lock: guards @exports, their open counts and @allow
 * @exports: the export table
 * @nr_exports: entries of @exports
 * @allow: the allow list; NULL: every identity may open every export
 * @ring: the I/O engine
 */
struct ibnbd_srv {
	struct ibnbd_srv_opts opts;
	pthread_mutex_t lock;
	struct srv_export *exports;
	unsigned int nr_exports;
	struct srv_allow *allow;
	struct srv_ring ring;
};

/**
 * struct srv_dev - one open of an export by a session
 * @exp: the export
 * @id: the device id the client names it by (slot in the low 16 bits)
 * @rw: opened rw or migration (counted in @exp->rw_opens)
 * @refs: the session table's reference plus one per request (sess->lock)
 * @geo: the geometry given in OPEN_RSP
 * @max_transfer: largest READ or WRITE
 * @max_discard: largest DISCARD (0: none)
 * @max_write_zeroes: largest WRITE_ZEROES
 */
struct srv_dev {
	struct srv_export *exp;
	uint32_t id;
	bool rw;
	unsigned int refs;
	struct srv_geo geo;
	uint32_t max_transfer;
	uint32_t max_discard;
	uint32_t max_write_zeroes;
};

/**
 * struct srv_req - one block request of a session
 * @io: what the I/O engine runs (srv_uring.h)
 * @next: free list of the session
 * @sess: the session (its free list takes the request back)
 * @dev: the device, one reference held
 * @id: the ibtrs operation to answer
 */
struct srv_req {
	struct srv_io io;
	struct srv_req *next;
	struct ibnbd_srv_sess *sess;
	struct srv_dev *dev;
	struct ibtrs_srv_op *id;
};

/**
 * struct ibnbd_srv_sess - the ibnbd state of one ibtrs session
 * @srv: the server
 * @lock: guards everything below
 * @devs: the device table, @max_devices slots
 * @max_devices: slots of @devs
 * @nr_devs: devices open
 * @seq: counter making device ids unique within the session
 * @free_reqs: requests ready for reuse
 * @nr_ios: requests allocated (all on @free_reqs when idle)
 * @refs: the owner's reference plus one per request in flight
 * @identity: the client's identity (ibtrs_srv_get_identity()), read at
 *            the session's first request; "" when unknown
 */
struct ibnbd_srv_sess {
	struct ibnbd_srv *srv;
	pthread_mutex_t lock;
	struct srv_dev **devs;
	uint32_t max_devices;
	uint32_t nr_devs;
	uint16_t seq;
	struct srv_req *free_reqs;
	unsigned int nr_ios;
	unsigned int refs;
	char identity[SRV_IDENTITY_MAX + 1];
};

/* srv_export.c */
struct srv_export *srv_export_find(struct ibnbd_srv *srv, const char *name);
int srv_export_geo(const struct srv_export *exp, struct srv_geo *geo);
void srv_exports_free(struct ibnbd_srv *srv);
/* Whether @identity may open @name by the allow list; srv->lock held. */
bool srv_allowed(const struct ibnbd_srv *srv, const char *identity,
		 const char *name);
void srv_allow_free(struct ibnbd_srv *srv);

#endif /* IBNBD_SRV_H */
