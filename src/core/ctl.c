// SPDX-License-Identifier: MIT
/*
 * ctl.c - the control socket: every process with an open session or server
 * context answers status queries and control commands on a UNIX socket,
 * <runtime dir>/<pid>.sock, which `ibtrs status` and friends talk to.
 *
 * Runtime dir: $IBTRS_RUNTIME_DIR, else /run/ibtrs for root, else
 * $XDG_RUNTIME_DIR/ibtrs, else /tmp/ibtrs-<uid>; made owner-only. The
 * socket is owner-only too, and a peer of another user (root aside) is
 * refused. IBTRS_CONTROL=0 or the options' @no_control keep a process off.
 *
 * Protocol: one request line, one JSON line back, then the server closes.
 *   status
 *   policy SESS rr|min-inflight|min-latency
 *   path add SESS ADDR | path remove|reconnect|disconnect SESS IDX
 *   fault SESS IDX none|drop|delay|close [ARG]
 *   stats reset [SESS]
 * Answers to commands are {"ok":true,"result":N} (N: the call's return
 * value, e.g. the index of an added path) or {"ok":false,"error":"..."}.
 *
 * This file only routes: each published object brings its struct ctl_ops
 * (ctl.h), which writes its part of the status and declares the commands
 * it answers (the client session's above: clt_ctl.c; the server's status:
 * srv_ctl.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl.h"
#include "ibtrs_fault.h"
#include "json.h"
#include "log.h"

#define CTL_LINE_MAX 512
#define CTL_IO_TIMEOUT_MS 1000

/*
 * ctl_life serialises starting and stopping the thread; ctl_lock guards
 * the objects, and is held while a request uses them, so an object is
 * unregistered only between requests.
 */
static pthread_mutex_t ctl_life = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ctl_node *ctl_nodes; /* under ctl_lock */
static unsigned int ctl_users;	   /* under ctl_life */
static pthread_t ctl_thread;
static int ctl_fd = -1;
static int ctl_stop[2] = { -1, -1 };
static char ctl_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static bool ctl_atexit_done;
static bool ctl_dir_warned; /* under ctl_life */

int ibtrs_control_dir(char *buf, size_t len)
{
	return buf ? ibtrs_ctl_runtime_dir(buf, len) : -EINVAL;
}

int ibtrs_ctl_runtime_dir(char *buf, size_t len)
{
	const char *env = getenv("IBTRS_RUNTIME_DIR");
	int n;

	if (env && *env)
		n = snprintf(buf, len, "%s", env);
	else if (!geteuid())
		n = snprintf(buf, len, "/run/ibtrs");
	else if ((env = getenv("XDG_RUNTIME_DIR")) && *env)
		n = snprintf(buf, len, "%s/ibtrs", env);
	else
		n = snprintf(buf, len, "/tmp/ibtrs-%u",
			     (unsigned int)geteuid());
	return n > 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

/* True if nothing listens on the socket at @path. */
static bool sock_refused(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	bool refused;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return false;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	refused = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) &&
		  errno == ECONNREFUSED;
	close(fd);
	return refused;
}

/* Remove sockets of processes that are gone. */
static void ctl_clean_stale(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		char path[PATH_MAX];
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (end == de->d_name || strcmp(end, ".sock") || pid <= 0)
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >=
		    (int)sizeof(path))
			continue;
		/* Gone, or its pid reused by a process that does not listen. */
		if ((kill((pid_t)pid, 0) && errno == ESRCH) ||
		    (pid != getpid() && sock_refused(path)))
			unlink(path);
	}
	closedir(d);
}

static void ctl_unlink(void)
{
	if (ctl_path[0])
		unlink(ctl_path);
}

/* ------------------------------------------------------------------ */
/* requests                                                             */

/*
 * The kinds of object ever registered, so that a command of a kind whose
 * objects are all gone is still known (and "stats reset" of no session
 * still answers 0). Under ctl_lock.
 */
#define CTL_MAX_KINDS 8
static const struct ctl_ops *ctl_kinds[CTL_MAX_KINDS];
static unsigned int ctl_nr_kinds;

static const char *const ctl_section_names[CTL_NR_SECTIONS] = {
	[CTL_SECTION_CLIENTS] = "clients",
	[CTL_SECTION_SERVERS] = "servers",
};

int ctl_parse_uint(const char *s, unsigned long limit, unsigned long *v)
{
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*v = strtoul(s, &end, 10);
	return *end || errno || *v >= limit ? -EINVAL : 0;
}

int ctl_parse_word(const char *s, const char *const *words, unsigned int n,
		   unsigned int *idx)
{
	unsigned int i;

	for (i = 0; s && i < n; i++) {
		if (words[i] && !strcmp(s, words[i])) {
			*idx = i;
			return 0;
		}
	}
	return -EINVAL;
}

