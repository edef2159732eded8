/* SPDX-License-Identifier: MIT */
/*
 * tool.h - declarations shared by the parts of the ibtrs command-line tool:
 * the block protocol spoken between "ibtrs bench" and "ibtrs server", option
 * parsing helpers, the server, the benchmark engine and the commands that
 * talk to the control sockets of running processes.
 */
#ifndef IBTRS_TOOL_H
#define IBTRS_TOOL_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "ibnbd.h"
#include "ibtrs.h"

#define TOOL_NAME "ibtrs"

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

/* Exit statuses of every subcommand. */
enum {
	TOOL_EXIT_OK = 0,
	TOOL_EXIT_FAIL = 1,
	TOOL_EXIT_USAGE = 2,
};

/* Largest --max-io-size of "ibtrs server": the library's limit of
 * struct ibtrs_srv_opts.max_io_size. */
#define TOOL_MAX_IO_SIZE (16u << 20)

/* Size of the memory "disk" the server keeps for every session. */
#define TOOL_TARGET_SIZE (64ULL << 20)

/**
 * struct tool_blk_msg - user message of every request of the block protocol
 * @offset: byte offset into the session's target, little endian
 * @len: number of data bytes, equal to the request's data length, little
 *       endian
 * @flags: 0, or TOOL_BLK_STATS (TOOL_BLK_FLAGS_MASK lists the known flags)
 * @req_id: identifier of the request, unique per client instance, little
 *          endian: a random 32-bit instance id in the high half and a
 *          sequence number (from 1) in the low half; 0 for none
 *
 * A WRITE stores its data at @offset, a READ returns the @len bytes stored
 * at @offset (zeros where nothing was written). A request beyond the end of
 * the target fails with -EINVAL. The server counts requests whose @req_id it
 * has seen before: a request that ran twice. A message of
 * TOOL_BLK_MSG_V1_SIZE bytes (without @req_id) is still accepted.
 *
 * A READ with TOOL_BLK_STATS, @offset 0 and @len of at least
 * sizeof(struct tool_blk_stats) reads the server's struct tool_blk_stats
 * instead of the target; it is not counted as a request.
 */
struct tool_blk_msg {
	uint64_t offset;
	uint32_t len;
	uint32_t flags;
	uint64_t req_id;
};

#define TOOL_BLK_STATS 1u
#define TOOL_BLK_FLAGS_MASK TOOL_BLK_STATS
#define TOOL_BLK_MSG_V1_SIZE 16

_Static_assert(sizeof(struct tool_blk_msg) == 24,
	       "struct tool_blk_msg must be 24 bytes on the wire");
_Static_assert(offsetof(struct tool_blk_msg, req_id) == TOOL_BLK_MSG_V1_SIZE,
	       "req_id must follow the 16-byte first version of the message");

/**
 * struct tool_blk_stats - what a TOOL_BLK_STATS READ returns, little endian
 * @user_us: CPU time the server process spent in user mode (getrusage)
 * @sys_us: and in the kernel
 * @requests: requests the server ran, all sessions
 * @reserved: 0
 */
struct tool_blk_stats {
	uint64_t user_us;
	uint64_t sys_us;
	uint64_t requests;
	uint64_t reserved;
};

_Static_assert(sizeof(struct tool_blk_stats) == 32,
	       "struct tool_blk_stats must be 32 bytes on the wire");

/*
 * util.c
 */

void tool_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int tool_opt_error(const char *cmd, int c, char *const argv[],
		   const struct option *longopts);
int tool_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);
int tool_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out);
int tool_parse_seconds(const char *s, double *out);

/*
 * --busy-poll-adaptive needs --busy-poll US (the longest window): false,
 * with the error reported, when it came without it.
 */
