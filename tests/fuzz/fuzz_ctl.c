// SPDX-License-Identifier: MIT
/*
 * fuzz_ctl.c - the control socket's request handling on any bytes: what a
 * local peer writes to <runtime dir>/<pid>.sock.
 *
 * ctl.c (with json.c and log.c) and the two kinds of object it serves,
 * clt_ctl.c and srv_ctl.c, are included: serve_one() reads the input,
 * parses it, routes the command through the objects' struct ctl_ops, runs
 * it and writes its JSON answer, which is checked: one line, one object.
 * Its poll(), read() and send() are replaced by a stream of the input
 * (each read returns what is left, as a socket whose peer wrote the input
 * at once and shut down its side does) and a buffer of the answer: no
 * socket per input, whose setting up and closing took most of the time. The
 * sessions and the server are real structs behind fakes of the library calls
 * the commands end in, which check the arguments the parsers hand them and
 * answer like the real ones; the nodes are put directly into ctl.c's list (no
 * control socket is opened, no thread started). "path add" reaches only the
 * fake, never the network.
 */
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

static int fuzz_poll(struct pollfd *p, nfds_t n, int timeout);
static ssize_t fuzz_read(int fd, void *buf, size_t len);
static ssize_t fuzz_send(int fd, const void *buf, size_t len, int flags);

#define poll(p, n, t) fuzz_poll(p, n, t)
#define read(fd, b, n) fuzz_read(fd, b, n)
#define send(fd, b, n, f) fuzz_send(fd, b, n, f)
#include "../../src/core/ctl.c"
#undef send
#undef read
#undef poll
#include "../../src/core/clt_ctl.c"
#include "../../src/core/srv_ctl.c"
#include "../../src/base/json.c"
#include "../../src/base/log.c"

#include "fuzz.h"

#define FUZZ_CTL_IN_MAX 4096

#define FUZZ_CTL_FD 1000 /* serve_one()'s descriptor: no file */

static const struct ibtrs_xprt_ops fake_xprt = { .name = "fake" };
static const uint8_t *in_p; /* the request bytes not read yet */
static size_t in_n;
static char ans[1 << 16]; /* the answer, NUL after it */
static size_t ans_len;

/**
 * fuzz_poll() - poll() of serve_one(): the stream is always readable
 * @p: the one entry
 * @n: 1
 * @timeout: unused
 *
 * Return: 1.
 */
static int fuzz_poll(struct pollfd *p, nfds_t n, int timeout)
{
	(void)timeout;
	FUZZ_CHECK(n == 1 && p->fd == FUZZ_CTL_FD && p->events == POLLIN);
	p->revents = POLLIN;
	return 1;
}

/**
 * fuzz_read() - read() of serve_one(): the rest of the request, up to @len
 * @fd: FUZZ_CTL_FD
 * @buf: where
 * @len: room
 *
 * Return: bytes read, 0 at the end of the request.
 */
static ssize_t fuzz_read(int fd, void *buf, size_t len)
{
	FUZZ_CHECK(fd == FUZZ_CTL_FD && len);
	if (len > in_n)
		len = in_n;
	memcpy(buf, in_p, len);
	in_p += len;
	in_n -= len;
	return (ssize_t)len;
}

/**
 * fuzz_send() - send() of serve_one(): into the answer buffer
 * @fd: FUZZ_CTL_FD
 * @buf: bytes
 * @len: their number
 * @flags: MSG_NOSIGNAL
 *
 * Return: @len.
 */
static ssize_t fuzz_send(int fd, const void *buf, size_t len, int flags)
{
	FUZZ_CHECK(fd == FUZZ_CTL_FD && flags == MSG_NOSIGNAL);
	FUZZ_CHECK(len < sizeof(ans) - ans_len);
	memcpy(ans + ans_len, buf, len);
	ans_len += len;
	return (ssize_t)len;
}
static struct ibtrs_clt fake_clts[2];
static struct ctl_node fake_nodes[3];

/* One of the fake sessions: what the commands may be called on. */
static struct ibtrs_clt *fake_sess(struct ibtrs_clt *sess)
{
	FUZZ_CHECK(sess == &fake_clts[0] || sess == &fake_clts[1]);
	return sess;
}

/**
 * ibtrs_mp_policy_str() - fake of clt.c's: a policy's name
 * @policy: 0..2
 *
 * Return: its name, "unknown" for others.
 */
const char *ibtrs_mp_policy_str(int policy)
{
	static const char *const names[] = { "round-robin", "min-inflight",
					     "min-latency" };

	return policy >= 0 && policy < 3 ? names[policy] : "unknown";
}

/**
 * ibtrs_path_state_str() - fake of path.c's: a state's name
 * @state: the state
 *
 * Return: "connected" for all.
 */
const char *ibtrs_path_state_str(enum ibtrs_path_state state)
{
	(void)state;
	return "connected";
}

/**
 * ibtrs_uuid_str() - fake of util.c's: a fixed text
 * @uuid: unused
 * @buf: 37 bytes
 */
