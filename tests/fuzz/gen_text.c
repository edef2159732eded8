// SPDX-License-Identifier: MIT
/*
 * gen_text.c - seeds of fuzz_ctl: one request line of each kind the
 * control socket knows (ctl.c), for the fake sessions "sess-a" and "b".
 */
#include <string.h>

#include "gen.h"

/**
 * gen_ctl() - write the seeds of fuzz_ctl
 */
void gen_ctl(void)
{
	static const char *const lines[] = {
		"status\n",
		"policy sess-a min-latency\n",
		"policy b rr\n",
		"path add sess-a 127.0.0.1:4000\n",
		"path remove b 0\n",
		"path reconnect sess-a 1\n",
		"path disconnect sess-a 15\n",
		"fault sess-a 1 delay 100\n",
		"fault b 0 drop\n",
		"stats reset\n",
		"stats reset b\n",
	};
	char name[16];
	unsigned int i;

	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		memcpy(name, "line-", 5);
		name[5] = (char)('a' + i);
		name[6] = '\0';
		gen_write("ctl", name, lines[i], strlen(lines[i]));
	}
}