static void answer_status(struct json *j)
{
	struct ctl_node *n;
	char comm[64] = "";
	FILE *f = fopen("/proc/self/comm", "r");
	int sec;

	if (f) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
	json_obj_begin(j, NULL);
	json_u64(j, "pid", (uint64_t)getpid());
	json_str(j, "comm", comm);
	for (sec = 0; sec < CTL_NR_SECTIONS; sec++) {
		json_arr_begin(j, ctl_section_names[sec]);
		for (n = ctl_nodes; n; n = n->next)
			if ((int)n->ops->section == sec && n->ops->status)
				n->ops->status(n->obj, j);
		json_arr_end(j);
	}
	json_obj_end(j);
}

static void answer_result(struct json *j, int ret, const char *what)
{
	char err[160];

	json_obj_begin(j, NULL);
	json_bool(j, "ok", ret >= 0);
	if (ret < 0) {
		snprintf(err, sizeof(err), "%s: %s", what, strerror(-ret));
		json_str(j, "error", err);
	} else {
		json_i64(j, "result", ret);
	}
	json_obj_end(j);
}

/* The command of @ops the request names, or NULL. */
static const struct ctl_cmd *find_cmd(const struct ctl_ops *ops,
				      unsigned int argc, char **argv)
{
	const struct ctl_cmd *c;

	for (c = ops->cmds; c && c->word; c++) {
		if (strcmp(argv[0], c->word) ||
		    (c->sub && (argc < 2 || strcmp(argv[1], c->sub))))
			continue;
		if (argc >= c->min_args && argc <= c->max_args)
			return c;
	}
	return NULL;
}

/*
 * Route a command to the objects it names: the first kind that knows it
 * decides; see struct ctl_cmd for who takes it and what is answered.
 */
static int do_command(char **argv, unsigned int argc, const char **what)
{
	const struct ctl_ops *ops = NULL;
	const struct ctl_cmd *cmd = NULL;
	const char *name;
	struct ctl_node *n;
	unsigned int k;
	int ret, taken = 0;

	*what = argv[0];
	for (k = 0; k < ctl_nr_kinds && !cmd; k++) {
		ops = ctl_kinds[k];
		cmd = find_cmd(ops, argc, argv);
	}
	if (!cmd)
		return -EINVAL;
	*what = cmd->what;
	name = cmd->name_arg < argc ? argv[cmd->name_arg] : NULL;
	for (n = ctl_nodes; n; n = n->next) {
		if (n->ops != ops ||
		    (name && (!ops->ident || strcmp(ops->ident(n->obj), name))))
			continue;
		ret = cmd->fn(n->obj, argc, argv);
		if (!cmd->all || ret < 0)
			return ret;
		taken++;
	}
	return name && !taken ? -ENOENT : taken;
}

/* Under ctl_lock: objects cannot go away while we use them. */
static void handle_line(char *line, struct json *j)
{
	char *argv[CTL_MAX_ARGS], *save = NULL, *tok;
	const char *what = "command";
	unsigned int argc = 0;
	int ret;

	for (tok = strtok_r(line, " \t\r\n", &save); tok && argc < CTL_MAX_ARGS;
	     tok = strtok_r(NULL, " \t\r\n", &save))
		argv[argc++] = tok;
	if (!argc) {
		answer_result(j, -EINVAL, "empty request");
		return;
	}
	if (!strcmp(argv[0], "status") && argc == 1) {
		answer_status(j);
		return;
	}
	ret = do_command(argv, argc, &what);
	answer_result(j, ret, what);
}

static int peer_allowed(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return 0;
	return cred.uid == 0 || cred.uid == geteuid();
}

static void serve_one(int fd)
{
	char line[CTL_LINE_MAX];
	size_t got = 0;
	struct json j;

	while (got < sizeof(line) - 1) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, CTL_IO_TIMEOUT_MS) <= 0)
			return;
		n = read(fd, line + got, sizeof(line) - 1 - got);
		if (n <= 0)
			return;
		got += (size_t)n;
		if (memchr(line, '\n', got))
			break;
	}
	line[got] = '\0';
	json_init(&j);
	pthread_mutex_lock(&ctl_lock);
	handle_line(line, &j);
	pthread_mutex_unlock(&ctl_lock);
	if (!j.oom && j.buf) {
		size_t off = 0;

		j.buf[j.len] = '\n';
		while (off < j.len + 1) {
			ssize_t n = send(fd, j.buf + off, j.len + 1 - off,
					 MSG_NOSIGNAL);

			if (n <= 0)
				break;
			off += (size_t)n;
		}
	}
	json_free(&j);
}

