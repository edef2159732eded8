// SPDX-License-Identifier: MIT
/*
 * fuzz_ctl.c - the control socket's request handling on any bytes: what a
 * local peer writes to <runtime dir>/<pid>.sock.
 *
 * ctl.c (with json.c and log.c) is included, and serve_one() reads the
 * input from one end of a socketpair, parses it, runs the command and
 * writes its JSON answer, which is checked: one line, one object. The
 * sessions and servers behind the commands are fakes registered directly
 * in ctl.c's list (no control socket is opened, no thread started): they
 * check the arguments the parser hands them and answer like the real ones.
 * "path add" reaches only the fake, never the network.
 */
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../src/core/ctl.c"
#include "../../src/base/json.c"
#include "../../src/base/log.c"

#include "fuzz.h"

#define FUZZ_CTL_IN_MAX 4096

/**
 * struct fake_clt - what a client session shows the control socket
 * @name: its name
 * @paths: its path count
 * @policy: its policy
 */
struct fake_clt {
	const char *name;
	unsigned int paths;
	int policy;
};

static struct fake_clt fake_clts[2] = {
	{ .name = "sess-a", .paths = 2 },
	{ .name = "b", .paths = 1 },
};
static struct ctl_node fake_nodes[3];

/**
 * clt_ctl_name() - fake of clt.c's: the session's name
 * @sess: a fake session
 *
 * Return: its name.
 */
const char *clt_ctl_name(struct ibtrs_clt *sess)
{
	return ((struct fake_clt *)sess)->name;
}

/**
 * clt_ctl_status() - fake of clt.c's: the session as JSON
 * @sess: a fake session
 * @j: where
 */
void clt_ctl_status(struct ibtrs_clt *sess, struct json *j)
{
	struct fake_clt *c = (struct fake_clt *)sess;

	json_obj_begin(j, NULL);
	json_str(j, "name", c->name);
	json_u64(j, "paths", c->paths);
	json_str(j, "policy", ibtrs_mp_policy_str(c->policy));
	json_obj_end(j);
}

/**
 * clt_ctl_add_path() - fake of clt.c's: check the address, add nothing
 * @sess: a fake session
 * @addr: the address the request named
 *
 * Return: the new path's index, or -EINVAL.
 */
int clt_ctl_add_path(struct ibtrs_clt *sess, const char *addr)
{
	struct fake_clt *c = (struct fake_clt *)sess;
	size_t n = strlen(addr);

	FUZZ_CHECK(n && n < CTL_LINE_MAX);
	FUZZ_CHECK(!strpbrk(addr, " \t\r\n"));
	if (c->paths >= IBTRS_MAX_PATHS)
		return -ENOSPC;
	return (int)c->paths;
}

/**
 * srv_ctl_status() - fake of srv.c's: the server as JSON
 * @ctx: unused
 * @j: where
 */
void srv_ctl_status(struct ibtrs_srv_ctx *ctx, struct json *j)
{
	(void)ctx;
	json_obj_begin(j, NULL);
	json_u64(j, "port", 1234);
	json_obj_end(j);
}

/**
 * ibtrs_mp_policy_str() - fake of clt.c's: a policy's name
 * @policy: 0..2
 *
 * Return: its name, "?" for others.
 */
const char *ibtrs_mp_policy_str(int policy)
{
	static const char *const names[] = { "round-robin", "min-inflight",
					     "min-latency" };

	return policy >= 0 && policy < 3 ? names[policy] : "?";
}

/**
 * ibtrs_clt_reset_stats() - fake: checks the session
 * @sess: a fake session
 */
void ibtrs_clt_reset_stats(struct ibtrs_clt *sess)
{
	FUZZ_CHECK(sess == (void *)&fake_clts[0] ||
		   sess == (void *)&fake_clts[1]);
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
	((struct fake_clt *)sess)->policy = policy;
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
	return idx < ((struct fake_clt *)sess)->paths ? 0 : -ENOENT;
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
	FUZZ_CHECK((unsigned int)type < 4 && arg <= 600000);
	return fake_path(sess, idx);
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
	fake_nodes[0] =
		(struct ctl_node){ .kind = CTL_CLT, .obj = &fake_clts[0] };
	fake_nodes[1] = (struct ctl_node){ .kind = CTL_SRV };
	fake_nodes[2] =
		(struct ctl_node){ .kind = CTL_CLT, .obj = &fake_clts[1] };
	fake_nodes[0].next = &fake_nodes[1];
	fake_nodes[1].next = &fake_nodes[2];
	ctl_nodes = &fake_nodes[0];
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
	static char ans[1 << 16];
	size_t got = 0;
	ssize_t n;
	int sv[2];

	if (size > FUZZ_CTL_IN_MAX)
		size = FUZZ_CTL_IN_MAX;
	FUZZ_CHECK(!socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	FUZZ_CHECK(write(sv[0], data, size) == (ssize_t)size);
	shutdown(sv[0], SHUT_WR);
	serve_one(sv[1]);
	close(sv[1]);
	while ((n = read(sv[0], ans + got, sizeof(ans) - 1 - got)) > 0)
		got += (size_t)n;
	close(sv[0]);

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