void ibtrs_uuid_str(const uint8_t uuid[IBTRS_UUID_BYTES], char *buf)
{
	(void)uuid;
	strcpy(buf, "00000000-0000-0000-0000-000000000000");
}

/**
 * ibtrs_loop_call() - fake of loop.c's: no loop thread here, run @fn now
 * @loop: unused
 * @fn: what to run
 * @arg: its argument
 */
void ibtrs_loop_call(struct ibtrs_loop *loop, void (*fn)(void *arg), void *arg)
{
	(void)loop;
	fn(arg);
}

/**
 * ibtrs_loop_status() - fake of loop.c's: a fixed object
 * @loop: unused
 * @j: where
 */
void ibtrs_loop_status(struct ibtrs_loop *loop, struct json *j)
{
	(void)loop;
	json_obj_begin(j, "poll");
	json_u64(j, "wakeups", 1);
	json_obj_end(j);
}

/**
 * ibtrs_clt_path_stats() - fake: every path of the session, counters 0
 * @sess: a fake session
 * @idx: path index
 * @st: filled
 *
 * Return: 0, or -ENOENT beyond the session's paths.
 */
int ibtrs_clt_path_stats(struct ibtrs_clt *sess, unsigned int idx,
			 struct ibtrs_path_stats *st)
{
	if (idx >= atomic_load(&fake_sess(sess)->path_cnt))
		return -ENOENT;
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	strcpy(st->src, "127.0.0.1");
	strcpy(st->dst, "127.0.0.1:1234");
	return 0;
}

/**
 * ibtrs_clt_get_stats() - fake: the session's counters, all 0
 * @sess: a fake session
 * @st: filled
 *
 * Return: 0.
 */
int ibtrs_clt_get_stats(struct ibtrs_clt *sess, struct ibtrs_clt_stats *st)
{
	(void)sess;
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	return 0;
}

/**
 * ibtrs_clt_get_events() - fake: one event
 * @sess: a fake session
 * @ev: room for @max
 * @max: entries of @ev
 *
 * Return: events copied.
 */
size_t ibtrs_clt_get_events(struct ibtrs_clt *sess, struct ibtrs_event *ev,
			    size_t max)
{
	fake_sess(sess);
	if (!max)
		return 0;
	memset(ev, 0, sizeof(*ev));
	ev->path = -1;
	strcpy(ev->msg, "open");
	return 1;
}

/**
 * ibtrs_clt_reset_stats() - fake: checks the session
 * @sess: a fake session
 */
void ibtrs_clt_reset_stats(struct ibtrs_clt *sess)
{
	fake_sess(sess);
}

/**
 * ibtrs_clt_set_policy() - fake: checks the policy
 * @sess: a fake session
 * @policy: what the request named
 *
 * Return: 0.
 */
int ibtrs_clt_set_policy(struct ibtrs_clt *sess, int policy)
{
	FUZZ_CHECK(policy >= 0 && policy < 3);
	atomic_store(&fake_sess(sess)->policy, policy);
	return 0;
}

/**
 * fake_path() - a path index as the real session checks it
 * @sess: a fake session
 * @idx: what the request named
 *
 * Return: 0, or -ENOENT beyond the session's paths.
 */
static int fake_path(struct ibtrs_clt *sess, unsigned int idx)
{
	FUZZ_CHECK(idx < IBTRS_MAX_PATHS);
	return idx < atomic_load(&fake_sess(sess)->path_cnt) ? 0 : -ENOENT;
}

/**
 * ibtrs_clt_inject_fault() - fake: checks the fault
 * @sess: a fake session
 * @idx: path index
 * @type: the fault
 * @arg: its argument
 *
 * Return: 0 or -ENOENT.
 */
int ibtrs_clt_inject_fault(struct ibtrs_clt *sess, unsigned int idx,
			   enum ibtrs_fault_type type, unsigned int arg)
{
	FUZZ_CHECK((unsigned int)type <= IBTRS_FAULT_CLOSE &&
		   arg <= CLT_CTL_MAX_FAULT_ARG);
	return fake_path(sess, idx);
}

/**
 * ibtrs_addr_to_sockaddr() - fake of addr.c's: checks the text only
 * @str: the path string
 * @len: its length
 * @port: the session's port
 * @addr: unused
 *
 * Return: 0, or -EINVAL for a string without a digit.
 */
int ibtrs_addr_to_sockaddr(const char *str, size_t len, uint16_t port,
			   struct ibtrs_addr *addr)
{
	(void)port;
	(void)addr;
	FUZZ_CHECK(len && len < CTL_LINE_MAX && strlen(str) == len);
	FUZZ_CHECK(!strpbrk(str, " \t\r\n"));
	return strpbrk(str, "0123456789") ? 0 : -EINVAL;
}

/**
 * ibtrs_clt_add_path() - fake: adds nothing
 * @sess: a fake session
 * @addr: parsed by the fake above
 *
 * Return: the new path's index.
 */
