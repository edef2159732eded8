// SPDX-License-Identifier: MIT
/*
 * util.c - small helpers of the ibtrs tool: error messages, number and size
 * parsing, clocks, JSON strings and signal handling.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"

/**
 * tool_err() - print one "ibtrs: ..." line on stderr
 * @fmt: printf format of the message, without a trailing newline
 */
void tool_err(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* One write, so that the line is not interleaved with others. */
	fprintf(stderr, "%s: %s\n", TOOL_NAME, buf);
	fflush(stderr);
}

/**
 * opt_is_long() - whether getopt_long() failed on a long option
 * @arg: the argument consumed last
 * @longopts: the long options
 * @name: filled with the option as written, without "=VALUE"
 * @size: size of @name
 *
 * Return: true when @arg is the long option getopt_long() stopped at: an
 * unknown one (optopt 0) or the known one whose value is in optopt.
 */
static bool opt_is_long(const char *arg, const struct option *longopts,
			char *name, size_t size)
{
	size_t n;

	if (strncmp(arg, "--", 2) || !arg[2])
		return false;
	n = strcspn(arg, "=");
	snprintf(name, size, "%.*s", (int)n, arg);
	if (!optopt)
		return true;
	for (; longopts->name; longopts++)
		if (longopts->val == optopt && !longopts->flag &&
		    !strncmp(longopts->name, arg + 2, n - 2))
			return true;
	return false;
}

/**
 * tool_opt_error() - report an option getopt_long() did not accept
 * @cmd: the subcommand, for the "try --help" hint
 * @c: what getopt_long() returned: '?' or ':'
 * @argv: the argument vector given to getopt_long()
 * @longopts: the long options given to getopt_long()
 *
 * getopt_long() must have been called with opterr = 0 and an optstring
 * starting with ':'.
 *
 * Return: TOOL_EXIT_USAGE.
 */
int tool_opt_error(const char *cmd, int c, char *const argv[],
		   const struct option *longopts)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "";
	char what[64];
	bool is_long;

	is_long = opt_is_long(arg, longopts, what, sizeof(what));
	if (!is_long)
		snprintf(what, sizeof(what), "-%c", optopt);
	if (c == ':')
		tool_err(
			"option '%s' requires an argument (try '%s %s --help')",
			what, TOOL_NAME, cmd);
	else if (is_long && optopt)
		tool_err("option '%s' takes no argument (try '%s %s --help')",
			 what, TOOL_NAME, cmd);
	else
		tool_err("unrecognized option '%s' (try '%s %s --help')", what,
			 TOOL_NAME, cmd);
	return TOOL_EXIT_USAGE;
}

/**
 * parse_digits() - parse an unsigned decimal number with a suffix
 * @s: the text
 * @val: filled with the number
 * @end: set to the first character after the digits
 *
 * Return: 0, -EINVAL when @s does not start with a digit, -ERANGE on
 * overflow.
 */
static int parse_digits(const char *s, uint64_t *val, const char **end)
{
	unsigned long long v;
	char *e;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &e, 10);
	if (errno == ERANGE)
		return -ERANGE;
	*val = v;
	*end = e;
	return 0;
}

/**
 * tool_parse_uint() - parse a decimal number within limits
 * @s: the text, digits only
 * @min: smallest accepted value
 * @max: largest accepted value
 * @out: filled on success
 *
 * Return: 0, -EINVAL for text that is not a number, -ERANGE outside
 * @min..@max.
 */
int tool_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	const char *end;
	uint64_t v;
	int ret;

	ret = parse_digits(s, &v, &end);
	if (ret)
		return ret;
	if (*end)
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/**
 * tool_busy_poll_ok() - check --busy-poll-adaptive against --busy-poll
 * @busy_poll_us: the --busy-poll value, 0 when not given
 * @adaptive: --busy-poll-adaptive was given
 *
 * Return: false, with the error reported, when the window adapts but has
 * no longest value.
 */
bool tool_busy_poll_ok(uint32_t busy_poll_us, bool adaptive)
{
	if (adaptive && !busy_poll_us) {
		tool_err(
			"--busy-poll-adaptive needs --busy-poll US, the longest window");
		return false;
	}
	return true;
}

/**
 * tool_parse_size() - parse a byte count with an optional binary suffix
 * @s: the text: digits and an optional suffix, powers of 1024 as fio
 *     takes them: k, K, KiB or KB (1024), m, M, MiB or MB (1024^2), g, G,
 *     GiB or GB (1024^3)
 * @min: smallest accepted value
 * @max: largest accepted value
 * @out: filled on success
 *
 * Return: 0, -EINVAL for malformed text, -ERANGE outside @min..@max.
 */
int tool_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned int shift = 0;
	const char *end;
	uint64_t v;
	int ret;

	ret = parse_digits(s, &v, &end);
	if (ret)
		return ret;
	switch (*end) {
	case '\0':
		break;
	case 'k':
	case 'K':
		shift = 10;
		break;
	case 'm':
	case 'M':
		shift = 20;
		break;
	case 'g':
	case 'G':
		shift = 30;
		break;
	default:
		return -EINVAL;
	}
	if (*end && end[1] && strcmp(end + 1, "iB") && strcmp(end + 1, "B"))
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	v <<= shift;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/**
 * tool_parse_seconds() - parse a positive duration
 * @s: decimal text with an optional unit: "10", "0.5", "10s", "500ms",
 *     "1m", "2h" (no unit: seconds, as fio's --runtime)
 * @out: filled with seconds on success
 *
 * Return: 0, or -EINVAL for malformed text or a duration not in
 * (0, 1e6] seconds.
 */