bool tool_busy_poll_ok(uint32_t busy_poll_us, bool adaptive);
uint64_t tool_now_ns(void);
int tool_cpu_us(uint64_t *user_us, uint64_t *sys_us);
uint32_t tool_online_cpus(uint32_t max);
const char *tool_xprt_hint(const char *backend, int err);
uint64_t tool_random64(void);
void tool_signals_init(void);
int tool_signal_wait(int timeout_ms, pid_t *from);

/*
 * sec.c: --tls, --tls-psk and --identity
 */

/* Option values of the security options, beside each subcommand's own. */
enum {
	TOOL_OPT_TLS = 0x1000,
	TOOL_OPT_TLS_PSK,
	TOOL_OPT_IDENTITY,
};

/* The struct option entries of --tls and --tls-psk, and of --identity. */
#define TOOL_SEC_LONGOPTS                                            \
	{ "tls", required_argument, NULL, TOOL_OPT_TLS },            \
	{                                                            \
		"tls-psk", required_argument, NULL, TOOL_OPT_TLS_PSK \
	}
#define TOOL_SEC_ID_LONGOPT                                            \
	{                                                              \
		"identity", required_argument, NULL, TOOL_OPT_IDENTITY \
	}

/**
 * struct tool_sec - the security options of a server or a session
 * @tls: enum ibtrs_tls_mode; IBTRS_TLS_DEFAULT until --tls or
 *       tool_sec_resolve()
 * @psk_file: the key file, NULL for none
 * @identity: clients: the identity asked for, NULL for the file's first
 * @nr_keys: set by tool_sec_resolve(): keys in @psk_file
 * @key_identity: set by tool_sec_resolve() for a client: the identity of
 *                the key it proves, "" without keys
 */
struct tool_sec {
	int tls;
	const char *psk_file;
	const char *identity;
	unsigned int nr_keys;
	char key_identity[256];
};

int tool_sec_parse_tls(const char *s);
const char *tool_sec_tls_str(int tls);

/*
 * Take the value of option @c (TOOL_OPT_TLS, _TLS_PSK or _IDENTITY).
 * Return: 0, or TOOL_EXIT_USAGE after a message naming the option.
 */
int tool_sec_opt(struct tool_sec *sec, int c, const char *arg);

/*
 * Fill what the options left open from the environment (as the library
 * would), read the key file and check it (and, for a @client, that the
 * identity is in it), so that the library gets settings it accepts.
 * Return: 0, or TOOL_EXIT_USAGE after a message naming the cause.
 */
int tool_sec_resolve(struct tool_sec *sec, bool client);

/* One line on the security in effect, e.g. "tls require, 3 keys from F". */
const char *tool_sec_describe(const struct tool_sec *sec, char *buf,
			      size_t len);

/* After the open of a server or a @client session failed with @err: a
 * hint (" (...)") on what security may have to do with it, or "". @sec
 * may be NULL. */
const char *tool_sec_hint(const struct tool_sec *sec, int err, bool client);

/*
 * server.c
 */

/**
 * struct tool_export - one --export, --export-ro or --export-dir
 * @name: the export name (NULL for a directory); points to @name_buf
 * @path: the file, block device or directory
 * @readonly: read-only export(s)
 * @name_buf: the name, copied out of "NAME=PATH" so that the command line
 *            stays as the user wrote it (ps shows it)
 */
struct tool_export {
	const char *name;
	const char *path;
	bool readonly;
	char name_buf[IBNBD_NAME_MAX + 1];
};

/* Longest --allow rule: an identity pattern, ':', an export pattern. */
#define TOOL_ALLOW_MAX (255 + 1 + IBNBD_NAME_MAX)