int ibtrs_clt_add_path(struct ibtrs_clt *sess, const struct ibtrs_addr *addr)
{
	FUZZ_CHECK(addr && addr->src && addr->dst);
	return (int)atomic_load(&fake_sess(sess)->path_cnt);
}

/**
 * ibtrs_clt_remove_path() - fake: checks the index
 * @sess: a fake session
 * @idx: path index
 *
 * Return: 0 or -ENOENT.
 */
int ibtrs_clt_remove_path(struct ibtrs_clt *sess, unsigned int idx)
{
	return fake_path(sess, idx);
}

/**
 * ibtrs_clt_reconnect_path() - fake: checks the index
 * @sess: a fake session
 * @idx: path index
 *
 * Return: 0 or -ENOENT.
 */
int ibtrs_clt_reconnect_path(struct ibtrs_clt *sess, unsigned int idx)
{
	return fake_path(sess, idx);
}

/**
 * ibtrs_clt_disconnect_path() - fake: checks the index
 * @sess: a fake session
 * @idx: path index
 *
 * Return: 0 or -ENOENT.
 */
int ibtrs_clt_disconnect_path(struct ibtrs_clt *sess, unsigned int idx)
{
	return fake_path(sess, idx);
}

/**
 * ibtrs_srv_get_stats() - fake: counters 0
 * @ctx: unused
 * @st: filled
 *
 * Return: 0.
 */
int ibtrs_srv_get_stats(struct ibtrs_srv_ctx *ctx, struct ibtrs_srv_stats *st)
{
	(void)ctx;
	memset(st, 0, sizeof(*st));
	return 0;
}

/**
 * srv_ctl_info() - fake of srv.c's: fixed settings
 * @ctx: unused
 * @info: filled
 */
void srv_ctl_info(struct ibtrs_srv_ctx *ctx, struct srv_ctl_info *info)
{
	(void)ctx;
	*info = (struct srv_ctl_info){ .port = 1234,
				       .backend = "fake",
				       .queue_depth = 128,
				       .max_io_size = 131072 };
}

/**
 * srv_ctl_walk() - fake of srv.c's: one graced session with one path
 * @ctx: unused
 * @w: the walker
 */
void srv_ctl_walk(struct ibtrs_srv_ctx *ctx, const struct srv_ctl_walker *w)
{
	static const uint8_t uuid[IBTRS_UUID_LEN];
	const struct srv_ctl_sess s = { .sessname = "sess-a",
					.uuid = uuid,
					.graced = true,
					.grace_ms_left = 5 };
	const struct srv_ctl_path p = { .peer = "127.0.0.1", .nr_cons = 2 };

	(void)ctx;
	w->sess(w->arg, &s);
	w->path(w->arg, &p);
	w->sess_end(w->arg);
}

/**
 * LLVMFuzzerInitialize() - put the fakes into ctl.c's list
 * @argc: unused
 * @argv: unused
 *
 * Return: 0.
 */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	strcpy(fake_clts[0].sessname, "sess-a");
	strcpy(fake_clts[1].sessname, "b");
	atomic_store(&fake_clts[0].path_cnt, 2);
	atomic_store(&fake_clts[1].path_cnt, 1);
	fake_clts[0].ops = fake_clts[1].ops = &fake_xprt;
	fake_nodes[0] =
		(struct ctl_node){ .ops = &clt_ctl_ops, .obj = &fake_clts[0] };
	fake_nodes[1] = (struct ctl_node){ .ops = &srv_ctl_ops };
	fake_nodes[2] =
		(struct ctl_node){ .ops = &clt_ctl_ops, .obj = &fake_clts[1] };
	fake_nodes[0].next = &fake_nodes[1];
	fake_nodes[1].next = &fake_nodes[2];
	ctl_nodes = &fake_nodes[0];
	ctl_kinds[ctl_nr_kinds++] = &clt_ctl_ops;
	ctl_kinds[ctl_nr_kinds++] = &srv_ctl_ops;
	return 0;
}

/**
 * LLVMFuzzerTestOneInput() - one request on one control connection
 * @data: what the peer writes
 * @size: its length (longer inputs are cut at FUZZ_CTL_IN_MAX)
 *
 * Return: 0.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t got;

	if (size > FUZZ_CTL_IN_MAX)
		size = FUZZ_CTL_IN_MAX;
	in_p = data;
	in_n = size;
	ans_len = 0;
	serve_one(FUZZ_CTL_FD);
	got = ans_len;

	/* An answer exactly when a line ended or filled the buffer (a peer
	 * that closes before its newline gets none): one line, one object. */
	FUZZ_CHECK(
		!got ==
		(!memchr(data, '\n',
			 size < CTL_LINE_MAX - 1 ? size : CTL_LINE_MAX - 1) &&
		 size < CTL_LINE_MAX - 1));
	if (!got)
		return 0;
	ans[got] = '\0';
	FUZZ_CHECK(ans[0] == '{' && got >= 3);
	FUZZ_CHECK(ans[got - 1] == '\n' && ans[got - 2] == '}');
	FUZZ_CHECK(!memchr(ans, '\n', got - 1));
	return 0;
}
