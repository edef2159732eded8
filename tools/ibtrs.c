// SPDX-License-Identifier: MIT
/*
 * ibtrs.c - the ibtrs command-line tool: option handling of the top level
 * and dispatch to the subcommands (server, bench, demo, status, path,
 * policy, stats, fault, help).
 */
#include <stdio.h>
#include <string.h>

#include "tool.h"

/**
 * struct tool_cmd - a subcommand
 * @name: its name on the command line
 * @summary: one-line description
 * @run: runs it; argv[0] is @name
 * @usage: prints its help
 */
struct tool_cmd {
	const char *name;
	const char *summary;
	int (*run)(int argc, char *argv[]);
	void (*usage)(FILE *f);
};

static const struct tool_cmd tool_cmds[] = {
	{ "server", "run a server with a memory-backed target", cmd_server,
	  usage_server },
	{ "bench", "load a server and measure IOPS, throughput and latency",
	  cmd_bench, usage_bench },
	{ "demo", "watch a path fail and come back under verified load",
	  cmd_demo, usage_demo },
	{ "status", "show the sessions and paths of running processes",
	  cmd_status, usage_status },
	{ "path", "add, remove, reconnect or disconnect a path of a session",
	  cmd_control, usage_path },
	{ "policy", "set the multipath policy of a session", cmd_control,
	  usage_policy },
	{ "stats", "reset the counters of a session", cmd_control,
	  usage_stats },
	{ "fault", "inject a fault into a path of a session (testing)",
	  cmd_control, usage_fault },
};

#define TOOL_NCMDS (sizeof(tool_cmds) / sizeof(tool_cmds[0]))

/**
 * find_cmd() - look a subcommand up by name
 * @name: the name
 *
 * Return: the subcommand, or NULL.
 */
static const struct tool_cmd *find_cmd(const char *name)
{
	size_t i;

	for (i = 0; i < TOOL_NCMDS; i++)
		if (!strcmp(tool_cmds[i].name, name))
			return &tool_cmds[i];
	return NULL;
}

/**
 * usage() - print the top-level help
 * @f: output stream
 */
static void usage(FILE *f)
{
	size_t i;

	fprintf(f,
		"Usage: %s [--help | --version] SUBCOMMAND [OPTIONS]\n"
		"\n"
		"IBTRS (RTRS) multipath storage transport over TCP, version %d.%d.\n"
		"\n"
		"Subcommands:\n",
		TOOL_NAME, IBTRS_VERSION_MAJOR, IBTRS_VERSION_MINOR);
	for (i = 0; i < TOOL_NCMDS; i++)
		fprintf(f, "  %-8s  %s\n", tool_cmds[i].name,
			tool_cmds[i].summary);
	fprintf(f,
		"  %-8s  %s\n"
		"\n"
		"Options:\n"
		"  -h, --help     show this help\n"
		"  -V, --version  show the version\n"
		"\n"
		"Run '%s SUBCOMMAND --help' for the options of a subcommand.\n"
		"The library logs on stderr when IBTRS_LOG_LEVEL is set (err, warn,\n"
		"info, debug).\n",
		"help", "show the help of the tool or of a subcommand",
		TOOL_NAME);
}

/**
 * cmd_help() - "ibtrs help [SUBCOMMAND]", "ibtrs help --help"
 * @argc: argument count, argv[0] is "help"
 * @argv: arguments
 *
 * Return: exit status.
 */
static int cmd_help(int argc, char *argv[])
{
	const struct tool_cmd *cmd;

	if (argc < 2) {
		usage(stdout);
		return TOOL_EXIT_OK;
	}
	if (argc > 2) {
		tool_err("unexpected argument '%s' (try '%s --help')", argv[2],
			 TOOL_NAME);
		return TOOL_EXIT_USAGE;
	}
	/* "help --help" and "help -h" are a request for help, too. */
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "-h")) {
		usage(stdout);
		return TOOL_EXIT_OK;
	}
	cmd = find_cmd(argv[1]);
	if (!cmd) {
		tool_err("unknown subcommand '%s' (try '%s --help')", argv[1],
			 TOOL_NAME);
		return TOOL_EXIT_USAGE;
	}
	cmd->usage(stdout);
	return TOOL_EXIT_OK;
}

/**
 * main() - parse the top-level options and run a subcommand
 * @argc: argument count
 * @argv: arguments
 *
 * Return: exit status: 0 success, 1 runtime failure, 2 usage error.
 */
int main(int argc, char *argv[])
{
	const struct tool_cmd *cmd;
	const char *arg;

	if (argc < 2) {
		tool_err("missing subcommand (try '%s --help')", TOOL_NAME);
		return TOOL_EXIT_USAGE;
	}
	arg = argv[1];
	if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
		usage(stdout);
		return TOOL_EXIT_OK;
	}
	if (!strcmp(arg, "--version") || !strcmp(arg, "-V")) {
		printf("%s %d.%d\n", TOOL_NAME, IBTRS_VERSION_MAJOR,
		       IBTRS_VERSION_MINOR);
		return TOOL_EXIT_OK;
	}
	if (!strcmp(arg, "help"))
		return cmd_help(argc - 1, argv + 1);
	if (arg[0] == '-') {
		tool_err("unrecognized option '%s' (try '%s --help')", arg,
			 TOOL_NAME);
		return TOOL_EXIT_USAGE;
	}
	cmd = find_cmd(arg);
	if (!cmd) {
		tool_err("unknown subcommand '%s' (try '%s --help')", arg,
			 TOOL_NAME);
		return TOOL_EXIT_USAGE;
	}
	/* Before the library starts threads: they inherit the mask. */
	tool_signals_init();
	return cmd->run(argc - 1, argv + 1);
}
