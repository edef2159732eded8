// SPDX-License-Identifier: MIT
/*
 * ctlclient.c - the client side of the control sockets (see ctlclient.h).
 *
 * A scan asks every socket (a socket whose process is gone is removed);
 * a command finds the process that holds the session by asking all of
 * them, then sends the request to that one.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctlclient.h"
#include "hist.h"
#include "tool.h"

/**
 * st_sock_path() - the socket of a process
 * @dir: the control directory
 * @pid: the process
 * @sa: filled with the address
 *
 * Return: 0, -ENAMETOOLONG.
 */
static int st_sock_path(const char *dir, pid_t pid, struct sockaddr_un *sa)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	n = snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%d.sock", dir,
		     (int)pid);
	return n > 0 && (size_t)n < sizeof(sa->sun_path) ? 0 : -ENAMETOOLONG;
}

/**
 * st_ms_left() - milliseconds until a deadline
 * @deadline: CLOCK_MONOTONIC nanoseconds
 *
 * Return: the time left, 0 when past.
 */
int st_ms_left(uint64_t deadline)
{
	uint64_t now = tool_now_ns();

	if (now >= deadline)
		return 0;
	return (int)((deadline - now + 999999) / 1000000);
}

/**
 * st_query() - send one request line to a control socket, read the answer
 * @sa: the socket's address
 * @req: the request, without the newline
 * @timeout_ms: time allowed for connecting, sending and the whole answer
 * @answer: set to the answer line without the newline (malloc'd)
 *
 * Return: 0, -ETIMEDOUT when the answer did not come in time, -EPROTO for
 * an answer cut short or too long, or the errno of socket() or connect()
 * (-ENOENT: no socket, -ECONNREFUSED: nobody listens).
 */
static int st_query(const struct sockaddr_un *sa, const char *req,
		    int timeout_ms, char **answer)
{
	uint64_t deadline = tool_now_ns() + (uint64_t)timeout_ms * 1000000;
	struct timeval tv = { .tv_sec = timeout_ms / 1000,
			      .tv_usec = (timeout_ms % 1000) * 1000 };
	size_t len = 0, cap = 0, reqlen = strlen(req);
	char *buf = NULL, *nb, *line;
	int fd, ret;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Bounds a connect to a full backlog and the send. */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa))) {
		ret = errno == EAGAIN || errno == EINPROGRESS ? -ETIMEDOUT
							      : -errno;
		goto out;
	}
	line = malloc(reqlen + 2);
	if (!line) {
		ret = -ENOMEM;
		goto out;
	}
	memcpy(line, req, reqlen);
	memcpy(line + reqlen, "\n", 2);
	ret = send(fd, line, reqlen + 1, MSG_NOSIGNAL) == (ssize_t)reqlen + 1
		      ? 0
		      : -ETIMEDOUT;
	free(line);
	if (ret)
		goto out;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;
		int left = st_ms_left(deadline);

		if (!left || poll(&p, 1, left) <= 0) {
			ret = -ETIMEDOUT;
			break;
		}
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 8192;
			if (cap > ST_ANSWER_MAX) {
				ret = -EPROTO;
				break;
			}
			nb = realloc(buf, cap);
			if (!nb) {
				ret = -ENOMEM;
				break;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = -EPROTO;
			break;
		}
		len += (size_t)n;
		buf[len] = '\0';
		nb = memchr(buf, '\n', len);
		if (nb) {
			*nb = '\0';
			*answer = buf;
			buf = NULL;
			ret = 0;
			break;
		}
	}
	free(buf);
out:
	close(fd);
	return ret;
}

static int st_pid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/**
 * st_list() - the processes that have a socket in the control directory
 * @dir: the directory
 * @pids: set to the pids found, by increasing pid (malloc'd, may be NULL)
 * @n: set to their number
 *
 * Return: 0 (also for a missing directory: nothing runs), or a negative
 * errno.
 */
