// SPDX-License-Identifier: MIT
/*
 * rejoin.c - a reconnect that replaces the last path of its session, on
 * a server of two loops (common.c) with no grace: the old session ends
 * under the reconnect, on its own loop, and the connection, already
 * handed over to that loop, goes back to the listener's loop for a new
 * session (srv.c, srv_rejoin()). The client must get a new incarnation
 * and a working session; the old one must end (one DISCONNECTED each).
 * Several rounds, so that sessions land on both loops; the good session
 * goes on meanwhile.
 */
#include "hostile.h"

#define ROUNDS 6

static void case_replace_last_path(void)
{
	unsigned int r;

	for (r = 0; r < ROUNDS; r++) {
		int conn = atomic_load(&srv.atk_conn);
		uint64_t inc;
		struct atk a;
		int fd;

		atk_open(&a, "atk-rejoin", 1, true);
		atk_ping(&a, 0, 0);
		inc = a.incarnation;
		/* The same path again, its old connection still up. */
		fd = atk_con(&a, 0, 1, true);
		CHECK(fd >= 0);
		CHECK(a.incarnation != inc);
		close(a.fd[0]);
		a.fd[0] = fd;
		atk_send_info(&a, 0, "atk-rejoin");
		atk_recv_info(&a, 0);
		atk_ping(&a, 0, 1);
		CHECK_EQ(atomic_load(&srv.atk_conn), conn + 2);
		atk_close(&a);
	}
}

static const struct hcase cases[] = {
	{ "replace-last-path", case_replace_last_path },
};

int main(void)
{
	hostile_setup();
	hostile_run(cases, sizeof(cases) / sizeof(cases[0]));
	return hostile_finish("hostile/rejoin");
}
