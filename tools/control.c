// SPDX-License-Identifier: MIT
/*
 * control.c - "ibtrs path", "ibtrs policy", "ibtrs stats" and "ibtrs
 * fault": one command driven by a table of subcommands. Each entry names
 * its help, how many operands it takes and a builder that checks them and
 * makes the request line; cmd_control() does the rest the same way for
 * all: options, the process holding the session, the request, the answer.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ctlclient.h"
#include "tool.h"

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

/* The --pid help of the commands on one session, and their exit status. */
#define CTL_PID_ONE "the process holding SESSION, when several do"
#define CTL_EXIT                                              \
	"0 done, 1 no such session or the process refused,\n" \
	"2 for usage errors."

/**
 * ctl_usage_tail() - the end of a control command's help: options and
 * exit status
 * @f: output stream
 * @pid: what --pid selects
 * @exit_status: the exit statuses
 */
static void ctl_usage_tail(FILE *f, const char *pid, const char *exit_status)
{
	fprintf(f,
		"\n"
		"Options:\n"
		"      --pid PID   %s\n"
		"  -h, --help      show this help\n"
		"\n"
		"Exit status: %s\n",
		pid, exit_status);
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
		"              paths and it stays closed until reconnected\n",
		TOOL_NAME, TOOL_NAME);
	ctl_usage_tail(f, CTL_PID_ONE, CTL_EXIT);
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
		"with the lowest heartbeat round trip).\n",
		TOOL_NAME);
	ctl_usage_tail(f, CTL_PID_ONE, CTL_EXIT);
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
		"not reset.\n",
		TOOL_NAME);
	ctl_usage_tail(f, "only process PID",
		       "0 done, 1 no such session (or no client session at\n"
		       "all) or the process refused, 2 for usage errors.");
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
		"  close     the path's connections are reset now\n",
		TOOL_NAME);
	ctl_usage_tail(f, CTL_PID_ONE, CTL_EXIT);
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
 * struct ctl_req - a control command, as its builder made it
 * @sess: the session it acts on; NULL for every client session
 * @line: the request line
 * @done: printed when the command succeeded; with @with_result, the
 *        "result" of the answer is printed between @done and @tail
 * @tail: see @done
 * @with_result: see @done
 */
struct ctl_req {
	const char *sess;
	char line[ST_REQ_MAX];
	char done[320];
	char tail[300];
	bool with_result;
};

/**
 * struct ctl_cmd - one control subcommand
 * @name: the subcommand
 * @usage: prints its help
 * @min: fewest operands
 * @max: most operands
 * @missing: what the error says is missing with fewer than @min
 * @build: checks the operands (argv[optind..argc-1], between @min and
 *         @max of them) and fills the request; returns 0 or an exit status
 *         after printing an error
 */
struct ctl_cmd {
	const char *name;
	void (*usage)(FILE *f);
	int min, max;
	const char *missing;
	int (*build)(int argc, char *argv[], struct ctl_req *r);
};

/**
 * ctl_word() - which of a list of words an operand is
 * @list: the words
 * @n: number of @list
 * @s: the operand
 * @what: the error's start, e.g. "invalid policy"
 * @want: the error's list of what is accepted
 *
 * Return: the index in @list, or -1 after printing an error.
 */
static int ctl_word(const char *const *list, size_t n, const char *s,
		    const char *what, const char *want)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(s, list[i]))
			return (int)i;
	tool_err("%s '%s': expected %s", what, s, want);
	return -1;
}

/* "path add SESSION ADDR", "path remove|reconnect|disconnect SESSION IDX" */
static int ctl_build_path(int argc, char *argv[], struct ctl_req *r)
{
	static const char *const done[] = { NULL, "removed", "reconnected",
					    "disconnected" };
	static const char *const ops[] = { "add", "remove", "reconnect",
					   "disconnect" };
	const char *arg;
	unsigned int idx = 0;
	bool add;
	int i, ret;

	i = ctl_word(ops, ARRAY_SIZE(ops), argv[optind], "unknown action",
		     "add, remove, reconnect or disconnect");
	if (i < 0)
		return TOOL_EXIT_USAGE;
	add = !i;
	ret = st_operands("path", argc, argv, 3, 3,
			  add ? "SESSION or ADDR" : "SESSION or IDX");
	if (ret)
		return ret;
	r->sess = argv[optind + 1];
	arg = argv[optind + 2];
	ret = st_check_name(r->sess);
	if (ret)
		return ret;
	if (!add) {
		ret = st_parse_idx(arg, &idx);
		if (ret)
			return ret;
	} else if (!*arg || strpbrk(arg, " \t\r\n") || strlen(arg) > 300) {
		tool_err("invalid address '%s'", arg);
		return TOOL_EXIT_USAGE;
	}
	snprintf(r->line, sizeof(r->line), "path %s %s %s", ops[i], r->sess,
		 arg);
	if (add) {
		r->with_result = true;
		snprintf(r->done, sizeof(r->done), "path ");
		snprintf(r->tail, sizeof(r->tail), " added to %s", r->sess);
	} else {
		snprintf(r->done, sizeof(r->done), "path %u of %s %s", idx,
			 r->sess, done[i]);
	}
	return 0;
}

