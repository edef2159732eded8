// SPDX-License-Identifier: MIT
/*
 * server.c - "ibtrs server": an IBTRS server with a memory-backed target,
 * and ibnbd block devices (--export) beside it.
 *
 * Every session gets its own TOOL_TARGET_SIZE bytes "disk", a sparse
 * anonymous mapping, so that only the blocks written use memory; or, with a
 * backing file, every session shares one TOOL_TARGET_SIZE bytes file mapped
 * MAP_SHARED, whose content outlives the process. Requests carry a struct
 * tool_blk_msg and are answered directly from the request callback.
 *
 * The server remembers the id of every request it was given (in an idset,
 * up to its memory limit) and counts those it sees again: a request that
 * ran twice, which the at-most-once promise of the library forbids.
 *
 * Requests whose user message is ibnbd's (ibnbd_is_request()) go to the
 * ibnbd server instead, which serves the exported files and block devices;
 * it exists even without exports, so that an ibnbd client gets a clear
 * -ENOENT rather than a memory target's -EINVAL. --allow rules restrict
 * which client identities open which exports (ibnbd_srv_allow()).
 *
 * The security options (--tls, --tls-psk, the per-client limits) go to the
 * library as they are; the server says at start what they protect.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "addr.h"
#include "ibnbd.h"
#include "idset.h"
#include "tool.h"

/* Interval of --stats-file updates. */
#define SRV_STATS_INTERVAL_MS 500
/* Limits of --hb-timeout and --grace, milliseconds. */
#define SRV_MIN_HB_TIMEOUT_MS 100
#define SRV_MAX_TIMEOUT_MS 3600000
/*
 * The library's defaults of the per-client limits (struct ibtrs_srv_opts,
 * where 0 stands for them), for the start message and the help.
 */
#define SRV_DEF_SESSIONS_PER_CLIENT 64
#define SRV_DEF_CONS_PER_CLIENT 1024
#define SRV_DEF_HANDSHAKES_PER_CLIENT 16
#define SRV_DEF_HANDSHAKE_TIMEOUT_MS 5000

enum {
	OPT_SRV_HB_TIMEOUT = 256,
	OPT_SRV_GRACE,
	OPT_SRV_MAX_MEMORY,
	OPT_SRV_BACKING_FILE,
	OPT_SRV_STATS_FILE,
	OPT_SRV_TRANSPORT,
	OPT_SRV_BUSY_POLL,
	OPT_SRV_BUSY_POLL_ADAPTIVE,
	OPT_SRV_LOOPS,
	OPT_SRV_NULL,
	OPT_SRV_EXPORT,
	OPT_SRV_EXPORT_RO,
	OPT_SRV_EXPORT_DIR,
	OPT_SRV_EXPORT_DIR_RO,
	OPT_SRV_DIRECT,
	OPT_SRV_MAX_SESSIONS_PER_CLIENT,
	OPT_SRV_MAX_CONS_PER_CLIENT,
	OPT_SRV_MAX_HANDSHAKES_PER_CLIENT,
	OPT_SRV_HANDSHAKE_TIMEOUT,
	OPT_SRV_ALLOW,
};

/**
 * struct srv_disk - the target of one session
 * @mem: TOOL_TARGET_SIZE bytes, zero until written
 * @shared: @mem is the backing file's mapping, not the session's own
 * @name: the session name, for log messages
 * @identity: the client's identity (ibtrs_srv_get_identity()), for log
 *            messages
 * @nbd: the session's ibnbd state, created by its first ibnbd request
 * @refused: an ibnbd open of this session was refused by --allow (logged
 *           once)
 */
struct srv_disk {
	unsigned char *mem;
	bool shared;
	char name[NAME_MAX];
	char identity[256];
	struct ibnbd_srv_sess *nbd;
	bool refused;
};

/*
 * Callbacks carry no context pointer besides the session's, so the state
 * of the (only) server of the process lives here.
 */
static FILE *srv_log;
static const char *srv_log_prefix = "";
static unsigned char *srv_backing;
/* --null: no target, data is neither stored nor read, ids not kept */
static bool srv_null;
static uint64_t srv_requests;
static uint64_t srv_duplicates;
static struct idset srv_ids = { .lock = PTHREAD_MUTEX_INITIALIZER };
/* The ibnbd server, NULL when built without liburing. */
static struct ibnbd_srv *srv_nbd;

/**
 * srv_id_seen() - look a request id up and remember it
 * @id: the id, not 0
 *
 * Return: true when @id was seen before.
 */
static bool srv_id_seen(uint64_t id)
{
	bool now_full = false, seen = idset_seen(&srv_ids, id, &now_full);

	if (now_full && srv_log) {
		uint64_t n;
		bool full;

		idset_stats(&srv_ids, &n, &full);
		fprintf(srv_log,
			"%sremembering %llu request ids, later requests are not checked for duplicates\n",
			srv_log_prefix, (unsigned long long)n);
		fflush(srv_log);
	}
	return seen;
}

/**
 * srv_stats_req() - answer a TOOL_BLK_STATS request
 * @id: the operation
 * @dir: must be IBTRS_READ
 * @msg: the message
 * @data: where the answer goes
 * @datalen: bytes at @data
 *
 * Return: 0 after answering, -EINVAL for a malformed request.
 */
static int srv_stats_req(struct ibtrs_srv_op *id, int dir,
			 const struct tool_blk_msg *msg, void *data,
			 size_t datalen)
{
	struct tool_blk_stats st = { 0 };
	uint64_t user_us, sys_us;
	int ret;

	if (dir != IBTRS_READ || msg->offset || datalen < sizeof(st) ||
	    le32toh(msg->len) != datalen ||
	    (le32toh(msg->flags) & ~TOOL_BLK_FLAGS_MASK))
		return -EINVAL;
	ret = tool_cpu_us(&user_us, &sys_us);
	if (ret)
		return ret;
	st.user_us = htole64(user_us);
	st.sys_us = htole64(sys_us);
	st.requests = htole64(__atomic_load_n(&srv_requests, __ATOMIC_RELAXED));
	memset(data, 0, datalen);
	memcpy(data, &st, sizeof(st));
	ibtrs_srv_resp_rdma(id, 0);
	return 0;
}

