// SPDX-License-Identifier: MIT
/*
 * status.c - "ibtrs status", "ibtrs path", "ibtrs policy", "ibtrs stats"
 * and "ibtrs fault": talk to the control sockets of the processes that use
 * the library.
 *
 * Every process with an open session or server context answers on
 * <ibtrs_control_dir()>/<pid>.sock: one request line, one JSON line back.
 * "status" lists its client sessions with their paths and its server
 * contexts with their sessions; the other requests act on a client session
 * and answer {"ok":true,"result":N} or {"ok":false,"error":"..."}.
 *
 * "ibtrs status" asks every socket (a socket whose process is gone is
 * removed) and prints a table, the answers as one JSON array, or the
 * Prometheus text exposition format, once or every few seconds. The
 * control commands find the process that holds the session by asking all
 * of them, then send the request to that one.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "jparse.h"
#include "tool.h"

/* How long one socket may take to answer "status", milliseconds. */
#define ST_QUERY_TIMEOUT_MS 1000
/* How long a control command may take (a reconnect or a removal blocks). */
#define ST_CMD_TIMEOUT_MS 30000
/* Longest answer accepted. */
#define ST_ANSWER_MAX (16u << 20)
/* Events shown per session in the table. */
#define ST_EVENTS 5
/* Default --watch interval, seconds. */
#define ST_WATCH_DEFAULT 1.0
#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif
/* Table geometry. */
#define ST_COLS 16
#define ST_CELL 160

enum st_format {
	ST_TABLE,
	ST_JSON,
	ST_PROM,
};

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

/* ------------------------------------------------------------------ */
/* the control sockets                                                  */

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
static int st_ms_left(uint64_t deadline)
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

static void st_set_free(struct st_set *set)
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
static int st_collect(struct st_set *set, pid_t only, bool verbose, bool quiet)
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

/* ------------------------------------------------------------------ */
/* human units and a text table                                         */

/**
 * st_scaled() - a number with three significant digits and a unit
 * @buf: output, at least 16 bytes
 * @size: size of @buf
 * @v: the value in units of @units[0]
 * @base: factor between units
 * @units: unit names, NULL-terminated
 */
static void st_scaled(char *buf, size_t size, double v, double base,
		      const char *const *units)
{
	size_t u = 0;

	while (units[u + 1] && v >= base - 0.5)
		v /= base, u++;
	/* 9.996 rounds to "10.00": keep three digits. */
	if (v < 9.995)
		snprintf(buf, size, "%.2f%s", v, units[u]);
	else if (v < 99.95)
		snprintf(buf, size, "%.1f%s", v, units[u]);
	else
		snprintf(buf, size, "%.0f%s", v, units[u]);
}

/* Requests: 987, 57.3k, 1.20M. */
static void st_human_count(char *buf, size_t size, uint64_t v)
{
	static const char *const units[] = { "", "k", "M", "G", "T", "P", NULL };

	if (v < 1000)
		snprintf(buf, size, "%llu", (unsigned long long)v);
	else
		st_scaled(buf, size, (double)v, 1000, units);
}

/* Bytes: 512B, 4.00KiB, 224MiB. */
static void st_human_bytes(char *buf, size_t size, uint64_t v)
{
	static const char *const units[] = { "B",   "KiB", "MiB", "GiB",
					     "TiB", "PiB", NULL };

	if (v < 1024)
		snprintf(buf, size, "%lluB", (unsigned long long)v);
	else
		st_scaled(buf, size, (double)v, 1024, units);
}

/* Microseconds: 58us, 3.01ms, 1.20s; "-" for 0 (nothing measured). */
static void st_human_us(char *buf, size_t size, uint64_t us)
{
	static const char *const units[] = { "us", "ms", "s", NULL };

	if (!us)
		snprintf(buf, size, "-");
	else if (us < 1000)
		snprintf(buf, size, "%lluus", (unsigned long long)us);
	else
		st_scaled(buf, size, (double)us, 1000, units);
}

/**
 * struct st_table - a table of text cells printed with aligned columns
 * @ncols: number of columns
 * @head: column headings
 * @right: per column, align to the right (numbers)
 * @rows: the cells, @nrows rows
 * @nrows: number of rows
 */
struct st_table {
	unsigned int ncols;
	const char *const *head;
	const bool *right;
	char (*rows)[ST_COLS][ST_CELL];
	size_t nrows;
};

/**
 * st_row() - append a row
 * @t: the table
 *
 * Return: the row's cells (empty), or NULL when out of memory.
 */
static char (*st_row(struct st_table *t))[ST_CELL]
{
	char(*nr)[ST_COLS][ST_CELL];

	nr = realloc(t->rows, (t->nrows + 1) * sizeof(*nr));
	if (!nr)
		return NULL;
	t->rows = nr;
	memset(nr[t->nrows], 0, sizeof(nr[t->nrows]));
	return nr[t->nrows++];
}

/**
 * st_table_print() - print a table and free its rows
 * @f: output stream
 * @t: the table
 * @indent: printed before every line
 */
static void st_table_print(FILE *f, struct st_table *t, const char *indent)
{
	size_t w[ST_COLS], i, r;

	for (i = 0; i < t->ncols; i++) {
		w[i] = strlen(t->head[i]);
		for (r = 0; r < t->nrows; r++)
			if (strlen(t->rows[r][i]) > w[i])
				w[i] = strlen(t->rows[r][i]);
	}
	for (r = 0; r <= t->nrows; r++) {
		fputs(indent, f);
		for (i = 0; i < t->ncols; i++) {
			const char *c = r ? t->rows[r - 1][i] : t->head[i];
			bool last = i + 1 == t->ncols;

			if (i)
				fputs("  ", f);
			if (t->right[i])
				fprintf(f, "%*s", (int)w[i], c);
			else
				fprintf(f, "%-*s", last ? 0 : (int)w[i], c);
		}
		fputc('\n', f);
	}
	free(t->rows);
	t->rows = NULL;
	t->nrows = 0;
}

/* ------------------------------------------------------------------ */
/* table output                                                         */

/**
 * st_src_dst() - "SRC->DST" of a path, DST alone without a source
 * @buf: output
 * @size: size of @buf
 * @path: the path object
 *
 * A source address without a port (":0") is shown without it.
 */
