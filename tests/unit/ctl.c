// SPDX-License-Identifier: MIT
/*
 * ctl.c - unit tests of the control socket's routing through struct
 * ctl_ops: objects listed in their kind's section of the status (empty
 * sections too), a command going to the newest object of the name it
 * gives and of the kind that declares it, the count answered by a command
 * for all objects, the word count and second word checked, errors
 * answered with the command's name, and a kind's commands still known
 * once its last object is gone. Two fake kinds of object on a real
 * socket in a private runtime directory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl.h"
#include "test.h"

/**
 * struct fake - an object of either fake kind
 * @name: what commands address it by
 * @calls: commands it ran
 * @last: the last one's second word
 */
struct fake {
	const char *name;
	int calls;
	char last[32];
};

static const char *fake_ident(void *obj)
{
	return ((struct fake *)obj)->name;
}

static void fake_status(void *obj, struct json *j)
{
	json_obj_begin(j, NULL);
	json_str(j, "name", ((struct fake *)obj)->name);
	json_obj_end(j);
}

/* "poke NAME ARG": answers ARG's length, or -EIO for "fail". */
static int cmd_poke(void *obj, unsigned int argc, char **argv)
{
	struct fake *f = obj;

	CHECK_EQ(argc, 3);
	f->calls++;
	snprintf(f->last, sizeof(f->last), "%s", argv[2]);
	return strcmp(argv[2], "fail") ? (int)strlen(argv[2]) : -EIO;
}

/* "zap all [NAME]" */
static int cmd_zap(void *obj, unsigned int argc, char **argv)
{
	(void)argc;
	(void)argv;
	((struct fake *)obj)->calls++;
	return 0;
}

static const struct ctl_cmd a_cmds[] = {
	{ "poke", NULL, "poke", 3, 3, 1, false, cmd_poke },
	{ "zap", "all", "zap", 2, 3, 2, true, cmd_zap },
	{ .word = NULL },
};

/* Kind A: clients, commands; kind B: servers, no command, no name. */
static const struct ctl_ops a_ops = {
	.section = CTL_SECTION_CLIENTS,
	.ident = fake_ident,
	.status = fake_status,
	.cmds = a_cmds,
};
static const struct ctl_ops b_ops = {
	.section = CTL_SECTION_SERVERS,
	.status = fake_status,
};

static char sock_path[108];