/**
 * srv_rdma_ev() - serve one request of the block protocol
 * @sess: the session
 * @priv: the session's struct srv_disk
 * @id: the operation
 * @dir: IBTRS_READ or IBTRS_WRITE
 * @data: WRITE: the data to store; READ: where to place the answer
 * @datalen: bytes at @data
 * @usr: the struct tool_blk_msg of the request (or its first
 *       TOOL_BLK_MSG_V1_SIZE bytes, without a request id)
 * @usrlen: bytes at @usr
 *
 * Counts the request, and counts it as a duplicate when its id was seen
 * before.
 *
 * Return: 0 after answering with ibtrs_srv_resp_rdma(), or -EINVAL for a
 * malformed message or a range outside the target, -EOPNOTSUPP for unknown
 * flags, -ENODEV when the session has no target.
 */
static int srv_rdma_ev(struct ibtrs_srv *sess, void *priv,
		       struct ibtrs_srv_op *id, int dir, void *data,
		       size_t datalen, const void *usr, size_t usrlen)
{
	struct srv_disk *disk = priv;
	struct tool_blk_msg msg;
	uint64_t off, req_id;
	uint32_t len;

	if (ibnbd_is_request(usr, usrlen)) {
		int ret;

		if (!disk)
			return -ENODEV;
		if (!srv_nbd)
			return -EOPNOTSUPP;
		ret = ibnbd_srv_rdma_ev(srv_nbd, &disk->nbd, sess, id, dir,
					data, datalen, usr, usrlen);
		/* Only an OPEN is refused so; a client may retry in a loop. */
		if (ret == -EACCES && srv_log &&
		    !__atomic_exchange_n(&disk->refused, true,
					 __ATOMIC_RELAXED)) {
			fprintf(srv_log,
				"%ssession '%s' of %s: ibnbd open refused by --allow\n",
				srv_log_prefix, disk->name, disk->identity);
			fflush(srv_log);
		}
		return ret;
	}
	memset(&msg, 0, sizeof(msg));
	memcpy(&msg, usr, usrlen < sizeof(msg) ? usrlen : sizeof(msg));
	if (usrlen >= TOOL_BLK_MSG_V1_SIZE &&
	    (le32toh(msg.flags) & TOOL_BLK_STATS))
		return srv_stats_req(id, dir, &msg, data, datalen);
	__atomic_fetch_add(&srv_requests, 1, __ATOMIC_RELAXED);
	if (usrlen < TOOL_BLK_MSG_V1_SIZE)
		return -EINVAL;
	if (!disk)
		return -ENODEV;
	req_id = le64toh(msg.req_id);
	if (req_id && !srv_null && srv_id_seen(req_id))
		__atomic_fetch_add(&srv_duplicates, 1, __ATOMIC_RELAXED);
	off = le64toh(msg.offset);
	len = le32toh(msg.len);
	if (le32toh(msg.flags) & ~TOOL_BLK_FLAGS_MASK)
		return -EOPNOTSUPP;
	if (len != datalen || off > TOOL_TARGET_SIZE ||
	    len > TOOL_TARGET_SIZE - off)
		return -EINVAL;

	if (dir != IBTRS_WRITE && dir != IBTRS_READ)
		return -EINVAL;
	/* With --null a READ returns whatever its chunk holds. */
	if (!srv_null) {
		if (dir == IBTRS_WRITE)
			memcpy(disk->mem + off, data, len);
		else
			memcpy(data, disk->mem + off, len);
	}
	ibtrs_srv_resp_rdma(id, 0);
	return 0;
}

/**
 * srv_link_ev() - create or free the target of a session
 * @sess: the session
 * @ev: the event
 * @priv: the session's struct srv_disk (DISCONNECTED only)
 *
 * With a backing file every session's target is its mapping.
 *
 * Return: 0, or -ENOMEM to refuse a session whose target cannot be
 * allocated.
 */
static int srv_link_ev(struct ibtrs_srv *sess, enum ibtrs_srv_link_ev ev,
		       void *priv)
{
	struct srv_disk *disk = priv;

	switch (ev) {
	case IBTRS_SRV_LINK_EV_CONNECTED:
		disk = calloc(1, sizeof(*disk));
		if (!disk)
			return -ENOMEM;
		if (ibtrs_srv_get_sess_name(sess, disk->name,
					    sizeof(disk->name)) < 0 &&
		    !disk->name[0])
			snprintf(disk->name, sizeof(disk->name), "?");
		if (ibtrs_srv_get_identity(sess, disk->identity,
					   sizeof(disk->identity)) < 0 &&
		    !disk->identity[0])
			snprintf(disk->identity, sizeof(disk->identity), "?");
		if (srv_backing || srv_null) {
			disk->mem = srv_backing;
			disk->shared = true;
		} else {
			disk->mem = mmap(
				NULL, TOOL_TARGET_SIZE, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
				0);
		}
		if (disk->mem == MAP_FAILED) {
			if (srv_log)
				fprintf(srv_log,
					"%ssession '%s' refused: cannot allocate its target: %s\n",
					srv_log_prefix, disk->name,
					strerror(errno));
			free(disk);
			return -ENOMEM;
		}
		ibtrs_srv_set_sess_priv(sess, disk);
		if (srv_log) {
			fprintf(srv_log,
				"%ssession '%s' connected (queue depth %d, client %s)\n",
				srv_log_prefix, disk->name,
				ibtrs_srv_get_queue_depth(sess),
				disk->identity);
			fflush(srv_log);
		}
		return 0;
	case IBTRS_SRV_LINK_EV_DISCONNECTED:
		if (!disk)
			return 0;
		if (srv_log) {
			fprintf(srv_log, "%ssession '%s' disconnected\n",
				srv_log_prefix, disk->name);
			fflush(srv_log);
		}
		ibtrs_srv_set_sess_priv(sess, NULL);
		ibnbd_srv_sess_free(disk->nbd);
		if (!disk->shared)
			munmap(disk->mem, TOOL_TARGET_SIZE);
		free(disk);
		return 0;
	}
	return 0;
}

/**
 * srv_backing_open() - map the backing file, creating or extending it
 * @path: the file
 *
 * Return: the mapping of its first TOOL_TARGET_SIZE bytes, or MAP_FAILED
 * with errno set.
 */
