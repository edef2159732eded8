// SPDX-License-Identifier: MIT
/*
 * rejoin.c - a reconnect that replaces the last path of its session, on
 * a server of two loops (common.c) with no grace: the old session ends
 * under the reconnect, on its own loop, and the connection, already
 * handed over to that loop, goes back to the listener's loop for a new
 * session (srv.c, srv_rejoin()). The client must get a new incarnation
 * and a working session; the old one must end (one DISCONNECTED each).
 * Each round starts with the good session alone, on the listener's loop,
 * so that the attacker's session goes to the second loop (the status
 * walk, srv_ctl_walk(), tells each session's loop): its replacing
 * connection is handed over there and comes back. Six rounds; the good
 * session goes on meanwhile.
 */
#include "srv.h"

#include "hostile.h"

#define ROUNDS 6

/* Loops of the sessions named "atk-rejoin", and of the good session. */
struct loops_view {
	unsigned int atk_mask;
	unsigned int nr_atk;
	int good_loop;
};

static void view_sess(void *arg, const struct srv_ctl_sess *s)
{
	struct loops_view *v = arg;

	CHECK(s->loop < 2);
	if (!strcmp(s->sessname, "good")) {
		v->good_loop = (int)s->loop;
	} else if (!strcmp(s->sessname, "atk-rejoin")) {
		v->atk_mask |= 1u << s->loop;
		v->nr_atk++;
	}
}

static void view_nop(void *arg, const struct srv_ctl_path *p)
{
	(void)arg, (void)p;
}

static void view_end(void *arg)
{
	(void)arg;
}

static void loops_view(struct loops_view *v)
{
	struct srv_ctl_walker w = {
		.sess = view_sess,
		.path = view_nop,
		.sess_end = view_end,
		.arg = v,
	};

	memset(v, 0, sizeof(*v));
	v->good_loop = -1;
	srv_ctl_walk(srv.ctx, &w);
}

/* Until the server holds the good session alone, at most 10 s. */
static void wait_good_alone(void)
{
	struct ibtrs_srv_stats st = { .size = sizeof(st) };
	double deadline = t_now() + 10.0;

	do {
		CHECK_EQ(ibtrs_srv_get_stats(srv.ctx, &st), 0);
		if (st.sessions == 1)
			return;
		usleep(1000);
	} while (t_now() < deadline);
	CHECK_EQ(st.sessions, 1);
}

static void case_replace_last_path(void)
{
	struct loops_view v;
	unsigned int r;

	for (r = 0; r < ROUNDS; r++) {
		int conn = atomic_load(&srv.atk_conn);
		uint64_t inc;
		struct atk a;
		int fd;

		wait_good_alone();
		atk_open(&a, "atk-rejoin", 1, true);
		atk_ping(&a, 0, 0);
		loops_view(&v);
		CHECK_EQ(v.good_loop, 0);
		CHECK_EQ(v.nr_atk, 1);
		CHECK_EQ(v.atk_mask, 1u << 1);
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
		/* The new session alone: the old one is gone. */
		loops_view(&v);
		CHECK_EQ(v.nr_atk, 1);
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