static void st_src_dst(char *buf, size_t size, const struct jval *path)
{
	const char *src = jget_str(path, "src", "");
	const char *dst = jget_str(path, "dst", "?");
	size_t n = strlen(src);

	if (n > 2 && !strcmp(src + n - 2, ":0"))
		n -= 2;
	if (n)
		snprintf(buf, size, "%.*s->%s", (int)n, src, dst);
	else
		snprintf(buf, size, "%s", dst);
}

/**
 * st_print_events() - the last ST_EVENTS events of a session
 * @f: output stream
 * @events: the array of events, oldest first
 */
static void st_print_events(FILE *f, const struct jval *events)
{
	size_t i, first;

	if (!events || events->type != JT_ARR || !events->n)
		return;
	first = events->n > ST_EVENTS ? events->n - ST_EVENTS : 0;
	fprintf(f, "    last events:\n");
	for (i = first; i < events->n; i++) {
		const struct jval *ev = &events->items[i];
		double ts = jget_num(ev, "ts", 0);
		const struct jval *path = jget(ev, "path");
		time_t sec = (time_t)ts;
		char when[16] = "??:??:??";
		struct tm tm;

		if (ts > 0 && localtime_r(&sec, &tm))
			strftime(when, sizeof(when), "%H:%M:%S", &tm);
		fprintf(f, "      %s.%03u  ", when,
			(unsigned int)((ts - floor(ts)) * 1000) % 1000);
		if (path && path->type == JT_NUM && path->num >= 0)
			fprintf(f, "path %.0f: ", path->num);
		else
			fputs("session: ", f);
		fprintf(f, "%s\n", jget_str(ev, "msg", ""));
	}
}

static void st_print_client(FILE *f, const struct jval *c)
{
	static const char *const head[] = {
		"IDX",	    "STATE",  "SRC->DST", "INFLT", "RD-OPS",
		"RD-BYTES", "WR-OPS", "WR-BYTES", "ERR",   "FAILOV",
		"RECON",    "HB-RTT", "P50",	  "P99",   "P99.9",
	};
	static const bool right[] = { true, false, false, true, true,
				      true, true,  true,  true, true,
				      true, true,  true,  true, true };
	struct st_table t = { .ncols = ARRAY_SIZE(head),
			      .head = head,
			      .right = right };
	const struct jval *paths = jget(c, "paths");
	char qd[32], mio[32];
	size_t i;

	snprintf(qd, sizeof(qd), "%llu",
		 (unsigned long long)jget_u64(c, "queue_depth", 0));
	st_human_bytes(mio, sizeof(mio), jget_u64(c, "max_io_size", 0));
	fprintf(f,
		"  session %s  policy %s  queue depth %s  max io %s  backend %s\n",
		jget_str(c, "sessname", "?"), jget_str(c, "policy", "?"), qd,
		mio, jget_str(c, "backend", "?"));
	if (!paths || paths->type != JT_ARR || !paths->n) {
		fprintf(f, "    no paths\n");
	} else {
		for (i = 0; i < paths->n; i++) {
			const struct jval *p = &paths->items[i];
			const struct jval *lat = jget(p, "lat_us");
			char(*r)[ST_CELL] = st_row(&t);

			if (!r)
				break;
			snprintf(r[0], ST_CELL, "%llu",
				 (unsigned long long)jget_u64(p, "idx", i));
			snprintf(r[1], ST_CELL, "%s",
				 jget_str(p, "state", "?"));
			st_src_dst(r[2], ST_CELL, p);
			snprintf(r[3], ST_CELL, "%llu",
				 (unsigned long long)jget_u64(p, "inflight",
							      0));
			st_human_count(r[4], ST_CELL, jget_u64(p, "rd_ops", 0));
			st_human_bytes(r[5], ST_CELL,
				       jget_u64(p, "rd_bytes", 0));
			st_human_count(r[6], ST_CELL, jget_u64(p, "wr_ops", 0));
			st_human_bytes(r[7], ST_CELL,
				       jget_u64(p, "wr_bytes", 0));
			st_human_count(r[8], ST_CELL, jget_u64(p, "errors", 0));
			st_human_count(r[9], ST_CELL,
				       jget_u64(p, "failovers", 0));
			snprintf(r[10], ST_CELL, "%llu/%llu",
				 (unsigned long long)jget_u64(p, "reconnects",
							      0),
				 (unsigned long long)jget_u64(
					 p, "reconnect_attempts", 0));
			st_human_us(r[11], ST_CELL,
				    jget_u64(p, "hb_rtt_us", 0));
			st_human_us(r[12], ST_CELL, jget_u64(lat, "p50", 0));
			st_human_us(r[13], ST_CELL, jget_u64(lat, "p99", 0));
			st_human_us(r[14], ST_CELL, jget_u64(lat, "p999", 0));
		}
		st_table_print(f, &t, "    ");
	}
	st_print_events(f, jget(c, "events"));
}