static unsigned char *srv_backing_open(const char *path)
{
	unsigned char *mem = MAP_FAILED;
	struct stat st;
	int fd, err;

	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return MAP_FAILED;
	if (fstat(fd, &st))
		goto out;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		goto out;
	}
	if ((uint64_t)st.st_size < TOOL_TARGET_SIZE &&
	    ftruncate(fd, (off_t)TOOL_TARGET_SIZE))
		goto out;
	mem = mmap(NULL, TOOL_TARGET_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
out:
	err = errno;
	close(fd);
	errno = err;
	return mem;
}

/**
 * srv_nbd_start() - create the ibnbd server and add the exports
 * @cfg: the configuration
 * @max_io_size: the ibtrs server's max_io_size
 *
 * Without exports a failure leaves the tool without ibnbd, not without
 * its memory target.
 * Reports a failure on stderr.
 *
 * Return: 0, or -1.
 */
static int srv_nbd_start(const struct tool_srv_cfg *cfg, uint32_t max_io_size)
{
	struct ibnbd_srv_opts o;
	int ret, *counts = NULL;
	size_t i;

	ibnbd_srv_opts_init(&o, sizeof(o));
	o.direct = cfg->direct;
	o.max_io_size = max_io_size;
	srv_nbd = ibnbd_srv_create(&o);
	if (!srv_nbd) {
		ret = errno;
		/*
		 * Without exports the memory target serves on: ibnbd requests
		 * then fail with EOPNOTSUPP (no liburing, or io_uring
		 * disabled here).
		 */
		if (!cfg->nr_exports) {
			if (ret != EOPNOTSUPP && cfg->log)
				fprintf(cfg->log,
					"%sibnbd requests refused: cannot start the ibnbd server: %s\n",
					srv_log_prefix, strerror(ret));
			return 0;
		}
		if (ret == EOPNOTSUPP)
			tool_err("cannot export: built without liburing");
		else
			tool_err("cannot start the ibnbd server: %s",
				 strerror(ret));
		return -1;
	}
	for (i = 0; i < cfg->nr_allow; i++) {
		char rule[TOOL_ALLOW_MAX + 1];
		char *colon;

		snprintf(rule, sizeof(rule), "%s", cfg->allow[i]);
		colon = strrchr(rule, ':');
		if (!colon) {
			tool_err("invalid --allow '%s'", cfg->allow[i]);
			goto err;
		}
		*colon = '\0';
		ret = ibnbd_srv_allow(srv_nbd, rule, colon + 1);
		if (ret) {
			tool_err("cannot apply --allow '%s': %s", cfg->allow[i],
				 strerror(-ret));
			goto err;
		}
	}
	/* Logged once all are made: a failure stays one line. */
	counts = calloc(cfg->nr_exports + 1, sizeof(*counts));
	if (!counts) {
		tool_err("out of memory");
		goto err;
	}
	for (i = 0; i < cfg->nr_exports; i++) {
		const struct tool_export *e = &cfg->exports[i];

		if (!e->name) {
			ret = ibnbd_srv_add_export_dir(srv_nbd, e->path,
						       e->readonly);
			if (ret < 0) {
				tool_err(
					"cannot export directory '%s': %s",
					e->path,
					ret == -EEXIST
						? "a file name is exported already"
						: strerror(-ret));
				goto err;
			}
			counts[i] = ret;
			continue;
		}
		ret = ibnbd_srv_add_export(srv_nbd, e->name, e->path,
					   e->readonly);
		if (ret) {
			tool_err("cannot export '%s' (%s): %s", e->name,
				 e->path,
				 ret == -EEXIST ? "the name is exported already"
				 : ret == -EINVAL
					 ? "not a regular file or block device"
					 : strerror(-ret));
			goto err;
		}
	}
	for (i = 0; cfg->log && i < cfg->nr_exports; i++) {
		const struct tool_export *e = &cfg->exports[i];
		const char *mode = e->readonly ? "read-only" : "read-write";

		if (e->name)
			fprintf(cfg->log, "%sexporting '%s' (%s, %s)\n",
				srv_log_prefix, e->name, e->path, mode);
		else
			fprintf(cfg->log,
				"%sexporting %d file(s) of '%s' (%s)\n",
				srv_log_prefix, counts[i], e->path, mode);
	}
	if (cfg->log && cfg->nr_allow) {
		fprintf(cfg->log,
			"%sexports open only as --allow says:", srv_log_prefix);
		for (i = 0; i < cfg->nr_allow; i++)
			fprintf(cfg->log, "%s %s", i ? "," : "", cfg->allow[i]);
		fprintf(cfg->log, "\n");
	}
	free(counts);
	return 0;
err:
	free(counts);
	ibnbd_srv_destroy(srv_nbd);
	srv_nbd = NULL;
	return -1;
}

/**
 * srv_log_security() - say at start what the security settings protect
 * @cfg: the configuration
 * @opts: the options the server was opened with
 */
static void srv_log_security(const struct tool_srv_cfg *cfg,
			     const struct ibtrs_srv_opts *opts)
{
	static const struct tool_sec none = { .tls = IBTRS_TLS_OFF };
	const struct tool_sec *sec = cfg->sec ? cfg->sec : &none;
	char buf[512];

	fprintf(cfg->log, "%ssecurity: %s\n", srv_log_prefix,
		tool_sec_describe(sec, buf, sizeof(buf)));
	fprintf(cfg->log,
		"%slimits per client: %u sessions, %u connections, %u handshakes, handshake timeout %u ms\n",
		srv_log_prefix,
		opts->max_sessions_per_client ? opts->max_sessions_per_client
					      : SRV_DEF_SESSIONS_PER_CLIENT,
		opts->max_cons_per_client ? opts->max_cons_per_client
					  : SRV_DEF_CONS_PER_CLIENT,
		opts->max_handshakes_per_client
			? opts->max_handshakes_per_client
			: SRV_DEF_HANDSHAKES_PER_CLIENT,
		opts->handshake_timeout_ms ? opts->handshake_timeout_ms
					   : SRV_DEF_HANDSHAKE_TIMEOUT_MS);
	fflush(cfg->log);
}