/**
 * struct tool_srv_cfg - configuration of the built-in memory target server
 * @port: TCP port, 0 for any free one
 * @listen_addr: address to listen on, NULL for every address
 * @listen_str: @listen_addr as text for messages, NULL for every address
 * @queue_depth: chunks per session, 0 for the library default
 * @max_io_size: largest request, 0 for the library default
 * @hb_timeout_ms: heartbeat timeout, 0 for the library default
 * @grace_ms: how long a session without paths is kept, -1 for the library
 *            default
 * @max_memory: server-wide memory limit in bytes, 0 for the library
 *              default, -1 for none
 * @backing_file: file holding one target shared by every session, NULL for
 *                a memory target per session
 * @busy_poll_us: busy polling of the server's thread, microseconds
 * @busy_poll_adaptive: the window of @busy_poll_us adapts (see
 *                      struct ibtrs_srv_opts)
 * @null_target: no target: data is neither stored nor read, request ids
 *               are not kept
 * @exports: ibnbd exports (block devices served beside the memory target)
 * @nr_exports: entries of @exports
 * @direct: open the exports with O_DIRECT
 * @sec: TLS and keys, resolved (tool_sec_resolve()); NULL for none
 * @max_sessions_per_client: per client identity; 0 for the library default
 * @max_cons_per_client: the same for connections
 * @max_handshakes_per_client: the same for unfinished handshakes
 * @handshake_timeout_ms: 0 for the library default
 * @allow: ibnbd allow rules, "IDENTITY:EXPORT" each (split at the last
 *         ':'); none: every identity opens every export
 * @nr_allow: entries of @allow
 * @log: stream for connect/disconnect messages, NULL for none
 * @log_prefix: prefix of those messages
 * @loop_threads: the server's loop threads, 0 for the library default (1)
 */
struct tool_srv_cfg {
	uint16_t port;
	const struct sockaddr *listen_addr;
	const char *listen_str;
	uint32_t queue_depth;
	uint32_t max_io_size;
	uint32_t hb_timeout_ms;
	int64_t grace_ms;
	int64_t max_memory;
	const char *backing_file;
	const char *backend; /* NULL: the library's default */
	uint32_t busy_poll_us;
	bool busy_poll_adaptive;
	bool null_target;
	const struct tool_export *exports;
	size_t nr_exports;
	bool direct;
	const struct tool_sec *sec;
	uint32_t max_sessions_per_client;
	uint32_t max_cons_per_client;
	uint32_t max_handshakes_per_client;
	uint32_t handshake_timeout_ms;
	const char *const *allow;
	size_t nr_allow;
	FILE *log;
	const char *log_prefix;
	uint32_t loop_threads;
};

/**
 * struct tool_srv_stats - counters of the server
 * @requests: requests given to the request callback
 * @duplicates: of those, requests whose id had been seen before (ran twice)
 * @ids: request ids remembered
 * @ids_full: the id set reached its memory limit (IDSET_MAX_BYTES): later
 *            ids are not remembered
 * @lib: the library's counters (ibtrs_srv_get_stats())
 */
struct tool_srv_stats {
	uint64_t requests;
	uint64_t duplicates;
	uint64_t ids;
	bool ids_full;
	struct ibtrs_srv_stats lib;
};

struct ibtrs_srv_ctx *tool_srv_start(const struct tool_srv_cfg *cfg);
void tool_srv_get_stats(struct ibtrs_srv_ctx *ctx, struct tool_srv_stats *st);
void tool_srv_stop(struct ibtrs_srv_ctx *ctx);
int cmd_server(int argc, char *argv[]);
void usage_server(FILE *f);

/*
 * bench_cli.c
 */

int cmd_bench(int argc, char *argv[]);
void usage_bench(FILE *f);

/*
 * demo.c
 */

int cmd_demo(int argc, char *argv[]);
void usage_demo(FILE *f);

/*
 * status.c
 */

int cmd_status(int argc, char *argv[]);
void usage_status(FILE *f);

/*
 * control.c: "path", "policy", "stats" and "fault", by argv[0]
 */

int cmd_control(int argc, char *argv[]);
void usage_path(FILE *f);
void usage_policy(FILE *f);
void usage_stats(FILE *f);
void usage_fault(FILE *f);

#endif /* IBTRS_TOOL_H */