static void st_print_server(FILE *f, const struct jval *s)
{
	static const char *const head[] = { "PEER",    "STATE",	   "CONS",
					    "RD-OPS",  "RD-BYTES", "WR-OPS",
					    "WR-BYTES" };
	static const bool right[] = {
		false, false, true, true, true, true, true
	};
	struct st_table t = { .ncols = ARRAY_SIZE(head),
			      .head = head,
			      .right = right };
	const struct jval *sessions = jget(s, "sessions");
	char mio[32];
	size_t i, k;

	st_human_bytes(mio, sizeof(mio), jget_u64(s, "max_io_size", 0));
	fprintf(f,
		"  server port %llu  queue depth %llu  max io %s  backend %s\n"
		"    requests %llu  replays %llu  stale %llu  busy %llu  "
		"proto errors %llu\n",
		(unsigned long long)jget_u64(s, "port", 0),
		(unsigned long long)jget_u64(s, "queue_depth", 0), mio,
		jget_str(s, "backend", "?"),
		(unsigned long long)jget_u64(s, "requests", 0),
		(unsigned long long)jget_u64(s, "replays", 0),
		(unsigned long long)jget_u64(s, "stale", 0),
		(unsigned long long)jget_u64(s, "busy", 0),
		(unsigned long long)jget_u64(s, "proto_errors", 0));
	if (!sessions || sessions->type != JT_ARR || !sessions->n) {
		fprintf(f, "    no sessions\n");
		return;
	}
	for (i = 0; i < sessions->n; i++) {
		const struct jval *se = &sessions->items[i];
		const struct jval *paths = jget(se, "paths");

		fprintf(f, "    session %s", jget_str(se, "sessname", "?"));
		if (jget_has(se, "grace_ms_left"))
			fprintf(f, "  no paths, kept %.1f s more",
				(double)jget_u64(se, "grace_ms_left", 0) /
					1000);
		fputc('\n', f);
		if (!paths || paths->type != JT_ARR || !paths->n) {
			if (!jget_has(se, "grace_ms_left"))
				fprintf(f, "      no paths\n");
			continue;
		}
		for (k = 0; k < paths->n; k++) {
			const struct jval *p = &paths->items[k];
			char(*r)[ST_CELL] = st_row(&t);

			if (!r)
				break;
			snprintf(r[0], ST_CELL, "%s", jget_str(p, "peer", "?"));
			snprintf(r[1], ST_CELL, "%s",
				 jget_str(p, "state", "?"));
			snprintf(r[2], ST_CELL, "%llu",
				 (unsigned long long)jget_u64(p, "cons", 0));
			st_human_count(r[3], ST_CELL, jget_u64(p, "rd_ops", 0));
			st_human_bytes(r[4], ST_CELL,
				       jget_u64(p, "rd_bytes", 0));
			st_human_count(r[5], ST_CELL, jget_u64(p, "wr_ops", 0));
			st_human_bytes(r[6], ST_CELL,
				       jget_u64(p, "wr_bytes", 0));
		}
		st_table_print(f, &t, "      ");
	}
}

static void st_print_table(FILE *f, const struct st_set *set)
{
	size_t i, k;

	if (!set->n) {
		fprintf(f, "no ibtrs processes\n");
		return;
	}
	for (i = 0; i < set->n; i++) {
		const struct jval *doc = set->procs[i].doc;
		const struct jval *clients = jget(doc, "clients");
		const struct jval *servers = jget(doc, "servers");
		bool any = false;

		if (i)
			fputc('\n', f);
		fprintf(f, "process %d (%s)\n", (int)set->procs[i].pid,
			jget_str(doc, "comm", "?"));
		for (k = 0;
		     clients && clients->type == JT_ARR && k < clients->n;
		     k++, any = true)
			st_print_client(f, &clients->items[k]);
		for (k = 0;
		     servers && servers->type == JT_ARR && k < servers->n;
		     k++, any = true)
			st_print_server(f, &servers->items[k]);
		if (!any)
			fprintf(f, "  no sessions\n");
	}
}

/* ------------------------------------------------------------------ */
/* JSON output                                                          */

static void st_print_json(FILE *f, const struct st_set *set)
{
	size_t i;

	fputc('[', f);
	for (i = 0; i < set->n; i++)
		fprintf(f, "%s%s", i ? "," : "", set->procs[i].raw);
	fputs("]\n", f);
}

/* ------------------------------------------------------------------ */
/* Prometheus text exposition format                                    */

/* What a metric is about, i.e. which objects give its samples. */
enum st_scope {
	SC_SESSION,  /* client sessions */
	SC_PATH,     /* paths of client sessions */
	SC_SERVER,   /* server contexts */
	SC_SRV_PATH, /* paths of the sessions of server contexts */
};

/* How the value(s) of a sample are found. */
enum st_kind {
	MK_U64,	  /* the integer member @key */
	MK_US,	  /* the member @key, microseconds, as seconds */
	MK_DIR,	  /* "rd_"@key and "wr_"@key, label dir="read"|"write" */
	MK_STATE, /* one sample per path state, 1 for the current */
	MK_LAT,	  /* lat_us.p50/p99/p999, label quantile */
	MK_INFO,  /* 1, with policy and backend labels */
};

/**
 * struct st_metric - a metric family
 * @name: its name
 * @type: "counter" or "gauge"
 * @help: the HELP text
 * @scope: which objects it describes
 * @kind: how the values are found
 * @key: the member holding the value
 */
struct st_metric {
	const char *name;
	const char *type;
	const char *help;
	enum st_scope scope;
	enum st_kind kind;
	const char *key;
};

static const struct st_metric st_metrics[] = {
	{ "ibtrs_session_info", "gauge",
	  "Client session, with its multipath policy and backend (always 1).",
	  SC_SESSION, MK_INFO, NULL },
	{ "ibtrs_session_queue_depth", "gauge",
	  "Requests a client session may have in flight.", SC_SESSION, MK_U64,
	  "queue_depth" },
	{ "ibtrs_path_state", "gauge",
	  "State of a client path: 1 for the current state, 0 for the others.",
	  SC_PATH, MK_STATE, "state" },
	{ "ibtrs_path_ops_total", "counter",
	  "Requests completed on a client path, by direction.", SC_PATH, MK_DIR,
	  "ops" },
	{ "ibtrs_path_bytes_total", "counter",
	  "Data bytes of the requests completed on a client path, by direction.",
	  SC_PATH, MK_DIR, "bytes" },
	{ "ibtrs_path_inflight", "gauge",
	  "Requests in flight on a client path.", SC_PATH, MK_U64, "inflight" },
	{ "ibtrs_path_errors_total", "counter",
	  "Requests completed with an error on a client path.", SC_PATH, MK_U64,
	  "errors" },
	{ "ibtrs_path_proto_errors_total", "counter",
	  "Malformed messages received on a client path.", SC_PATH, MK_U64,
	  "proto_errors" },
	{ "ibtrs_path_failovers_total", "counter",
	  "Requests moved from a failed client path to another.", SC_PATH,
	  MK_U64, "failovers" },
	{ "ibtrs_path_reconnect_attempts_total", "counter",
	  "Reconnect attempts of a client path.", SC_PATH, MK_U64,
	  "reconnect_attempts" },
	{ "ibtrs_path_reconnects_total", "counter",
	  "Successful reconnects of a client path.", SC_PATH, MK_U64,
	  "reconnects" },
	{ "ibtrs_path_hb_rtt_seconds", "gauge",
	  "Last heartbeat round trip of a client path (0: none yet).", SC_PATH,
	  MK_US, "hb_rtt_us" },
	{ "ibtrs_path_latency_seconds", "gauge",
	  "Request latency quantiles of a client path (0: no requests).",
	  SC_PATH, MK_LAT, "lat_us" },
	{ "ibtrs_server_requests_total", "counter",
	  "Requests given to the request callback of a server context.",
	  SC_SERVER, MK_U64, "requests" },
	{ "ibtrs_server_replays_total", "counter",
	  "Requests sent again after a failover, answered without running again.",
	  SC_SERVER, MK_U64, "replays" },
	{ "ibtrs_server_stale_total", "counter",
	  "Late copies of requests from a dead path, dropped unanswered.",
	  SC_SERVER, MK_U64, "stale" },
	{ "ibtrs_server_busy_total", "counter",
	  "Requests refused because their tag was still busy.", SC_SERVER,
	  MK_U64, "busy" },
	{ "ibtrs_server_proto_errors_total", "counter",
	  "Connections of a server context closed for a malformed message.",
	  SC_SERVER, MK_U64, "proto_errors" },
	{ "ibtrs_server_path_ops_total", "counter",
	  "Requests run for a path of a server session, by direction.",
	  SC_SRV_PATH, MK_DIR, "ops" },
	{ "ibtrs_server_path_bytes_total", "counter",
	  "Data bytes of the requests of a path of a server session, by direction.",
	  SC_SRV_PATH, MK_DIR, "bytes" },
};