/**
 * tool_srv_start() - open a server with the memory target
 * @cfg: the configuration
 *
 * Only one server may run per process. Reports a failure on stderr (one
 * "ibtrs: " line).
 *
 * Return: the server context, or NULL with errno set.
 */
struct ibtrs_srv_ctx *tool_srv_start(const struct tool_srv_cfg *cfg)
{
	struct ibtrs_srv_opts opts;
	struct ibtrs_srv_ctx *ctx;
	int err;

	srv_log = cfg->log;
	srv_log_prefix = cfg->log_prefix ? cfg->log_prefix : "";
	srv_null = cfg->null_target;
	__atomic_store_n(&srv_requests, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&srv_duplicates, 0, __ATOMIC_RELAXED);
	idset_free(&srv_ids);

	ibtrs_srv_opts_init(&opts, sizeof(opts));
	opts.port = cfg->port;
	opts.listen_addr = cfg->listen_addr;
	if (cfg->queue_depth)
		opts.queue_depth = cfg->queue_depth;
	if (cfg->max_io_size)
		opts.max_io_size = cfg->max_io_size;
	if (cfg->hb_timeout_ms)
		opts.hb_timeout_ms = cfg->hb_timeout_ms;
	opts.backend = cfg->backend;
	if (cfg->grace_ms >= 0)
		opts.sess_grace_ms = (uint32_t)cfg->grace_ms;
	if (cfg->max_memory)
		opts.max_memory =
			cfg->max_memory < 0 ? 0 : (uint64_t)cfg->max_memory;
	opts.busy_poll_us = cfg->busy_poll_us;
	opts.busy_poll_adaptive = cfg->busy_poll_adaptive;
	opts.loop_threads = cfg->loop_threads;
	opts.rdma_ev = srv_rdma_ev;
	opts.link_ev = srv_link_ev;
	if (cfg->sec) {
		opts.tls = cfg->sec->tls;
		opts.tls_psk_file = cfg->sec->psk_file;
	}
	opts.max_sessions_per_client = cfg->max_sessions_per_client;
	opts.max_cons_per_client = cfg->max_cons_per_client;
	opts.max_handshakes_per_client = cfg->max_handshakes_per_client;
	opts.handshake_timeout_ms = cfg->handshake_timeout_ms;

	if (srv_nbd_start(cfg, opts.max_io_size)) {
		errno = EINVAL;
		return NULL;
	}
	if (cfg->backing_file) {
		srv_backing = srv_backing_open(cfg->backing_file);
		if (srv_backing == MAP_FAILED) {
			err = errno;
			srv_backing = NULL;
			tool_err("cannot use the backing file '%s': %s",
				 cfg->backing_file, strerror(err));
			ibnbd_srv_destroy(srv_nbd);
			srv_nbd = NULL;
			errno = err;
			return NULL;
		}
	}
	ctx = ibtrs_srv_open_opts(&opts);
	if (ctx && cfg->log)
		srv_log_security(cfg, &opts);
	if (!ctx) {
		err = errno;
		if (err == EINVAL && cfg->backend)
			tool_err(
				"unknown or unavailable transport '%s' (tcp; ofi when built with libfabric)",
				cfg->backend);
		else if (cfg->listen_str)
			tool_err("cannot listen on %s port %u: %s%s%s",
				 cfg->listen_str, cfg->port, strerror(err),
				 tool_sec_hint(cfg->sec, err, false),
				 tool_xprt_hint(cfg->backend, err));
		else
			tool_err("cannot listen on port %u: %s%s%s", cfg->port,
				 strerror(err),
				 tool_sec_hint(cfg->sec, err, false),
				 tool_xprt_hint(cfg->backend, err));
		if (srv_backing)
			munmap(srv_backing, TOOL_TARGET_SIZE);
		srv_backing = NULL;
		ibnbd_srv_destroy(srv_nbd);
		srv_nbd = NULL;
		errno = err;
	}
	return ctx;
}

/**
 * tool_srv_get_stats() - read the counters of a server
 * @ctx: the context from tool_srv_start()
 * @st: filled with the counters
 */
void tool_srv_get_stats(struct ibtrs_srv_ctx *ctx, struct tool_srv_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->requests = __atomic_load_n(&srv_requests, __ATOMIC_RELAXED);
	st->duplicates = __atomic_load_n(&srv_duplicates, __ATOMIC_RELAXED);
	idset_stats(&srv_ids, &st->ids, &st->ids_full);
	st->lib.size = sizeof(st->lib);
	ibtrs_srv_get_stats(ctx, &st->lib);
}

/**
 * tool_srv_stop() - close a server opened by tool_srv_start()
 * @ctx: the context, or NULL
 */
void tool_srv_stop(struct ibtrs_srv_ctx *ctx)
{
	ibtrs_srv_close(ctx);
	/* Every session is gone, and its ibnbd state with it. */
	ibnbd_srv_destroy(srv_nbd);
	srv_nbd = NULL;
	if (srv_backing)
		munmap(srv_backing, TOOL_TARGET_SIZE);
	srv_backing = NULL;
	idset_free(&srv_ids);
}

/**
 * srv_name_ok() - whether @name is a valid ibnbd export name
 * @name: the name
 * @len: its length
 *
 * The rule of the protocol: 1..IBNBD_NAME_MAX printable bytes, no '/' and
 * no space, neither "." nor "..".
 *
 * Return: true when valid.
 */
static bool srv_name_ok(const char *name, size_t len)
{
	size_t i;

	if (!len || len > IBNBD_NAME_MAX || !strncmp(name, ".", len) ||
	    !strncmp(name, "..", len))
		return false;
	for (i = 0; i < len; i++)
		if ((unsigned char)name[i] <= 0x20 ||
		    (unsigned char)name[i] >= 0x7f || name[i] == '/')
			return false;
	return true;
}

/**
 * srv_parse_export() - parse the argument of --export or --export-ro
 * @arg: "NAME=PATH" (PATH may contain '='; NAME may not)
 * @opt: the option, for messages
 * @readonly: read-only export
 * @exports: the exports so far
 * @nr: entries of @exports, incremented
 *
 * Return: 0, or TOOL_EXIT_USAGE after a message.
 */
static int srv_parse_export(const char *arg, const char *opt, bool readonly,
			    struct tool_export *exports, size_t *nr)
{
	const char *eq = strchr(arg, '=');
	size_t i;

