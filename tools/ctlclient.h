/* SPDX-License-Identifier: MIT */
/*
 * ctlclient.h - the client side of the control sockets: find the processes
 * that use the library, ask them for their status, send them commands.
 *
 * Every process with an open session or server context answers on
 * <ibtrs_control_dir()>/<pid>.sock: one request line, one JSON line back.
 * "status" lists its client sessions with their paths and its server
 * contexts with their sessions; the other requests act on a client session
 * and answer {"ok":true,"result":N} or {"ok":false,"error":"..."}.
 */
#ifndef IBTRS_TOOL_CTLCLIENT_H
#define IBTRS_TOOL_CTLCLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "jparse.h"

/* How long one socket may take to answer "status", milliseconds. */
#define ST_QUERY_TIMEOUT_MS 1000
/* How long a control command may take (a reconnect or a removal blocks). */
#define ST_CMD_TIMEOUT_MS 30000
/* Longest answer accepted. */
#define ST_ANSWER_MAX (16u << 20)
/* Room for the longest request: "path add", a session name of 255 and an
 * address of 300 characters. */
#define ST_REQ_MAX 600

/**
 * struct st_proc - one process that answered "status"
 * @pid: its process id
 * @raw: the answer, without the newline
 * @doc: @raw parsed
 */
struct st_proc {
	pid_t pid;
	char *raw;
	struct jval *doc;
};

/**
 * struct st_set - the processes found by one scan
 * @procs: those that answered, by increasing pid
 * @n: number of @procs
 * @single: one process was asked for (--pid): its failure is an error
 * @failed: sockets that could not be asked (no answer, bad answer)
 * @failmsg: the reason of the first failure
 */
struct st_set {
	struct st_proc *procs;
	size_t n;
	bool single;
	unsigned int failed;
	char failmsg[256];
};

int st_collect(struct st_set *set, pid_t only, bool verbose, bool quiet);
void st_set_free(struct st_set *set);
size_t st_has_session(const struct st_proc *p, const char *name);
int st_find(const char *name, pid_t only, pid_t *pid);
int st_command(pid_t pid, const char *req, long long *result);
int st_session_command(const char *sess, pid_t only, long long *result,
		       const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int st_parse_pid(const char *s, pid_t *pid);
int st_ms_left(uint64_t deadline);

/*
 * The latency histogram a path object of an answer carries ("lat_hist")
 * into @counts, IBTRS_HIST_BUCKETS of them (the library's layout, hist.h).
 * Return: true when @p has a histogram of that layout.
 */
bool st_hist_counts(const struct jval *p, uint64_t *counts);

#endif /* IBTRS_TOOL_CTLCLIENT_H */