/**
 * struct st_labels - label text being built
 * @buf: the labels, name="value" separated by commas
 * @len: length of @buf
 */
struct st_labels {
	char buf[2048];
	size_t len;
};

/* Append name="value", the value escaped (backslash, quote, newline). */
static void st_label(struct st_labels *l, const char *name, const char *val)
{
	char tmp[sizeof(l->buf)];
	size_t n = 0;

	for (; *val && n + 3 < sizeof(tmp); val++) {
		if (*val == '\\' || *val == '"') {
			tmp[n++] = '\\';
			tmp[n++] = *val;
		} else if (*val == '\n') {
			tmp[n++] = '\\';
			tmp[n++] = 'n';
		} else {
			tmp[n++] = *val;
		}
	}
	tmp[n] = '\0';
	n = (size_t)snprintf(l->buf + l->len, sizeof(l->buf) - l->len,
			     "%s%s=\"%s\"", l->len ? "," : "", name, tmp);
	l->len += n;
	if (l->len >= sizeof(l->buf))
		l->len = sizeof(l->buf) - 1;
}

static void st_label_u64(struct st_labels *l, const char *name, uint64_t v)
{
	char tmp[24];

	snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)v);
	st_label(l, name, tmp);
}

/**
 * struct st_emit - state of one family being printed
 * @f: output stream
 * @m: the family
 * @started: its HELP and TYPE lines were printed
 */
struct st_emit {
	FILE *f;
	const struct st_metric *m;
	bool started;
};

/* One sample: name{labels[,extra]} value. */
static void st_sample(struct st_emit *e, const struct st_labels *l,
		      const char *extra, const char *value)
{
	if (!e->started) {
		fprintf(e->f, "# HELP %s %s\n# TYPE %s %s\n", e->m->name,
			e->m->help, e->m->name, e->m->type);
		e->started = true;
	}
	fprintf(e->f, "%s{%s%s%s} %s\n", e->m->name, l->buf,
		extra && l->len ? "," : "", extra ? extra : "", value);
}

static void st_sample_u64(struct st_emit *e, const struct st_labels *l,
			  const char *extra, uint64_t v)
{
	char tmp[24];

	snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)v);
	st_sample(e, l, extra, tmp);
}

static void st_sample_us(struct st_emit *e, const struct st_labels *l,
			 const char *extra, uint64_t us)
{
	char tmp[32];

	snprintf(tmp, sizeof(tmp), "%.6f", (double)us / 1e6);
	st_sample(e, l, extra, tmp);
}

/* The samples of one object (a session, a path, ...) for one family. */
static void st_emit_obj(struct st_emit *e, const struct st_labels *l,
			const struct jval *obj)
{
	static const char *const states[] = { "connecting",   "connected",
					      "reconnecting", "closing",
					      "closed",	      "dead" };
	const struct st_metric *m = e->m;
	struct st_labels info;
	char key[64], extra[64];
	const struct jval *lat;
	const char *state;
	size_t i;

	switch (m->kind) {
	case MK_U64:
		st_sample_u64(e, l, NULL, jget_u64(obj, m->key, 0));
		break;
	case MK_US:
		st_sample_us(e, l, NULL, jget_u64(obj, m->key, 0));
		break;
	case MK_DIR:
		snprintf(key, sizeof(key), "rd_%s", m->key);
		st_sample_u64(e, l, "dir=\"read\"", jget_u64(obj, key, 0));
		snprintf(key, sizeof(key), "wr_%s", m->key);
		st_sample_u64(e, l, "dir=\"write\"", jget_u64(obj, key, 0));
		break;
	case MK_STATE:
		state = jget_str(obj, m->key, "unknown");
		for (i = 0; i < ARRAY_SIZE(states); i++) {
			snprintf(extra, sizeof(extra), "state=\"%s\"",
				 states[i]);
			st_sample(e, l, extra,
				  strcmp(state, states[i]) ? "0" : "1");
		}
		break;
	case MK_LAT:
		lat = jget(obj, m->key);
		st_sample_us(e, l, "quantile=\"0.5\"", jget_u64(lat, "p50", 0));
		st_sample_us(e, l, "quantile=\"0.99\"",
			     jget_u64(lat, "p99", 0));
		st_sample_us(e, l, "quantile=\"0.999\"",
			     jget_u64(lat, "p999", 0));
		break;
	case MK_INFO:
		info = *l;
		st_label(&info, "policy", jget_str(obj, "policy", ""));
		st_label(&info, "backend", jget_str(obj, "backend", ""));
		st_sample(e, &info, NULL, "1");
		break;
	}
}

