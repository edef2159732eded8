/* SPDX-License-Identifier: MIT */
/*
 * srv.h - what the server context (srv.c) shows of itself to its control
 * face (srv_ctl.c): plain views of the context, its sessions and paths.
 */
#ifndef IBTRS_SRV_H
#define IBTRS_SRV_H

#include <stdbool.h>
#include <stdint.h>

#include "ctl.h"
#include "ibtrs.h"
#include "loop.h"

/**
 * struct srv_ctl_info - a server context's settings
 * @port: the port it listens on
 * @backend: its transport's name
 * @queue_depth: chunks per session
 * @max_io_size: largest request
 * @loop: its loop (the first of @nr_loops)
 * @nr_loops: its loop threads
 * @max_sessions: most sessions at once
 * @max_memory: the memory limit, bytes (0: none)
 * @mem_used: what the sessions and connections count against it now
 */
struct srv_ctl_info {
	uint16_t port;
	const char *backend;
	uint32_t queue_depth;
	uint32_t max_io_size;
	struct ibtrs_loop *loop;
	unsigned int nr_loops;
	uint32_t max_sessions;
	uint64_t max_memory;
	uint64_t mem_used;
};

/**
 * struct srv_ctl_sess - one session as srv_ctl_walk() shows it
 * @sessname: its name
 * @uuid: its id
 * @loop: the index of the context's loop it runs on
 * @graced: it has no path and is kept for a rejoin
 * @grace_ms_left: for how much longer, when @graced
 * @incarnation: its random identity, told to the client at every join
 * @proto_xprt, @proto_msg, @gen_rejected: protocol errors of its paths, by
 *                                         kind, closed paths included
 */
struct srv_ctl_sess {
	const char *sessname;
	const uint8_t *uuid;
	unsigned int loop;
	bool graced;
	uint64_t grace_ms_left;
	uint64_t incarnation;
	uint64_t proto_xprt, proto_msg, gen_rejected;
};

/**
 * struct srv_ctl_path - one path of a session as srv_ctl_walk() shows it
 * @peer: the client's address
 * @connected: all its connections are up
 * @nr_cons: connections
 * @rd_ops: READs served
 * @rd_bytes: their bytes
 * @wr_ops: WRITEs served
 * @wr_bytes: their bytes
 * @proto_xprt, @proto_msg, @gen_rejected: its protocol errors, by kind
 */
struct srv_ctl_path {
	const char *peer;
	bool connected;
	unsigned int nr_cons;
	uint64_t rd_ops, rd_bytes, wr_ops, wr_bytes;
	uint64_t proto_xprt, proto_msg, gen_rejected;
};

/**
 * struct srv_ctl_walker - what srv_ctl_walk() calls
 * @sess: a session begins
 * @path: one of its paths
 * @sess_end: the session ends
 * @arg: their first argument
 */
struct srv_ctl_walker {
	void (*sess)(void *arg, const struct srv_ctl_sess *s);
	void (*path)(void *arg, const struct srv_ctl_path *p);
	void (*sess_end)(void *arg);
	void *arg;
};

/* srv.c: the context's settings. */
void srv_ctl_info(struct ibtrs_srv_ctx *ctx, struct srv_ctl_info *info);
/*
 * srv.c: call @w for every session and its paths, on the thread of the
 * loop each runs on (the lists are the loops'), loop by loop; returns
 * when done. Not from a loop thread of the context.
 */
void srv_ctl_walk(struct ibtrs_srv_ctx *ctx, const struct srv_ctl_walker *w);

/* srv_ctl.c: the server context on the control socket. */
extern const struct ctl_ops srv_ctl_ops;

#endif /* IBTRS_SRV_H */