	if (!eq) {
		tool_err("invalid %s '%s': expected NAME=PATH", opt, arg);
		return TOOL_EXIT_USAGE;
	}
	if (!srv_name_ok(arg, (size_t)(eq - arg))) {
		tool_err(
			"invalid %s '%s': bad export name '%.*s' (1..%d printable characters, no '/', not '.' or '..')",
			opt, arg, (int)(eq - arg), arg, IBNBD_NAME_MAX);
		return TOOL_EXIT_USAGE;
	}
	if (!eq[1]) {
		tool_err("invalid %s '%s': expected a path after '='", opt,
			 arg);
		return TOOL_EXIT_USAGE;
	}
	memcpy(exports[*nr].name_buf, arg, (size_t)(eq - arg));
	exports[*nr].name_buf[eq - arg] = '\0';
	for (i = 0; i < *nr; i++) {
		if (exports[i].name &&
		    !strcmp(exports[i].name, exports[*nr].name_buf)) {
			tool_err(
				"invalid %s '%s': the name '%s' is exported twice",
				opt, arg, exports[*nr].name_buf);
			return TOOL_EXIT_USAGE;
		}
	}
	exports[*nr].name = exports[*nr].name_buf;
	exports[*nr].path = eq + 1;
	exports[*nr].readonly = readonly;
	(*nr)++;
	return 0;
}

/**
 * srv_opt_name() - the long name of an option
 * @longopts: the options
 * @c: its value
 *
 * Return: the name, or "?".
 */
static const char *srv_opt_name(const struct option *longopts, int c)
{
	for (; longopts->name; longopts++)
		if (longopts->val == c)
			return longopts->name;
	return "?";
}

/**
 * srv_parse_allow() - check an --allow IDENTITY:EXPORT rule
 * @arg: the rule; split at its last ':' (identities without keys, such as
 *       "addr:10.0.0.1", have ':' in them; export names rarely do)
 *
 * Return: 0, or TOOL_EXIT_USAGE after a message.
 */
static int srv_parse_allow(const char *arg)
{
	const char *colon = strrchr(arg, ':');
	size_t idlen;

	if (!colon || colon == arg || !colon[1]) {
		tool_err(
			"invalid --allow '%s': expected IDENTITY:EXPORT (fnmatch patterns, e.g. 'alice:db*' or 'addr:10.0.0.*:scratch')",
			arg);
		return TOOL_EXIT_USAGE;
	}
	idlen = (size_t)(colon - arg);
	if (idlen > 255 || strlen(colon + 1) > IBNBD_NAME_MAX ||
	    strchr(colon + 1, '/')) {
		tool_err(
			"invalid --allow '%s': an identity pattern of at most 255 bytes and an export pattern of at most %d without '/' are expected",
			arg, IBNBD_NAME_MAX);
		return TOOL_EXIT_USAGE;
	}
	return 0;
}

/**
 * srv_write_stats() - write the counters to a file, atomically
 * @ctx: the server
 * @path: the file; "PATH.tmp" is written first, then renamed
 *
 * Return: 0, or a negative errno.
 */