static void *ctl_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "ibtrs-ctl");
	for (;;) {
		struct pollfd p[2] = { { .fd = ctl_fd, .events = POLLIN },
				       { .fd = ctl_stop[0],
					 .events = POLLIN } };
		struct timeval tv = { .tv_sec = CTL_IO_TIMEOUT_MS / 1000 };
		int fd;

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		fd = accept4(ctl_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (peer_allowed(fd))
			serve_one(fd);
		close(fd);
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* start and stop                                                       */

/* The directory must be ours and closed to others (root's is root's). */
static int check_dir(const char *dir)
{
	struct stat st;

	if (lstat(dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077)) {
		/*
		 * Said on stderr whatever the log level: else the process is
		 * silently missing from "ibtrs status". Once per process.
		 */
		if (!ctl_dir_warned) {
			ctl_dir_warned = true;
			if (!S_ISDIR(st.st_mode))
				fprintf(stderr,
					"ibtrs: no control socket: %s is not a directory\n",
					dir);
			else
				fprintf(stderr,
					"ibtrs: no control socket: %s must be owned by uid %u with mode 0700 (it is uid %u, mode %04o)\n",
					dir, (unsigned int)geteuid(),
					(unsigned int)st.st_uid,
					(unsigned int)(st.st_mode & 07777));
		}
		ibtrs_log(
			IBTRS_LOG_WARN,
			"control socket: %s is not a directory of this user closed to others",
			dir);
		return -EPERM;
	}
	return 0;
}

static int ctl_start(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(sa.sun_path)];
	int ret, n;

	ret = ibtrs_ctl_runtime_dir(dir, sizeof(dir));
	if (ret)
		return ret;
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	ret = check_dir(dir);
	if (ret)
		return ret;
	ctl_clean_stale(dir);
	n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%d.sock", dir,
		     (int)getpid());
	if (n < 0 || (size_t)n >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	unlink(sa.sun_path);
	ctl_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ctl_fd < 0)
		return -errno;
	if (bind(ctl_fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    chmod(sa.sun_path, 0600) || listen(ctl_fd, 16)) {
		ret = -errno;
		goto close_fd;
	}
	memcpy(ctl_path, sa.sun_path, sizeof(ctl_path));
	if (pipe2(ctl_stop, O_CLOEXEC)) {
		ret = -errno;
		goto unlink_path;
	}
	ret = -pthread_create(&ctl_thread, NULL, ctl_main, NULL);
	if (ret)
		goto close_pipe;
	if (!ctl_atexit_done && !atexit(ctl_unlink))
		ctl_atexit_done = true;
	return 0;

close_pipe:
	close(ctl_stop[0]);
	close(ctl_stop[1]);
	ctl_stop[0] = ctl_stop[1] = -1;
unlink_path:
	unlink(ctl_path);
	ctl_path[0] = '\0';
close_fd:
	close(ctl_fd);
	ctl_fd = -1;
	return ret;
}

static void ctl_shutdown(void)
{
	char c = 0;

	if (write(ctl_stop[1], &c, 1) < 0)
		ibtrs_log(IBTRS_LOG_ERR, "control socket: %s", strerror(errno));
	pthread_join(ctl_thread, NULL);
	close(ctl_stop[0]);
	close(ctl_stop[1]);
	ctl_stop[0] = ctl_stop[1] = -1;
	close(ctl_fd);
	ctl_fd = -1;
	ctl_unlink();
	ctl_path[0] = '\0';
}

static bool ctl_disabled(void)
{
	const char *env = getenv("IBTRS_CONTROL");

	return env && !strcmp(env, "0");
}

/* Remember @ops as a kind. Context: ctl_lock held. */
static void kind_add(const struct ctl_ops *ops)
{
	unsigned int k;

	for (k = 0; k < ctl_nr_kinds; k++)
		if (ctl_kinds[k] == ops)
			return;
	if (ctl_nr_kinds < CTL_MAX_KINDS)
		ctl_kinds[ctl_nr_kinds++] = ops;
	else
		ibtrs_log(IBTRS_LOG_WARN,
			  "control socket: too many kinds of object");
}

void ibtrs_ctl_register(struct ctl_node *node, const struct ctl_ops *ops,
			void *obj)
{
	int ret;

	node->ops = ops;
	node->obj = obj;
	node->registered = false;
	if (ctl_disabled())
		return;
	pthread_mutex_lock(&ctl_life);
	if (!ctl_users) {
		ret = ctl_start();
		if (ret) {
			ibtrs_log(IBTRS_LOG_WARN,
				  "control socket not available: %s",
				  strerror(-ret));
			pthread_mutex_unlock(&ctl_life);
			return;
		}
	}
	ctl_users++;
	pthread_mutex_lock(&ctl_lock);
	kind_add(ops);
	node->next = ctl_nodes;
	ctl_nodes = node;
	node->registered = true;
	pthread_mutex_unlock(&ctl_lock);
	pthread_mutex_unlock(&ctl_life);
}

void ibtrs_ctl_unregister(struct ctl_node *node)
{
	struct ctl_node **pp;

	if (!node->registered)
		return;
	pthread_mutex_lock(&ctl_life);
	pthread_mutex_lock(&ctl_lock);
	for (pp = &ctl_nodes; *pp; pp = &(*pp)->next) {
		if (*pp == node) {
			*pp = node->next;
			break;
		}
	}
	node->registered = false;
	pthread_mutex_unlock(&ctl_lock);
	if (!--ctl_users)
		ctl_shutdown();
	pthread_mutex_unlock(&ctl_life);
}