/* The samples of one process for one family. */
static void st_emit_proc(struct st_emit *e, const struct st_proc *p)
{
	const struct jval *list;
	struct st_labels base = { .len = 0 }, l1, l2;
	size_t i, k, q;
	bool client;

	st_label_u64(&base, "pid", (uint64_t)p->pid);
	client = e->m->scope == SC_SESSION || e->m->scope == SC_PATH;
	list = jget(p->doc, client ? "clients" : "servers");
	if (!list || list->type != JT_ARR)
		return;
	for (i = 0; i < list->n; i++) {
		const struct jval *o = &list->items[i];
		const struct jval *subs;

		l1 = base;
		if (client)
			st_label(&l1, "session", jget_str(o, "sessname", ""));
		else
			st_label_u64(&l1, "port", jget_u64(o, "port", 0));
		if (e->m->scope == SC_SESSION || e->m->scope == SC_SERVER) {
			st_emit_obj(e, &l1, o);
			continue;
		}
		if (client) {
			subs = jget(o, "paths");
			for (k = 0; subs && subs->type == JT_ARR && k < subs->n;
			     k++) {
				const struct jval *pa = &subs->items[k];

				l2 = l1;
				st_label_u64(&l2, "path",
					     jget_u64(pa, "idx", k));
				st_label(&l2, "src", jget_str(pa, "src", ""));
				st_label(&l2, "dst", jget_str(pa, "dst", ""));
				st_emit_obj(e, &l2, pa);
			}
			continue;
		}
		subs = jget(o, "sessions");
		for (k = 0; subs && subs->type == JT_ARR && k < subs->n; k++) {
			const struct jval *se = &subs->items[k];
			const struct jval *paths = jget(se, "paths");

			for (q = 0;
			     paths && paths->type == JT_ARR && q < paths->n;
			     q++) {
				l2 = l1;
				st_label(&l2, "session",
					 jget_str(se, "sessname", ""));
				st_label(&l2, "peer",
					 jget_str(&paths->items[q], "peer",
						  ""));
				st_emit_obj(e, &l2, &paths->items[q]);
			}
		}
	}
}

static void st_print_prom(FILE *f, const struct st_set *set)
{
	size_t i, k;

	for (i = 0; i < ARRAY_SIZE(st_metrics); i++) {
		struct st_emit e = { .f = f, .m = &st_metrics[i] };

		for (k = 0; k < set->n; k++)
			st_emit_proc(&e, &set->procs[k]);
	}
}

/* ------------------------------------------------------------------ */
/* ibtrs status                                                         */

/**
 * usage_status() - print the help of "ibtrs status"
 * @f: output stream
 */
void usage_status(FILE *f)
{
	fprintf(f,
		"Usage: %s status [--json | --format table|json|prometheus]\n"
		"                    [--watch [SEC]] [--pid PID] [--verbose]\n"
		"\n"
		"Show every process using libibtrs (found by its control socket in\n"
		"$IBTRS_RUNTIME_DIR, /run/ibtrs for root, $XDG_RUNTIME_DIR/ibtrs or\n"
		"/tmp/ibtrs-UID): its client sessions with their paths, counters,\n"
		"latencies and last events, and its server contexts with their\n"
		"sessions. Sockets of processes that are gone are removed.\n"
		"\n"
		"Options:\n"
		"  -j, --json             same as --format json\n"
		"  -f, --format FMT       table (default), json (one array of the\n"
		"                         processes' answers, one line) or prometheus\n"
		"                         (text exposition format)\n"
		"  -w, --watch [SEC]      print again every SEC seconds (default %g)\n"
		"                         until interrupted\n"
		"      --pid PID          only the process PID\n"
		"  -v, --verbose          say which sockets are skipped and why\n"
		"  -h, --help             show this help\n"
		"\n"
		"Every process has %u s to answer. Exit status: 0, or 1 when a\n"
		"process did not answer (the others are shown) or --pid names no\n"
		"process; 2 for usage errors.\n",
		TOOL_NAME, ST_WATCH_DEFAULT, ST_QUERY_TIMEOUT_MS / 1000);
}

/**
 * st_render() - one document of "ibtrs status"
 * @f: output stream
 * @fmt: the format
 * @set: the processes
 */
static void st_render(FILE *f, enum st_format fmt, const struct st_set *set)
{
	switch (fmt) {
	case ST_TABLE:
		st_print_table(f, set);
		break;
	case ST_JSON:
		st_print_json(f, set);
		break;
	case ST_PROM:
		st_print_prom(f, set);
		break;
	}
}

/**
 * st_output() - write a rendered document to stdout
 * @doc: the text
 * @len: its length
 * @clear: clear the terminal first
 *
 * Return: 0, or TOOL_EXIT_FAIL when stdout cannot be written (an error was
 * printed, unless the reader went away).
 */
static int st_output(const char *doc, size_t len, bool clear)
{
	if (clear)
		fputs("\033[H\033[2J", stdout);
	if (len)
		fwrite(doc, 1, len, stdout);
	if (fflush(stdout) || ferror(stdout)) {
		if (errno != EPIPE)
			tool_err("cannot write the output: %s",
				 strerror(errno));
		return TOOL_EXIT_FAIL;
	}
	return 0;
}

/**
 * st_parse_format() - the value of --format
 * @s: the text
 * @fmt: filled on success
 *
 * Return: 0, or -EINVAL.
 */
static int st_parse_format(const char *s, enum st_format *fmt)
{
	if (!strcmp(s, "table"))
		*fmt = ST_TABLE;
	else if (!strcmp(s, "json"))
		*fmt = ST_JSON;
	else if (!strcmp(s, "prometheus") || !strcmp(s, "prom"))
		*fmt = ST_PROM;
	else
		return -EINVAL;
	return 0;
}

/**
 * st_parse_pid() - the value of --pid
 * @s: the text
 * @pid: filled on success
 *
 * Return: 0, or TOOL_EXIT_USAGE after printing an error.
 */
static int st_parse_pid(const char *s, pid_t *pid)
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
 * cmd_status() - "ibtrs status"
 * @argc: argument count, argv[0] is "status"
 * @argv: arguments
 *
 * Return: exit status.
 */