static int srv_write_stats(struct ibtrs_srv_ctx *ctx, const char *path)
{
	struct tool_srv_stats st;
	char tmp[PATH_MAX];
	FILE *f;
	int ret = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	tool_srv_get_stats(ctx, &st);
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fprintf(f,
		"{\"requests\":%llu,\"duplicates\":%llu,\"replays\":%llu,"
		"\"stale\":%llu,"
		"\"busy\":%llu,\"proto_errors\":%llu,\"sessions\":%u,"
		"\"paths\":%u,\"ids\":%llu,\"ids_full\":%s}\n",
		(unsigned long long)st.requests,
		(unsigned long long)st.duplicates,
		(unsigned long long)st.lib.replays,
		(unsigned long long)st.lib.stale,
		(unsigned long long)st.lib.busy,
		(unsigned long long)st.lib.proto_errors, st.lib.sessions,
		st.lib.paths, (unsigned long long)st.ids,
		st.ids_full ? "true" : "false");
	if (fflush(f) || ferror(f))
		ret = -errno;
	if (fclose(f) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}

/**
 * usage_server() - print the help of "ibtrs server"
 * @f: output stream
 */
void usage_server(FILE *f)
{
	fprintf(f,
		"Usage: %s server [OPTIONS]\n"
		"\n"
		"Run an IBTRS server in the foreground. Every session gets a %llu MiB\n"
		"memory-backed target (or all share --backing-file): WRITE stores data\n"
		"at the offset of the request, READ returns it (zeros where nothing was\n"
		"written). Requests whose id this process saw before are counted as run\n"
		"twice; a restarted server counts afresh, and its clients report the\n"
		"requests they could not vouch for as of unknown outcome (ibtrs(7)).\n"
		"\n"
		"Options:\n"
		"  -p, --port N             TCP port, 0 for any free one (default %u)\n"
		"  -l, --listen ADDR        listen on ADDR only, e.g. ip:127.0.0.1\n"
		"                           (default: every address)\n"
		"  -d, --queue-depth N      chunks per session, 1..%u (default %u)\n"
		"  -m, --max-io-size BYTES  largest request, k/m suffixes, up to 16m\n"
		"                           (default %u)\n"
		"      --hb-timeout MS      close a path silent for MS ms, %u..%u\n"
		"                           (default 1000)\n"
		"      --grace MS           keep a session without paths MS ms for its\n"
		"                           client to come back (default 10000)\n"
		"      --max-memory BYTES   memory limit of the sessions, k/m/g\n"
		"                           suffixes, 0 for none (default 8g): each\n"
		"                           counts its chunk pool and 64 KiB, each\n"
		"                           connection 384 KiB + 1 KiB a chunk\n"
		"      --backing-file PATH  one %llu MiB target in PATH (created or\n"
		"                           extended), shared by every session, mapped\n"
		"                           MAP_SHARED: it survives a crash and restart\n"
		"      --transport NAME     backend: tcp (default) or ofi (libfabric;\n"
		"                           provider from IBTRS_OFI_PROVIDER)\n"
		"      --null               no target: WRITEs are dropped, READs return\n"
		"                           whatever their chunk holds, request ids\n"
		"                           are not kept (measures the transport)\n"
		"      --busy-poll US       after an event the server's thread polls\n"
		"                           US microseconds before it sleeps, 0..1000000\n"
		"                           (default 0)\n"
		"      --busy-poll-adaptive poll for a window of at most US that\n"
		"                           adapts: open while events come closer\n"
		"                           together than US, closed while further apart\n"
		"      --loops N            loop threads, 1..%u (default: one per\n"
		"                           online CPU): the first\n"
		"                           also accepts and authenticates; each\n"
		"                           session runs on the one that had the\n"
		"                           fewest when it was made\n"
		"      --stats-file PATH    write the counters as JSON to PATH every\n"
		"                           %u ms and at exit (atomically)\n"
		"      --export NAME=PATH   serve the regular file or block device PATH\n"
		"                           as ibnbd device NAME (repeatable)\n"
		"      --export-ro NAME=PATH  the same, read only\n"
		"      --export-dir DIR     export every regular file and block device\n"
		"                           of DIR by its file name (repeatable)\n"
		"      --export-dir-ro DIR  the same, read only\n"
		"      --direct             open the exports with O_DIRECT\n"
		"      --allow ID:EXPORT    only client identities matching ID may open\n"
		"                           the exports matching EXPORT (fnmatch\n"
		"                           patterns, split at the last ':'; repeatable;\n"
		"                           without any, every client opens every export)\n"
		"      --tls MODE           TLS 1.3 with pre-shared keys (tcp): off, on\n"
		"                           (TLS and plaintext clients) or require\n"
		"                           (default: IBTRS_TLS, else off); needs keys\n"
		"      --tls-psk FILE       key file of psktool (identity:hexkey a line,\n"
		"                           mode 0600; default: IBTRS_TLS_PSK): every\n"
		"                           client must prove one of its keys\n"
		"      --max-sessions-per-client N\n"
		"                           sessions one client identity may hold\n"
		"                           (default %u)\n"
		"      --max-cons-per-client N\n"
		"                           connections of one client identity (default\n"
		"                           %u)\n"
		"      --max-handshakes-per-client N\n"
		"                           its connections still in their handshake\n"
		"                           (default %u)\n"
		"      --handshake-timeout T\n"
		"                           close a connection whose handshake took\n"
		"                           longer: 500ms, 5s ... (default %u ms)\n"
		"  -q, --quiet              do not log connects and disconnects\n"
		"  -h, --help               show this help\n"
		"\n"
		"ibnbd requests (ibtrs bench --export, the nbdkit plugin) reach the\n"
		"exports; any other request reaches the memory target.\n"
		"\n"
		"A client's identity is the key it proved, or without keys \"addr:\" and\n"
		"its address (ibtrs(7), \"Security\"). The server says at start which\n"
		"keys it has and what they protect.\n"
		"\n"
		"Prints \"listening on port N\" on stdout when ready; stops on SIGINT\n"
		"or SIGTERM.\n",
		TOOL_NAME, TOOL_TARGET_SIZE >> 20, IBTRS_DEFAULT_PORT,
		IBTRS_MAX_QUEUE_DEPTH, IBTRS_DEFAULT_QUEUE_DEPTH,
		IBTRS_DEFAULT_MAX_IO_SIZE, SRV_MIN_HB_TIMEOUT_MS,
		SRV_MAX_TIMEOUT_MS, TOOL_TARGET_SIZE >> 20, IBTRS_SRV_MAX_LOOPS,
		SRV_STATS_INTERVAL_MS, SRV_DEF_SESSIONS_PER_CLIENT,
		SRV_DEF_CONS_PER_CLIENT, SRV_DEF_HANDSHAKES_PER_CLIENT,
		SRV_DEF_HANDSHAKE_TIMEOUT_MS);
}

static int srv_main(int argc, char *argv[], const struct option *longopts,
		    struct tool_export *exports, size_t *nr_exports,
		    const char **allow);

/**
 * cmd_server() - "ibtrs server"
 * @argc: argument count, argv[0] is "server"
 * @argv: arguments
 *
 * Return: exit status.
 */
int cmd_server(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "listen", required_argument, NULL, 'l' },
		{ "queue-depth", required_argument, NULL, 'd' },
		{ "max-io-size", required_argument, NULL, 'm' },
		{ "hb-timeout", required_argument, NULL, OPT_SRV_HB_TIMEOUT },
		{ "grace", required_argument, NULL, OPT_SRV_GRACE },
		{ "max-memory", required_argument, NULL, OPT_SRV_MAX_MEMORY },
		{ "backing-file", required_argument, NULL,
		  OPT_SRV_BACKING_FILE },
		{ "stats-file", required_argument, NULL, OPT_SRV_STATS_FILE },
		{ "transport", required_argument, NULL, OPT_SRV_TRANSPORT },
		{ "busy-poll", required_argument, NULL, OPT_SRV_BUSY_POLL },
		{ "busy-poll-adaptive", no_argument, NULL,
		  OPT_SRV_BUSY_POLL_ADAPTIVE },
		{ "loops", required_argument, NULL, OPT_SRV_LOOPS },
		{ "null", no_argument, NULL, OPT_SRV_NULL },
		{ "export", required_argument, NULL, OPT_SRV_EXPORT },
		{ "export-ro", required_argument, NULL, OPT_SRV_EXPORT_RO },
		{ "export-dir", required_argument, NULL, OPT_SRV_EXPORT_DIR },
		{ "export-dir-ro", required_argument, NULL,
		  OPT_SRV_EXPORT_DIR_RO },
		{ "direct", no_argument, NULL, OPT_SRV_DIRECT },
		TOOL_SEC_LONGOPTS,
		{ "max-sessions-per-client", required_argument, NULL,
		  OPT_SRV_MAX_SESSIONS_PER_CLIENT },
		{ "max-cons-per-client", required_argument, NULL,
		  OPT_SRV_MAX_CONS_PER_CLIENT },
		{ "max-handshakes-per-client", required_argument, NULL,
		  OPT_SRV_MAX_HANDSHAKES_PER_CLIENT },
		{ "handshake-timeout", required_argument, NULL,
		  OPT_SRV_HANDSHAKE_TIMEOUT },
		{ "allow", required_argument, NULL, OPT_SRV_ALLOW },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct tool_export *exports;
	size_t nr_exports = 0;
	const char **allow;
	int ret;

	/* One export, or one rule, per argument at most. */
	exports = calloc((size_t)argc + 1, sizeof(*exports));
	allow = calloc((size_t)argc + 1, sizeof(*allow));
	if (!exports || !allow) {
		tool_err("out of memory");
		free(exports);
		free(allow);
		return TOOL_EXIT_FAIL;
	}
	ret = srv_main(argc, argv, longopts, exports, &nr_exports, allow);
	free(exports);
	free(allow);
	return ret;
}