/* One request line, the answer into @out. */
static void ctl(const char *req, char *out, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t got = 0;
	ssize_t n;
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(fd >= 0);
	CHECK_EQ(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	CHECK_EQ(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	while (got < len - 1 && (n = read(fd, out + got, len - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(fd);
}

/* The answer to a command: its result, or the errno it names. */
static long cmd(const char *req, const char *err_what)
{
	char out[512], want[128];
	long v;

	ctl(req, out, sizeof(out));
	if (sscanf(out, "{\"ok\":true,\"result\":%ld}", &v) == 1)
		return v;
	CHECK(strstr(out, "\"ok\":false"));
	for (v = 1; v < 200; v++) {
		snprintf(want, sizeof(want), "\"error\":\"%s: %s\"", err_what,
			 strerror((int)v));
		if (strstr(out, want))
			return -v;
	}
	fprintf(stderr, "unexpected answer to %s: %s\n", req, out);
	CHECK(0);
	return 0;
}

int main(void)
{
	struct fake a1 = { .name = "one" }, a2 = { .name = "two" },
		    a3 = { .name = "one" }, b1 = { .name = "one" };
	struct ctl_node n_a1, n_a2, n_a3, n_b1;
	char dir[] = "/tmp/ibtrs-ctl-unit-XXXXXX", out[1024], *p;

	t_watchdog(60);
	CHECK(mkdtemp(dir));
	CHECK_EQ(setenv("IBTRS_RUNTIME_DIR", dir, 1), 0);
	unsetenv("IBTRS_CONTROL");
	snprintf(sock_path, sizeof(sock_path), "%s/%d.sock", dir,
		 (int)getpid());

	/* Empty sections are there. */
	ibtrs_ctl_register(&n_b1, &b_ops, &b1);
	CHECK(n_b1.registered);
	ctl("status\n", out, sizeof(out));
	CHECK(strstr(out, "\"clients\":[]"));
	CHECK(strstr(out, "\"servers\":[{\"name\":\"one\"}]"));
	/* A kind nobody registered: its commands are unknown. */
	CHECK_EQ(cmd("poke one x\n", "poke"), -EINVAL);

	ibtrs_ctl_register(&n_a1, &a_ops, &a1);
	ibtrs_ctl_register(&n_a2, &a_ops, &a2);
	ibtrs_ctl_register(&n_a3, &a_ops, &a3);
	ctl("status\n", out, sizeof(out));
	p = strstr(out, "\"clients\":[");
	CHECK(p);
	/* Newest first, each in its section. */
	CHECK(!strncmp(
		p,
		"\"clients\":[{\"name\":\"one\"},{\"name\":\"two\"},"
		"{\"name\":\"one\"}],\"servers\":[{\"name\":\"one\"}]",
		strlen("\"clients\":[{\"name\":\"one\"},{\"name\":\"two\"},"
		       "{\"name\":\"one\"}],\"servers\":[{\"name\":\"one\"}]")));

	/* Named: the newest of that name, of the kind that knows the word. */
	CHECK_EQ(cmd("poke one abcd\n", "poke"), 4);
	CHECK_EQ(a3.calls, 1);
	CHECK_EQ(a1.calls + b1.calls, 0);
	CHECK(!strcmp(a3.last, "abcd"));
	CHECK_EQ(cmd("poke two xy\n", "poke"), 2);
	CHECK_EQ(a2.calls, 1);
	CHECK_EQ(cmd("poke three xy\n", "poke"), -ENOENT);
	/* The function's error, named by the command. */
	CHECK_EQ(cmd("poke two fail\n", "poke"), -EIO);
	/* Word count, second word, unknown word, empty line. */
	CHECK_EQ(cmd("poke two\n", "poke"), -EINVAL);
	CHECK_EQ(cmd("poke two a b\n", "poke"), -EINVAL);
	CHECK_EQ(cmd("zap some\n", "zap"), -EINVAL);
	CHECK_EQ(cmd("frob two\n", "frob"), -EINVAL);
	CHECK_EQ(cmd("\n", "empty request"), -EINVAL);
	CHECK_EQ(a2.calls, 2);

	/* For all: every object of the kind, or every one of the name. */
	a1.calls = a2.calls = a3.calls = 0;
	CHECK_EQ(cmd("zap all\n", "zap"), 3);
	CHECK(a1.calls == 1 && a2.calls == 1 && a3.calls == 1);
	CHECK_EQ(cmd("zap all one\n", "zap"), 2);
	CHECK(a1.calls == 2 && a2.calls == 1 && a3.calls == 2);
	CHECK_EQ(cmd("zap all nobody\n", "zap"), -ENOENT);
	CHECK_EQ(b1.calls, 0);

	/* Withdrawn objects take nothing; the kind stays known. */
	ibtrs_ctl_unregister(&n_a3);
	CHECK_EQ(cmd("poke one q\n", "poke"), 1);
	CHECK_EQ(a1.calls, 3);
	ibtrs_ctl_unregister(&n_a1);
	ibtrs_ctl_unregister(&n_a2);
	CHECK_EQ(cmd("zap all\n", "zap"), 0);
	CHECK_EQ(cmd("poke one q\n", "poke"), -ENOENT);
	ctl("status\n", out, sizeof(out));
	CHECK(strstr(out, "\"clients\":[]"));

	/* The last object closes the socket. */
	ibtrs_ctl_unregister(&n_b1);
	CHECK(access(sock_path, F_OK));
	CHECK_EQ(rmdir(dir), 0);
	return 0;
}