int cmd_status(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "format", required_argument, NULL, 'f' },
		{ "watch", optional_argument, NULL, 'w' },
		{ "pid", required_argument, NULL, 'P' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	enum st_format fmt = ST_TABLE;
	double interval = ST_WATCH_DEFAULT;
	bool watch = false, verbose = false, tty;
	uint64_t next;
	pid_t only = 0;
	int c, ret;

	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, ":jf:w::vh", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 'j':
			fmt = ST_JSON;
			break;
		case 'f':
			if (st_parse_format(optarg, &fmt)) {
				tool_err(
					"invalid --format '%s': expected table, json or prometheus",
					optarg);
				return TOOL_EXIT_USAGE;
			}
			break;
		case 'w':
			watch = true;
			/* "--watch 2" as well as "--watch=2" and "-w2". */
			if (!optarg && optind < argc &&
			    argv[optind][0] != '-') {
				optarg = argv[optind++];
			}
			if (optarg && tool_parse_seconds(optarg, &interval)) {
				tool_err(
					"invalid --watch '%s': expected seconds, e.g. 2 or 0.5",
					optarg);
				return TOOL_EXIT_USAGE;
			}
			break;
		case 'P':
			ret = st_parse_pid(optarg, &only);
			if (ret)
				return ret;
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			usage_status(stdout);
			return TOOL_EXIT_OK;
		default:
			return tool_opt_error("status", c, argv, longopts);
		}
	}
	if (optind < argc) {
		tool_err("unexpected argument '%s' (try '%s status --help')",
			 argv[optind], TOOL_NAME);
		return TOOL_EXIT_USAGE;
	}

	tty = isatty(STDOUT_FILENO);
	next = tool_now_ns();
	for (;;) {
		struct st_set set;
		unsigned int failed;
		char *doc = NULL;
		size_t len = 0;
		FILE *mem;
		int wait_ms;

		if (st_collect(&set, only, verbose, false))
			return TOOL_EXIT_FAIL;
		failed = set.failed;
		if (only && failed && !watch) {
			/* The one process asked for is not there. */
			st_set_free(&set);
			return TOOL_EXIT_FAIL;
		}
		/* Render first, then write at once: no flicker. */
		mem = open_memstream(&doc, &len);
		if (!mem) {
			st_set_free(&set);
			tool_err("out of memory");
			return TOOL_EXIT_FAIL;
		}
		if (watch && tty && fmt == ST_TABLE) {
			time_t now = time(NULL);
			char when[32] = "";
			struct tm tm;

			if (localtime_r(&now, &tm))
				strftime(when, sizeof(when), "%H:%M:%S", &tm);
			fprintf(mem, "Every %gs: %s status  %s\n\n", interval,
				TOOL_NAME, when);
		}
		st_render(mem, fmt, &set);
		st_set_free(&set);
		if (fclose(mem)) {
			free(doc);
			tool_err("out of memory");
			return TOOL_EXIT_FAIL;
		}
		ret = st_output(doc, len, watch && tty && fmt == ST_TABLE);
		free(doc);
		if (ret)
			return ret;
		if (!watch)
			return failed ? TOOL_EXIT_FAIL : TOOL_EXIT_OK;
		/* The next redraw is due SEC after the last one was. */
		next += (uint64_t)(interval * 1e9);
		wait_ms = st_ms_left(next);
		if (!wait_ms)
			next = tool_now_ns();
		if (tool_signal_wait(wait_ms, NULL))
			return TOOL_EXIT_OK;
		/* Documents of a table or metrics: a blank line between. */
		if (!tty && fmt != ST_JSON && st_output("\n", 1, false))
			return TOOL_EXIT_FAIL;
	}
}

/* ------------------------------------------------------------------ */
/* control commands                                                     */

/**
 * st_check_name() - a session name the control protocol can carry
 * @name: the name
 *
 * Return: 0, or TOOL_EXIT_USAGE after printing an error.
 */
static int st_check_name(const char *name)
{
	size_t n = strlen(name);

	if (!n || n > 255 || strpbrk(name, " \t\r\n")) {
		tool_err("invalid session name '%s'", name);
		return TOOL_EXIT_USAGE;
	}
	return 0;
}

/**
 * st_parse_idx() - a path index
 * @s: the text
 * @idx: filled on success
 *
 * Return: 0, or TOOL_EXIT_USAGE after printing an error.
 */
static int st_parse_idx(const char *s, unsigned int *idx)
{
	uint64_t v;

	if (tool_parse_uint(s, 0, IBTRS_MAX_PATHS - 1, &v)) {
		tool_err("invalid path index '%s': expected 0..%u", s,
			 IBTRS_MAX_PATHS - 1);
		return TOOL_EXIT_USAGE;
	}
	*idx = (unsigned int)v;
	return 0;
}

/**
 * st_has_session() - whether a process holds a client session
 * @p: the process
 * @name: the session name, or NULL for any
 *
 * Return: the number of its client sessions named @name (or of all).
 */
static size_t st_has_session(const struct st_proc *p, const char *name)
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
static int st_find(const char *name, pid_t only, pid_t *pid)
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
static int st_command(pid_t pid, const char *req, long long *result)
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
static int st_session_command(const char *sess, pid_t only, long long *result,
			      const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int st_session_command(const char *sess, pid_t only, long long *result,
			      const char *fmt, ...)
{
	char req[512];
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
 * st_ctl_opts() - parse the options of a control command
 * @cmd: the subcommand, for messages
 * @argc: argument count
 * @argv: arguments
 * @usage: prints the help
 * @only: filled with --pid, 0 if not given
 * @help: set when --help was given (and printed)
 *
 * On return optind is the first operand.
 *
 * Return: 0, or TOOL_EXIT_USAGE after printing an error.
 */
static int st_ctl_opts(const char *cmd, int argc, char *argv[],
		       void (*usage)(FILE *f), pid_t *only, bool *help)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, ret;

	*only = 0;
	*help = false;
	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'P':
			ret = st_parse_pid(optarg, only);
			if (ret)
				return ret;
			break;
		case 'h':
			usage(stdout);
			*help = true;
			return 0;
		default:
			return tool_opt_error(cmd, c, argv, longopts);
		}
	}
	return 0;
}

/**
 * st_operands() - check the number of operands
 * @cmd: the subcommand, for messages
 * @argc: argument count
 * @argv: arguments
 * @min: fewest operands
 * @max: most operands
 * @what: what is missing, for the message
 *
 * Return: 0, or TOOL_EXIT_USAGE after printing an error.
 */