/**
 * srv_main() - "ibtrs server" after its export table is allocated
 * @argc: argument count, argv[0] is "server"
 * @argv: arguments
 * @longopts: the options
 * @exports: room for one export per argument
 * @nr_exports: set to the exports parsed
 * @allow: room for one --allow rule per argument
 *
 * Return: exit status.
 */
static int srv_main(int argc, char *argv[], const struct option *longopts,
		    struct tool_export *exports, size_t *nr_exports,
		    const char **allow)
{
	struct sockaddr_storage listen_ss;
	struct tool_srv_cfg cfg = { .port = IBTRS_DEFAULT_PORT,
				    .grace_ms = -1 };
	struct ibtrs_srv_ctx *ctx;
	const char *listen_str = NULL, *stats_file = NULL;
	bool quiet = false, stats_warned = false;
	struct tool_sec sec = { .tls = IBTRS_TLS_DEFAULT };
	double secs;
	uint64_t v;
	pid_t from;
	int c, ret, sig;

	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, ":p:l:d:m:qh", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case OPT_SRV_EXPORT:
		case OPT_SRV_EXPORT_RO:
			ret = srv_parse_export(optarg,
					       c == OPT_SRV_EXPORT
						       ? "--export"
						       : "--export-ro",
					       c == OPT_SRV_EXPORT_RO, exports,
					       nr_exports);
			if (ret)
				return ret;
			break;
		case OPT_SRV_EXPORT_DIR:
		case OPT_SRV_EXPORT_DIR_RO:
			if (!optarg[0]) {
				tool_err("invalid %s '': expected a directory",
					 c == OPT_SRV_EXPORT_DIR
						 ? "--export-dir"
						 : "--export-dir-ro");
				return TOOL_EXIT_USAGE;
			}
			exports[*nr_exports].path = optarg;
			exports[*nr_exports].readonly = c ==
							OPT_SRV_EXPORT_DIR_RO;
			(*nr_exports)++;
			break;
		case OPT_SRV_DIRECT:
			cfg.direct = true;
			break;
		case TOOL_OPT_TLS:
		case TOOL_OPT_TLS_PSK:
			ret = tool_sec_opt(&sec, c, optarg);
			if (ret)
				return ret;
			break;
		case OPT_SRV_MAX_SESSIONS_PER_CLIENT:
		case OPT_SRV_MAX_CONS_PER_CLIENT:
		case OPT_SRV_MAX_HANDSHAKES_PER_CLIENT:
			if (tool_parse_uint(optarg, 1, UINT32_MAX, &v)) {
				tool_err("invalid --%s '%s': expected 1..%u",
					 srv_opt_name(longopts, c), optarg,
					 UINT32_MAX);
				return TOOL_EXIT_USAGE;
			}
			if (c == OPT_SRV_MAX_SESSIONS_PER_CLIENT)
				cfg.max_sessions_per_client = (uint32_t)v;
			else if (c == OPT_SRV_MAX_CONS_PER_CLIENT)
				cfg.max_cons_per_client = (uint32_t)v;
			else
				cfg.max_handshakes_per_client = (uint32_t)v;
			break;
		case OPT_SRV_HANDSHAKE_TIMEOUT:
			if (tool_parse_seconds(optarg, &secs) ||
			    secs * 1000 < 1 ||
			    secs * 1000 > SRV_MAX_TIMEOUT_MS) {
				tool_err(
					"invalid --handshake-timeout '%s': expected a duration of 1ms..1h, e.g. 500ms or 5s",
					optarg);
				return TOOL_EXIT_USAGE;
			}
			cfg.handshake_timeout_ms =
				(uint32_t)(secs * 1000 + 0.5);
			break;
		case OPT_SRV_ALLOW:
			ret = srv_parse_allow(optarg);
			if (ret)
				return ret;
			allow[cfg.nr_allow++] = optarg;
			break;
		case 'p':
			if (tool_parse_uint(optarg, 0, 65535, &v)) {
				tool_err(
					"invalid --port '%s': expected 0..65535",
					optarg);
				return TOOL_EXIT_USAGE;
			}
			cfg.port = (uint16_t)v;
			break;
		case 'l':
			listen_str = optarg;
			break;
		case 'd':
			if (tool_parse_uint(optarg, 1, IBTRS_MAX_QUEUE_DEPTH,
					    &v)) {
				tool_err(
					"invalid --queue-depth '%s': expected 1..%u",
					optarg, IBTRS_MAX_QUEUE_DEPTH);
				return TOOL_EXIT_USAGE;
			}
			cfg.queue_depth = (uint32_t)v;
			break;
		case 'm':
			ret = tool_parse_size(optarg, 1, TOOL_MAX_IO_SIZE, &v);
			if (ret == -ERANGE) {
				tool_err(
					"invalid --max-io-size '%s': the limit is 1..%u bytes (%u MiB)",
					optarg, TOOL_MAX_IO_SIZE,
					TOOL_MAX_IO_SIZE >> 20);
				return TOOL_EXIT_USAGE;
			}
			if (ret) {
				tool_err(
					"invalid --max-io-size '%s': expected a size such as 128k",
					optarg);
				return TOOL_EXIT_USAGE;
			}
			cfg.max_io_size = (uint32_t)v;
			break;
		case OPT_SRV_HB_TIMEOUT:
			if (tool_parse_uint(optarg, SRV_MIN_HB_TIMEOUT_MS,
					    SRV_MAX_TIMEOUT_MS, &v)) {
				tool_err(
					"invalid --hb-timeout '%s': expected %u..%u milliseconds",
					optarg, SRV_MIN_HB_TIMEOUT_MS,
					SRV_MAX_TIMEOUT_MS);
				return TOOL_EXIT_USAGE;
			}
			cfg.hb_timeout_ms = (uint32_t)v;
			break;
		case OPT_SRV_GRACE:
			if (tool_parse_uint(optarg, 0, SRV_MAX_TIMEOUT_MS,
					    &v)) {
				tool_err(
					"invalid --grace '%s': expected 0..%u milliseconds",
					optarg, SRV_MAX_TIMEOUT_MS);
				return TOOL_EXIT_USAGE;
			}
			cfg.grace_ms = (int64_t)v;
			break;
		case OPT_SRV_MAX_MEMORY:
			if (tool_parse_size(optarg, 0, INT64_MAX, &v)) {
				tool_err(
					"invalid --max-memory '%s': expected a size such as 4g, or 0",
					optarg);
				return TOOL_EXIT_USAGE;
			}
			cfg.max_memory = v ? (int64_t)v : -1;
			break;
		case OPT_SRV_BACKING_FILE:
			if (!optarg[0]) {
				tool_err(
					"invalid --backing-file '': expected a file name");
				return TOOL_EXIT_USAGE;
			}
			cfg.backing_file = optarg;
			break;
		case OPT_SRV_STATS_FILE:
			if (!optarg[0]) {
				tool_err(
					"invalid --stats-file '': expected a file name");
				return TOOL_EXIT_USAGE;
			}
			stats_file = optarg;
			break;
		case OPT_SRV_TRANSPORT:
			cfg.backend = optarg;
			break;
		case OPT_SRV_BUSY_POLL:
			if (tool_parse_uint(optarg, 0, IBTRS_MAX_BUSY_POLL_US,
					    &v)) {
				tool_err(
					"invalid --busy-poll '%s': expected 0..%u microseconds",
					optarg, IBTRS_MAX_BUSY_POLL_US);
				return TOOL_EXIT_USAGE;
			}
			cfg.busy_poll_us = (uint32_t)v;
			break;
		case OPT_SRV_BUSY_POLL_ADAPTIVE:
			cfg.busy_poll_adaptive = true;
			break;
		case OPT_SRV_LOOPS:
			if (tool_parse_uint(optarg, 1, IBTRS_SRV_MAX_LOOPS,
					    &v)) {
				tool_err(
					"invalid --loops '%s': expected 1..%u loop threads",
					optarg, IBTRS_SRV_MAX_LOOPS);
				return TOOL_EXIT_USAGE;
			}
			cfg.loop_threads = (uint32_t)v;
			break;
		case OPT_SRV_NULL:
			cfg.null_target = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			usage_server(stdout);
			return TOOL_EXIT_OK;
		default:
			return tool_opt_error("server", c, argv, longopts);
		}
	}
	if (optind < argc) {
		tool_err("unexpected argument '%s' (try '%s server --help')",
			 argv[optind], TOOL_NAME);
		return TOOL_EXIT_USAGE;
	}

	if (cfg.null_target && cfg.backing_file) {
		tool_err("--null and --backing-file exclude each other");
		return TOOL_EXIT_USAGE;
	}
	if (!tool_busy_poll_ok(cfg.busy_poll_us, cfg.busy_poll_adaptive))
		return TOOL_EXIT_USAGE;
	if (listen_str) {
		struct ibtrs_addr addr = { .src = NULL, .dst = &listen_ss };

		char cause[IBTRS_ADDR_CAUSE_LEN];

		ret = ibtrs_addr_parse(listen_str, strlen(listen_str), cfg.port,
				       &addr, cause, sizeof(cause));
		if (ret || addr.src) {
			tool_err("invalid --listen '%s': %s", listen_str,
				 ret ? cause
				     : "a source address makes no sense here");
			return TOOL_EXIT_USAGE;
		}
		/* A port given within the address wins over --port. */
		if (listen_ss.ss_family == AF_INET)
			cfg.port = ntohs(
				((struct sockaddr_in *)&listen_ss)->sin_port);
		else if (listen_ss.ss_family == AF_INET6)
			cfg.port = ntohs(
				((struct sockaddr_in6 *)&listen_ss)->sin6_port);
		cfg.listen_addr = (const struct sockaddr *)&listen_ss;
		cfg.listen_str = listen_str;
	}
	ret = tool_sec_resolve(&sec, false);
	if (ret)
		return ret;
	cfg.sec = &sec;
	cfg.allow = allow;
	cfg.log = quiet ? NULL : stderr;
	cfg.log_prefix = TOOL_NAME ": ";
	cfg.exports = exports;
	cfg.nr_exports = *nr_exports;
	/* A loop per core: many sessions use them all. */
	if (!cfg.loop_threads)
		cfg.loop_threads = tool_online_cpus(IBTRS_SRV_MAX_LOOPS);

	ctx = tool_srv_start(&cfg);
	if (!ctx)
		return TOOL_EXIT_FAIL;
	if (stats_file) {
		ret = srv_write_stats(ctx, stats_file);
		if (ret) {
			tool_err("cannot write --stats-file '%s': %s",
				 stats_file, strerror(-ret));
			tool_srv_stop(ctx);
			return TOOL_EXIT_FAIL;
		}
	}
	printf("listening on port %u\n", ibtrs_srv_get_port(ctx));
	fflush(stdout);

	if (stats_file) {
		while (!(
			sig = tool_signal_wait(SRV_STATS_INTERVAL_MS, &from))) {
			ret = srv_write_stats(ctx, stats_file);
			if (ret && !stats_warned)
				tool_err(
					"warning: cannot write --stats-file '%s': %s",
					stats_file, strerror(-ret));
			stats_warned = stats_warned || ret;
		}
	} else {
		sig = tool_signal_wait(-1, &from);
	}
	if (!quiet) {
		if (from)
			fprintf(stderr,
				"%s: %s received from pid %d, shutting down\n",
				TOOL_NAME, strsignal(sig), (int)from);
		else
			fprintf(stderr, "%s: %s received, shutting down\n",
				TOOL_NAME, strsignal(sig));
	}
	if (stats_file) {
		ret = srv_write_stats(ctx, stats_file);
		if (ret)
			tool_err("warning: cannot write --stats-file '%s': %s",
				 stats_file, strerror(-ret));
	}
	tool_srv_stop(ctx);
	return TOOL_EXIT_OK;
}