/* "policy SESSION rr|min-inflight|min-latency" */
static int ctl_build_policy(int argc, char *argv[], struct ctl_req *r)
{
	static const char *const names[] = { "rr", "round-robin",
					     "min-inflight", "min-latency" };
	const char *pol = argv[optind + 1];
	int i, ret;

	(void)argc;
	r->sess = argv[optind];
	ret = st_check_name(r->sess);
	if (ret)
		return ret;
	i = ctl_word(names, ARRAY_SIZE(names), pol, "invalid policy",
		     "rr, min-inflight or min-latency");
	if (i < 0)
		return TOOL_EXIT_USAGE;
	snprintf(r->line, sizeof(r->line), "policy %s %s", r->sess, pol);
	snprintf(r->done, sizeof(r->done), "policy of %s set to %s", r->sess,
		 i < 2 ? "round-robin" : names[i]);
	return 0;
}

/* "stats reset [SESSION]" */
static int ctl_build_stats(int argc, char *argv[], struct ctl_req *r)
{
	int ret;

	if (strcmp(argv[optind], "reset")) {
		tool_err("unknown action '%s': expected reset", argv[optind]);
		return TOOL_EXIT_USAGE;
	}
	if (argc - optind == 1)
		return 0; /* every session: r->sess stays NULL */
	r->sess = argv[optind + 1];
	ret = st_check_name(r->sess);
	if (ret)
		return ret;
	snprintf(r->line, sizeof(r->line), "stats reset %s", r->sess);
	snprintf(r->done, sizeof(r->done), "statistics of %s reset", r->sess);
	return 0;
}

/* "fault SESSION IDX none|drop|delay MS|close" */
static int ctl_build_fault(int argc, char *argv[], struct ctl_req *r)
{
	static const char *const types[] = { "none", "drop", "delay", "close" };
	const char *type = argv[optind + 2], *arg = NULL;
	unsigned int idx;
	uint64_t ms = 0;
	int ret;

	r->sess = argv[optind];
	ret = st_check_name(r->sess);
	if (!ret)
		ret = st_parse_idx(argv[optind + 1], &idx);
	if (ret)
		return ret;
	if (ctl_word(types, ARRAY_SIZE(types), type, "invalid fault",
		     "none, drop, delay or close") < 0)
		return TOOL_EXIT_USAGE;
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
		snprintf(r->line, sizeof(r->line), "fault %s %u %s %llu",
			 r->sess, idx, type, (unsigned long long)ms);
	else
		snprintf(r->line, sizeof(r->line), "fault %s %u %s", r->sess,
			 idx, type);
	if (!strcmp(type, "none"))
		snprintf(r->done, sizeof(r->done),
			 "fault of path %u of %s cleared", idx, r->sess);
	else if (arg)
		snprintf(r->done, sizeof(r->done),
			 "path %u of %s: delay %llu ms", idx, r->sess,
			 (unsigned long long)ms);
	else
		snprintf(r->done, sizeof(r->done), "path %u of %s: fault %s",
			 idx, r->sess, type);
	return 0;
}

static const struct ctl_cmd ctl_cmds[] = {
	{ "path", usage_path, 1, 3, "action", ctl_build_path },
	{ "policy", usage_policy, 2, 2, "SESSION or POLICY", ctl_build_policy },
	{ "stats", usage_stats, 1, 2, "action", ctl_build_stats },
	{ "fault", usage_fault, 3, 4, "SESSION, IDX or TYPE", ctl_build_fault },
};

/**
 * cmd_control() - "ibtrs path", "ibtrs policy", "ibtrs stats", "ibtrs fault"
 * @argc: argument count, argv[0] is the subcommand
 * @argv: arguments
 *
 * Parses the options, has the subcommand's builder check the operands and
 * make the request, sends it to the process holding the session and
 * prints what was done.
 *
 * Return: exit status.
 */
int cmd_control(int argc, char *argv[])
{
	const struct ctl_cmd *c = NULL;
	struct ctl_req r = { 0 };
	long long res;
	bool help;
	pid_t only;
	size_t i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(ctl_cmds); i++)
		if (!strcmp(argv[0], ctl_cmds[i].name))
			c = &ctl_cmds[i];
	if (!c) {
		tool_err("unknown control command '%s'", argv[0]);
		return TOOL_EXIT_USAGE;
	}
	ret = st_ctl_opts(c->name, argc, argv, c->usage, &only, &help);
	if (ret || help)
		return ret;
	ret = st_operands(c->name, argc, argv, c->min, c->max, c->missing);
	if (!ret)
		ret = c->build(argc, argv, &r);
	if (ret)
		return ret;
	if (!r.sess)
		return st_reset_all(only);
	ret = st_session_command(r.sess, only, &res, "%s", r.line);
	if (ret)
		return ret;
	if (r.with_result)
		printf("%s%lld%s\n", r.done, res, r.tail);
	else
		printf("%s\n", r.done);
	return TOOL_EXIT_OK;
}
