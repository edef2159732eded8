// SPDX-License-Identifier: MIT
/*
 * srv_ctl.c - the server context on the control socket (ctl.c): its
 * settings, counters, loop and sessions with their paths. It answers no
 * command. Runs on the control thread under its lock, so the context is
 * not closed meanwhile; the sessions are read on the context's loop
 * thread (srv_ctl_walk()).
 */
#include <stdio.h>

#include "json.h"
#include "srv.h"
#include "util.h"

static void walk_sess(void *arg, const struct srv_ctl_sess *s)
{
	struct json *j = arg;
	char uuid[37], inc[17];

	ibtrs_uuid_str(s->uuid, uuid);
	json_obj_begin(j, NULL);
	json_str(j, "sessname", s->sessname);
	json_str(j, "uuid", uuid);
	snprintf(inc, sizeof(inc), "%016llx",
		 (unsigned long long)s->incarnation);
	json_str(j, "incarnation", inc);
	json_u64(j, "loop", s->loop);
	json_u64(j, "proto_errors",
		 s->proto_xprt + s->proto_msg + s->gen_rejected);
	json_u64(j, "proto_xprt", s->proto_xprt);
	json_u64(j, "proto_msg", s->proto_msg);
	json_u64(j, "gen_rejected", s->gen_rejected);
	if (s->graced)
		json_u64(j, "grace_ms_left", s->grace_ms_left);
	json_arr_begin(j, "paths");
}

static void walk_path(void *arg, const struct srv_ctl_path *p)
{
	struct json *j = arg;

	json_obj_begin(j, NULL);
	json_str(j, "peer", p->peer);
	json_str(j, "state", p->connected ? "connected" : "connecting");
	json_u64(j, "cons", p->nr_cons);
	json_u64(j, "rd_ops", p->rd_ops);
	json_u64(j, "rd_bytes", p->rd_bytes);
	json_u64(j, "wr_ops", p->wr_ops);
	json_u64(j, "wr_bytes", p->wr_bytes);
	json_u64(j, "proto_errors",
		 p->proto_xprt + p->proto_msg + p->gen_rejected);
	json_u64(j, "proto_xprt", p->proto_xprt);
	json_u64(j, "proto_msg", p->proto_msg);
	json_u64(j, "gen_rejected", p->gen_rejected);
	json_obj_end(j);
}

static void walk_sess_end(void *arg)
{
	struct json *j = arg;

	json_arr_end(j);
	json_obj_end(j);
}

static void srv_ctl_status(void *obj, struct json *j)
{
	struct ibtrs_srv_ctx *ctx = obj;
	struct ibtrs_srv_stats st = { .size = sizeof(st) };
	const struct srv_ctl_walker w = {
		.sess = walk_sess,
		.path = walk_path,
		.sess_end = walk_sess_end,
		.arg = j,
	};
	struct srv_ctl_info info;

	srv_ctl_info(ctx, &info);
	ibtrs_srv_get_stats(ctx, &st);
	json_obj_begin(j, NULL);
	json_u64(j, "port", info.port);
	json_str(j, "backend", info.backend);
	json_u64(j, "queue_depth", info.queue_depth);
	json_u64(j, "max_io_size", info.max_io_size);
	json_u64(j, "max_sessions", info.max_sessions);
	json_u64(j, "max_memory", info.max_memory);
	json_u64(j, "loops", info.nr_loops);
	json_u64(j, "memory", info.mem_used);
	json_u64(j, "requests", st.requests);
	json_u64(j, "replays", st.replays);
	json_u64(j, "busy", st.busy);
	json_u64(j, "proto_errors", st.proto_errors);
	json_u64(j, "stale", st.stale);
	json_u64(j, "proto_xprt", st.proto_xprt);
	json_u64(j, "proto_msg", st.proto_msg);
	json_u64(j, "gen_rejected", st.gen_rejected);
	json_u64(j, "refused_full", st.refused_full);
	json_u64(j, "auth_failed", st.auth_failed);
	json_u64(j, "refused_limit", st.refused_limit);
	ibtrs_loop_status(info.loop, j);
	json_arr_begin(j, "sessions");
	srv_ctl_walk(ctx, &w);
	json_arr_end(j);
	json_obj_end(j);
}

const struct ctl_ops srv_ctl_ops = {
	.section = CTL_SECTION_SERVERS,
	.status = srv_ctl_status,
};
