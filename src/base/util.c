// SPDX-License-Identifier: MIT
/*
 * util.c - UUIDs, option structs and a wait for a descriptor.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "loop.h"
#include "util.h"

void ibtrs_uuid_gen(uint8_t uuid[IBTRS_UUID_BYTES])
{
	size_t got = 0;

	while (got < IBTRS_UUID_BYTES) {
		ssize_t n = getrandom(uuid + got, IBTRS_UUID_BYTES - got, 0);

		if (n > 0)
			got += (size_t)n;
	}
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x40);
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80);
}

void ibtrs_uuid_str(const uint8_t u[IBTRS_UUID_BYTES], char *buf)
{
	snprintf(
		buf, 37,
		"%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		u[10], u[11], u[12], u[13], u[14], u[15]);
}

const char *ibtrs_path_state_str(enum ibtrs_path_state state)
{
	switch (state) {
	case IBTRS_PATH_CONNECTING:
		return "connecting";
	case IBTRS_PATH_CONNECTED:
		return "connected";
	case IBTRS_PATH_RECONNECTING:
		return "reconnecting";
	case IBTRS_PATH_CLOSING:
		return "closing";
	case IBTRS_PATH_CLOSED:
		return "closed";
	case IBTRS_PATH_DEAD:
		return "dead";
	}
	return "unknown";
}

void ibtrs_opts_fill(void *opts, size_t size, const void *defaults,
		     size_t dsize)
{
	if (!opts || size < sizeof(size_t))
		return;
	if (size > dsize) {
		memset(opts, 0, size);
		size = dsize;
	}
	memcpy(opts, defaults, size);
	*(size_t *)opts = size;
}

int ibtrs_wait_fd(int fd, short events, uint64_t deadline_ns)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		uint64_t now = ibtrs_now_ns();
		int r;

		if (now >= deadline_ns)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int)((deadline_ns - now) / 1000000 + 1));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r)
			return 0;
	}
}

void ibtrs_deadline_in(struct timespec *ts, unsigned int ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}