static int st_list(const char *dir, pid_t **pids, size_t *n)
{
	size_t cnt = 0, cap = 0;
	pid_t *v = NULL, *nv;
	struct dirent *de;
	DIR *d;

	*pids = NULL;
	*n = 0;
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		char *end;
		long pid;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		errno = 0;
		pid = strtol(de->d_name, &end, 10);
		if (errno || strcmp(end, ".sock") || pid <= 0 || pid > INT_MAX)
			continue;
		if (cnt == cap) {
			cap = cap ? cap * 2 : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
		}
		v[cnt++] = (pid_t)pid;
	}
	closedir(d);
	if (cnt)
		qsort(v, cnt, sizeof(*v), st_pid_cmp);
	*pids = v;
	*n = cnt;
	return 0;
}

void st_set_free(struct st_set *set)
{
	size_t i;

	for (i = 0; i < set->n; i++) {
		free(set->procs[i].raw);
		jparse_free(set->procs[i].doc);
	}
	free(set->procs);
	memset(set, 0, sizeof(*set));
}

/**
 * st_fail() - count a socket that could not be asked
 * @set: the scan
 * @quiet: only remember the reason; else print it (as a warning unless
 *         one process was asked for)
 * @fmt: printf format of the reason
 */
static void st_fail(struct st_set *set, bool quiet, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void st_fail(struct st_set *set, bool quiet, const char *fmt, ...)
{
	char msg[sizeof(set->failmsg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!set->failed++)
		memcpy(set->failmsg, msg, sizeof(msg));
	if (!quiet)
		tool_err("%s%s", set->single ? "" : "warning: ", msg);
}

/**
 * st_ask() - ask one process for its status and add it to a scan
 * @set: the scan
 * @dir: the control directory
 * @pid: the process
 * @single: the user asked for this process (--pid): a socket that is not
 *          there or not listening is a failure, not something to skip
 * @verbose: say on stderr why a socket is skipped
 * @quiet: do not print failures (see st_fail())
 *
 * Return: 0, or -ENOMEM.
 */
static int st_ask(struct st_set *set, const char *dir, pid_t pid, bool single,
		  bool verbose, bool quiet)
{
	struct sockaddr_un sa;
	struct st_proc *np, *p;
	char err[128], *raw = NULL;
	struct jval *doc;
	int ret;

	if (st_sock_path(dir, pid, &sa)) {
		st_fail(set, quiet, "process %d: socket path too long",
			(int)pid);
		return 0;
	}
	if (kill(pid, 0) && errno == ESRCH) {
		/* The process is gone; its socket is left over. */
		if (!unlink(sa.sun_path) && verbose)
			tool_err("note: removed the stale socket of process %d",
				 (int)pid);
		if (single)
			st_fail(set, quiet, "process %d is not running",
				(int)pid);
		return 0;
	}
	ret = st_query(&sa, "status", ST_QUERY_TIMEOUT_MS, &raw);
	if (ret == -ENOENT || ret == -ECONNREFUSED) {
		/* Closing its last session just now, or not ours to ask. */
		if (single)
			st_fail(set, quiet, "process %d: no control socket%s",
				(int)pid, ret == -ENOENT ? "" : " listening");
		else if (verbose)
			tool_err("note: skipped process %d: %s", (int)pid,
				 strerror(-ret));
		return 0;
	}
	if (ret == -ENOMEM)
		return ret;
	if (ret == -ETIMEDOUT) {
		st_fail(set, quiet, "process %d: no answer within %u s",
			(int)pid, ST_QUERY_TIMEOUT_MS / 1000);
		return 0;
	}
	if (ret) {
		st_fail(set, quiet, "process %d: %s", (int)pid,
			ret == -EPROTO ? "no valid answer" : strerror(-ret));
		return 0;
	}
	doc = jparse(raw, strlen(raw), err, sizeof(err));
	if (!doc || doc->type != JT_OBJ) {
		st_fail(set, quiet, "process %d: malformed answer: %s",
			(int)pid, doc ? "not an object" : err);
		jparse_free(doc);
		free(raw);
		return 0;
	}
	np = realloc(set->procs, (set->n + 1) * sizeof(*np));
	if (!np) {
		jparse_free(doc);
		free(raw);
		return -ENOMEM;
	}
	set->procs = np;
	p = &set->procs[set->n++];
	p->pid = pid;
	p->raw = raw;
	p->doc = doc;
	return 0;
}

/**
 * st_collect() - ask every process (or one) for its status
 * @set: filled with the processes that answered
 * @only: the one process to ask, 0 for all
 * @verbose: say why sockets are skipped
 * @quiet: do not print failures
 *
 * Return: 0 or a negative errno (the control directory cannot be read, no
 * memory); on failure an error was printed (unless @quiet) and @set is
 * empty.
 */
int st_collect(struct st_set *set, pid_t only, bool verbose, bool quiet)
{
	char dir[PATH_MAX];
	size_t i, n = 0;
	pid_t *pids = NULL;
	int ret;

	memset(set, 0, sizeof(*set));
	ret = ibtrs_control_dir(dir, sizeof(dir));
	if (!ret && only) {
		set->single = true;
		ret = st_ask(set, dir, only, true, verbose, quiet);
		goto out;
	}
	if (!ret)
		ret = st_list(dir, &pids, &n);
	for (i = 0; !ret && i < n; i++)
		ret = st_ask(set, dir, pids[i], false, verbose, quiet);
	free(pids);
out:
	if (ret) {
		st_set_free(set);
		snprintf(set->failmsg, sizeof(set->failmsg),
			 "cannot read the control directory: %s",
			 strerror(-ret));
		if (!quiet)
			tool_err("%s", set->failmsg);
	}
	return ret;
}

/**
 * st_parse_pid() - the value of --pid
 * @s: the text
 * @pid: filled on success
 *
 * Return: 0, or TOOL_EXIT_USAGE after printing an error.
 */
int st_parse_pid(const char *s, pid_t *pid)
{
	uint64_t v;

	if (tool_parse_uint(s, 1, INT_MAX, &v)) {
		tool_err("invalid --pid '%s': expected a process id", s);
		return TOOL_EXIT_USAGE;
	}
	*pid = (pid_t)v;
	return 0;
}

/**
 * st_has_session() - whether a process holds a client session
 * @p: the process
 * @name: the session name, or NULL for any
 *
 * Return: the number of its client sessions named @name (or of all).
 */
size_t st_has_session(const struct st_proc *p, const char *name)
{
	const struct jval *clients = jget(p->doc, "clients");
	size_t i, n = 0;

	for (i = 0; clients && clients->type == JT_ARR && i < clients->n; i++)
		if (!name ||
		    !strcmp(jget_str(&clients->items[i], "sessname", ""), name))
			n++;
	return n;
}

/**
 * st_find() - the process holding a client session
 * @name: the session name
 * @only: the process given with --pid, 0 for any
 * @pid: filled with the process
 *
 * Return: 0, or TOOL_EXIT_FAIL after printing one error line.
 */
int st_find(const char *name, pid_t only, pid_t *pid)
{
	char list[128] = "";
	struct st_set set;
	size_t i, found = 0, len = 0;

	if (st_collect(&set, only, false, true)) {
		tool_err("%s", set.failmsg);
		return TOOL_EXIT_FAIL;
	}
	for (i = 0; i < set.n; i++) {
		if (!st_has_session(&set.procs[i], name))
			continue;
		if (!found++)
			*pid = set.procs[i].pid;
		if (len < sizeof(list))
			len += (size_t)snprintf(list + len, sizeof(list) - len,
						"%s%d", len ? ", " : "",
						(int)set.procs[i].pid);
	}
	if (only && !set.n && set.failed)
		tool_err("%s", set.failmsg);
	else if (!found && only)
		tool_err("no session '%s' in process %d", name, (int)only);
	else if (!found && set.failed)
		tool_err("no session '%s' (%s%s)", name, set.failmsg,
			 set.failed > 1 ? ", and more" : "");
	else if (!found)
		tool_err("no session '%s'", name);
	else if (found > 1)
		tool_err(
			"session '%s' is in several processes (%s): choose one with --pid",
			name, list);
	st_set_free(&set);
	return found == 1 ? 0 : TOOL_EXIT_FAIL;
}

/**
 * st_command() - send a control command to a process
 * @pid: the process
 * @req: the request line
 * @result: filled with the "result" of a successful command
 *
 * Return: 0, or TOOL_EXIT_FAIL after printing one error line.
 */
int st_command(pid_t pid, const char *req, long long *result)
{
	char dir[PATH_MAX], err[128], *raw = NULL;
	const struct jval *ok, *res;
	struct sockaddr_un sa;
	struct jval *doc;
	int ret;

	ret = ibtrs_control_dir(dir, sizeof(dir));
	if (!ret)
		ret = st_sock_path(dir, pid, &sa);
	if (!ret)
		ret = st_query(&sa, req, ST_CMD_TIMEOUT_MS, &raw);
	if (ret == -ETIMEDOUT) {
		tool_err("process %d: no answer within %u s", (int)pid,
			 ST_CMD_TIMEOUT_MS / 1000);
		return TOOL_EXIT_FAIL;
	}
	if (ret) {
		tool_err("process %d: %s", (int)pid,
			 ret == -EPROTO ? "no valid answer" : strerror(-ret));
		return TOOL_EXIT_FAIL;
	}
	doc = jparse(raw, strlen(raw), err, sizeof(err));
	free(raw);
	ok = jget(doc, "ok");
	if (!ok || ok->type != JT_BOOL) {
		tool_err("process %d: malformed answer%s%s", (int)pid,
			 doc ? "" : ": ", doc ? "" : err);
		jparse_free(doc);
		return TOOL_EXIT_FAIL;
	}
	if (!ok->b) {
		tool_err("process %d: %s", (int)pid,
			 jget_str(doc, "error", "failed"));
		jparse_free(doc);
		return TOOL_EXIT_FAIL;
	}
	res = jget(doc, "result");
	*result = res && res->type == JT_NUM ? (long long)res->num : 0;
	jparse_free(doc);
	return 0;
}

/**
 * st_session_command() - send a control command to the process holding a
 * session
 * @sess: the session name
 * @only: --pid, 0 if not given
 * @result: filled with the "result" of a successful command
 * @fmt: printf format of the request line
 *
 * Return: 0, or an exit status after printing one error line.
 */
int st_session_command(const char *sess, pid_t only, long long *result,
		       const char *fmt, ...)
{
	char req[ST_REQ_MAX];
	va_list ap;
	pid_t pid;
	int ret;

	ret = st_find(sess, only, &pid);
	if (ret)
		return ret;
	va_start(ap, fmt);
	vsnprintf(req, sizeof(req), fmt, ap);
	va_end(ap);
	return st_command(pid, req, result);
}

/**
 * st_hist_counts() - the latency histogram a path sent
 * @p: the path object
 * @counts: filled with the count per bucket, IBTRS_HIST_BUCKETS of them
 *          (the library's layout, hist.h)
 *
 * Return: true when @p has a histogram of the library's layout.
 */
bool st_hist_counts(const struct jval *p, uint64_t *counts)
{
	const struct jval *h = jget(p, "lat_hist");
	const struct jval *ns = jget(h, "ns");
	size_t i;

	memset(counts, 0, IBTRS_HIST_BUCKETS * sizeof(*counts));
	if (!ns || ns->type != JT_ARR ||
	    jget_u64(h, "bits", 0) != IBTRS_HIST_BITS)
		return false;
	for (i = 0; i < ns->n; i++) {
		const struct jval *b = &ns->items[i];

		if (b->type != JT_ARR || b->n != 2 ||
		    b->items[0].type != JT_NUM || !b->items[0].is_u64 ||
		    b->items[1].type != JT_NUM || !b->items[1].is_u64 ||
		    b->items[0].u64 >= IBTRS_HIST_BUCKETS)
			return false;
		counts[b->items[0].u64] = b->items[1].u64;
	}
	return true;
}