static int st_operands(const char *cmd, int argc, char *argv[], int min,
		       int max, const char *what)
{
	if (argc - optind < min) {
		tool_err("missing %s (try '%s %s --help')", what, TOOL_NAME,
			 cmd);
		return TOOL_EXIT_USAGE;
	}
	if (argc - optind > max) {
		tool_err("unexpected argument '%s' (try '%s %s --help')",
			 argv[optind + max], TOOL_NAME, cmd);
		return TOOL_EXIT_USAGE;
	}
	return 0;
}

/**
 * usage_path() - print the help of "ibtrs path"
 * @f: output stream
 */
void usage_path(FILE *f)
{
	fprintf(f,
		"Usage: %s path add SESSION ADDR [--pid PID]\n"
		"       %s path remove|reconnect|disconnect SESSION IDX [--pid PID]\n"
		"\n"
		"Change the paths of a client session of a running process:\n"
		"  add         connect a new path to ADDR (as for bench --path, e.g.\n"
		"              ip:10.0.0.2,ip:10.0.0.10); prints its index\n"
		"  remove      drain path IDX and remove it for good\n"
		"  reconnect   connect path IDX again (waits for the connect)\n"
		"  disconnect  close path IDX; its requests move to the other\n"
		"              paths and it stays closed until reconnected\n"
		"\n"
		"Options:\n"
		"      --pid PID   the process holding SESSION, when several do\n"
		"  -h, --help      show this help\n"
		"\n"
		"Exit status: 0 done, 1 no such session or the process refused,\n"
		"2 for usage errors.\n",
		TOOL_NAME, TOOL_NAME);
}

/**
 * cmd_path() - "ibtrs path"
 * @argc: argument count, argv[0] is "path"
 * @argv: arguments
 *
 * Return: exit status.
 */
int cmd_path(int argc, char *argv[])
{
	static const char *const done[] = { "removed", "reconnected",
					    "disconnected" };
	static const char *const ops[] = { "remove", "reconnect",
					   "disconnect" };
	const char *op, *sess, *arg;
	unsigned int idx = 0;
	long long res;
	bool help;
	pid_t only;
	size_t i;
	int ret;

	ret = st_ctl_opts("path", argc, argv, usage_path, &only, &help);
	if (ret || help)
		return ret;
	ret = st_operands("path", argc, argv, 1, 3, "action");
	if (ret)
		return ret;
	op = argv[optind];
	for (i = 0; i < ARRAY_SIZE(ops); i++)
		if (!strcmp(op, ops[i]))
			break;
	if (strcmp(op, "add") && i == ARRAY_SIZE(ops)) {
		tool_err(
			"unknown action '%s': expected add, remove, reconnect or disconnect",
			op);
		return TOOL_EXIT_USAGE;
	}
	ret = st_operands("path", argc, argv, 3, 3,
			  strcmp(op, "add") ? "SESSION or IDX"
					    : "SESSION or ADDR");
	if (ret)
		return ret;
	sess = argv[optind + 1];
	arg = argv[optind + 2];
	ret = st_check_name(sess);
	if (ret)
		return ret;
	if (strcmp(op, "add")) {
		ret = st_parse_idx(arg, &idx);
		if (ret)
			return ret;
	} else if (!*arg || strpbrk(arg, " \t\r\n") || strlen(arg) > 300) {
		tool_err("invalid address '%s'", arg);
		return TOOL_EXIT_USAGE;
	}
	ret = st_session_command(sess, only, &res, "path %s %s %s", op, sess,
				 arg);
	if (ret)
		return ret;
	if (!strcmp(op, "add"))
		printf("path %lld added to %s\n", res, sess);
	else
		printf("path %u of %s %s\n", idx, sess, done[i]);
	return TOOL_EXIT_OK;
}

/**
 * usage_policy() - print the help of "ibtrs policy"
 * @f: output stream
 */
void usage_policy(FILE *f)
{
	fprintf(f,
		"Usage: %s policy SESSION rr|min-inflight|min-latency [--pid PID]\n"
		"\n"
		"Set the multipath policy of a client session of a running process:\n"
		"rr (round-robin: each connected path in turn), min-inflight (the\n"
		"path with the fewest requests in flight) or min-latency (the path\n"
		"with the lowest heartbeat round trip).\n"
		"\n"
		"Options:\n"
		"      --pid PID   the process holding SESSION, when several do\n"
		"  -h, --help      show this help\n"
		"\n"
		"Exit status: 0 done, 1 no such session or the process refused,\n"
		"2 for usage errors.\n",
		TOOL_NAME);
}

/**
 * cmd_policy() - "ibtrs policy"
 * @argc: argument count, argv[0] is "policy"
 * @argv: arguments
 *
 * Return: exit status.
 */
int cmd_policy(int argc, char *argv[])
{
	static const char *const names[] = { "rr", "round-robin",
					     "min-inflight", "min-latency" };
	const char *sess, *pol;
	long long res;
	bool help;
	pid_t only;
	size_t i;
	int ret;

	ret = st_ctl_opts("policy", argc, argv, usage_policy, &only, &help);
	if (ret || help)
		return ret;
	ret = st_operands("policy", argc, argv, 2, 2, "SESSION or POLICY");
	if (ret)
		return ret;
	sess = argv[optind];
	pol = argv[optind + 1];
	ret = st_check_name(sess);
	if (ret)
		return ret;
	for (i = 0; i < ARRAY_SIZE(names); i++)
		if (!strcmp(pol, names[i]))
			break;
	if (i == ARRAY_SIZE(names)) {
		tool_err(
			"invalid policy '%s': expected rr, min-inflight or min-latency",
			pol);
		return TOOL_EXIT_USAGE;
	}
	ret = st_session_command(sess, only, &res, "policy %s %s", sess, pol);
	if (ret)
		return ret;
	printf("policy of %s set to %s\n", sess,
	       i < 2 ? "round-robin" : names[i]);
	return TOOL_EXIT_OK;
}

/**
 * usage_stats() - print the help of "ibtrs stats"
 * @f: output stream
 */