int tool_parse_seconds(const char *s, double *out)
{
	static const struct {
		const char *unit;
		double scale;
	} units[] = {
		{ "", 1 },   { "s", 1 },    { "ms", 1e-3 },
		{ "m", 60 }, { "h", 3600 },
	};
	char *end;
	double v;
	size_t i;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || !isfinite(v))
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(units); i++)
		if (!strcmp(end, units[i].unit))
			break;
	if (i == ARRAY_SIZE(units))
		return -EINVAL;
	v *= units[i].scale;
	if (v <= 0 || v > 1e6)
		return -EINVAL;
	*out = v;
	return 0;
}

/**
 * tool_now_ns() - CLOCK_MONOTONIC in nanoseconds
 *
 * Return: the time.
 */
uint64_t tool_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/**
 * tool_online_cpus() - the online CPUs, for a thread per core
 * @max: at most this many
 *
 * Return: 1 to @max.
 */
uint32_t tool_online_cpus(uint32_t max)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (cpus < 1)
		cpus = 1;
	return (uint64_t)cpus < max ? (uint32_t)cpus : max;
}

/**
 * tool_xprt_hint() - what to add to an open's error on the ofi backend
 * @backend: --transport's value, or NULL (IBTRS_BACKEND counts then)
 * @err: the open's errno
 *
 * The library says why no libfabric provider fits (ENODEV) only in its
 * log: the hint tells where to look.
 *
 * Return: a text starting with a space, or "".
 */
const char *tool_xprt_hint(const char *backend, int err)
{
	if (!backend || !*backend)
		backend = getenv("IBTRS_BACKEND");
	if (err != ENODEV || !backend || strcmp(backend, "ofi"))
		return "";
	return getenv("IBTRS_OFI_PROVIDER")
		       ? " (libfabric offers no provider IBTRS_OFI_PROVIDER names that fits: IBTRS_LOG_LEVEL=err says what it lacks)"
		       : " (no libfabric provider here fits: IBTRS_LOG_LEVEL=err says what each lacks)";
}

/**
 * tool_cpu_us() - CPU time of this process so far (getrusage)
 * @user_us: time in user mode, microseconds
 * @sys_us: time in the kernel, microseconds
 *
 * Return: 0, or -errno (both times are then 0).
 */
int tool_cpu_us(uint64_t *user_us, uint64_t *sys_us)
{
	struct rusage ru;

	*user_us = *sys_us = 0;
	if (getrusage(RUSAGE_SELF, &ru))
		return -errno;
	*user_us = (uint64_t)ru.ru_utime.tv_sec * 1000000u +
		   (uint64_t)ru.ru_utime.tv_usec;
	*sys_us = (uint64_t)ru.ru_stime.tv_sec * 1000000u +
		  (uint64_t)ru.ru_stime.tv_usec;
	return 0;
}

/**
 * tool_random64() - a random 64-bit value
 *
 * From getrandom(); should that fail, from the clocks and the process id.
 *
 * Return: the value.
 */
uint64_t tool_random64(void)
{
	struct timespec ts;
	uint64_t v;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v))
		return v;
	clock_gettime(CLOCK_REALTIME, &ts);
	v = tool_now_ns() ^ ((uint64_t)ts.tv_nsec << 32) ^
	    ((uint64_t)getpid() << 16);
	/* The splitmix64 finalizer. */
	v ^= v >> 30;
	v *= 0xbf58476d1ce4e5b9ull;
	v ^= v >> 27;
	v *= 0x94d049bb133111ebull;
	return v ^ (v >> 31);
}

/**
 * tool_signals_init() - block SIGINT and SIGTERM, ignore SIGPIPE
 *
 * Called before any library thread exists, so that every thread inherits
 * the mask and the signals are only taken by tool_signal_wait().
 */
void tool_signals_init(void)
{
	sigset_t set;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/**
 * tool_signal_wait() - wait for SIGINT or SIGTERM
 * @timeout_ms: longest wait in milliseconds, negative for no limit
 * @from: filled with the sending process (0 if unknown), or NULL
 *
 * Return: the signal number, or 0 when the time ran out.
 */
int tool_signal_wait(int timeout_ms, pid_t *from)
{
	struct timespec ts;
	siginfo_t si;
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	memset(&si, 0, sizeof(si));
	for (;;) {
		if (timeout_ms < 0) {
			sig = sigwaitinfo(&set, &si);
		} else {
			ts.tv_sec = timeout_ms / 1000;
			ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000L;
			sig = sigtimedwait(&set, &si, &ts);
		}
		if (sig > 0) {
			if (from)
				*from = si.si_code == SI_USER ? si.si_pid : 0;
			return sig;
		}
		/* EINTR: some other signal; the remaining time is lost. */
		if (errno != EINTR)
			return 0;
	}
}