void usage_stats(FILE *f)
{
	fprintf(f,
		"Usage: %s stats reset [SESSION] [--pid PID]\n"
		"\n"
		"Zero the counters and latency histograms of every path of a client\n"
		"session of a running process; without SESSION, of every client\n"
		"session of every process (or of process PID). Server counters are\n"
		"not reset.\n"
		"\n"
		"Options:\n"
		"      --pid PID   only process PID\n"
		"  -h, --help      show this help\n"
		"\n"
		"Exit status: 0 done, 1 no such session (or no client session at\n"
		"all) or the process refused, 2 for usage errors.\n",
		TOOL_NAME);
}

/**
 * st_reset_all() - "ibtrs stats reset" without a session
 * @only: the process given with --pid, 0 for all
 *
 * Return: exit status.
 */
static int st_reset_all(pid_t only)
{
	size_t i, sessions = 0, procs = 0;
	struct st_set set;
	long long res;
	int ret = 0;

	if (st_collect(&set, only, false, true)) {
		tool_err("%s", set.failmsg);
		return TOOL_EXIT_FAIL;
	}
	for (i = 0; i < set.n && !ret; i++) {
		size_t n = st_has_session(&set.procs[i], NULL);

		if (!n)
			continue;
		ret = st_command(set.procs[i].pid, "stats reset", &res);
		sessions += n;
		procs++;
	}
	if (!ret && !procs) {
		if (set.failed)
			tool_err("no client sessions (%s)", set.failmsg);
		else
			tool_err("no client sessions");
		ret = TOOL_EXIT_FAIL;
	}
	st_set_free(&set);
	if (ret)
		return ret;
	printf("statistics reset: %zu session%s in %zu process%s\n", sessions,
	       sessions == 1 ? "" : "s", procs, procs == 1 ? "" : "es");
	return TOOL_EXIT_OK;
}

/**
 * cmd_stats() - "ibtrs stats"
 * @argc: argument count, argv[0] is "stats"
 * @argv: arguments
 *
 * Return: exit status.
 */
int cmd_stats(int argc, char *argv[])
{
	const char *sess;
	long long res;
	bool help;
	pid_t only;
	int ret;

	ret = st_ctl_opts("stats", argc, argv, usage_stats, &only, &help);
	if (ret || help)
		return ret;
	ret = st_operands("stats", argc, argv, 1, 2, "action");
	if (ret)
		return ret;
	if (strcmp(argv[optind], "reset")) {
		tool_err("unknown action '%s': expected reset", argv[optind]);
		return TOOL_EXIT_USAGE;
	}
	if (argc - optind == 1)
		return st_reset_all(only);
	sess = argv[optind + 1];
	ret = st_check_name(sess);
	if (ret)
		return ret;
	ret = st_session_command(sess, only, &res, "stats reset %s", sess);
	if (ret)
		return ret;
	printf("statistics of %s reset\n", sess);
	return TOOL_EXIT_OK;
}

/**
 * usage_fault() - print the help of "ibtrs fault"
 * @f: output stream
 */
void usage_fault(FILE *f)
{
	fprintf(f,
		"Usage: %s fault SESSION IDX none|drop|delay MS|close [--pid PID]\n"
		"\n"
		"Inject a fault into path IDX of a client session of a running\n"
		"process, for testing:\n"
		"  none      clear the path's fault\n"
		"  drop      the path silently loses everything, as a cut cable\n"
		"  delay MS  every response on the path is held MS ms (0..600000)\n"
		"  close     the path's connections are reset now\n"
		"\n"
		"Options:\n"
		"      --pid PID   the process holding SESSION, when several do\n"
		"  -h, --help      show this help\n"
		"\n"
		"Exit status: 0 done, 1 no such session or the process refused,\n"
		"2 for usage errors.\n",
		TOOL_NAME);
}

/**
 * cmd_fault() - "ibtrs fault"
 * @argc: argument count, argv[0] is "fault"
 * @argv: arguments
 *
 * Return: exit status.
 */
int cmd_fault(int argc, char *argv[])
{
	static const char *const types[] = { "none", "drop", "delay", "close" };
	const char *sess, *type, *arg = NULL;
	unsigned int idx;
	long long res;
	uint64_t ms = 0;
	bool help;
	pid_t only;
	size_t i;
	int ret;

	ret = st_ctl_opts("fault", argc, argv, usage_fault, &only, &help);
	if (ret || help)
		return ret;
	ret = st_operands("fault", argc, argv, 3, 4, "SESSION, IDX or TYPE");
	if (ret)
		return ret;
	sess = argv[optind];
	type = argv[optind + 2];
	ret = st_check_name(sess);
	if (!ret)
		ret = st_parse_idx(argv[optind + 1], &idx);
	if (ret)
		return ret;
	for (i = 0; i < ARRAY_SIZE(types); i++)
		if (!strcmp(type, types[i]))
			break;
	if (i == ARRAY_SIZE(types)) {
		tool_err(
			"invalid fault '%s': expected none, drop, delay or close",
			type);
		return TOOL_EXIT_USAGE;
	}
	if (argc - optind == 4)
		arg = argv[optind + 3];
	if (strcmp(type, "delay") && arg) {
		tool_err("unexpected argument '%s': only delay takes one", arg);
		return TOOL_EXIT_USAGE;
	}
	if (!strcmp(type, "delay") &&
	    (!arg || tool_parse_uint(arg, 0, 600000, &ms))) {
		tool_err("delay needs milliseconds, 0..600000%s%s%s",
			 arg ? " (not '" : "", arg ? arg : "", arg ? "')" : "");
		return TOOL_EXIT_USAGE;
	}
	if (arg)
		ret = st_session_command(sess, only, &res,
					 "fault %s %u %s %llu", sess, idx, type,
					 (unsigned long long)ms);
	else
		ret = st_session_command(sess, only, &res, "fault %s %u %s",
					 sess, idx, type);
	if (ret)
		return ret;
	if (!strcmp(type, "none"))
		printf("fault of path %u of %s cleared\n", idx, sess);
	else if (arg)
		printf("path %u of %s: delay %llu ms\n", idx, sess,
		       (unsigned long long)ms);
	else
		printf("path %u of %s: fault %s\n", idx, sess, type);
	return TOOL_EXIT_OK;
}
