// SPDX-License-Identifier: MIT
/*
 * clt_ctl.c - the client session on the control socket (ctl.c): its
 * status (paths, counters, latency, recent events) and the commands it
 * answers, each a call of the public API:
 *   policy SESS rr|min-inflight|min-latency   ibtrs_clt_set_policy()
 *   path add SESS ADDR                        ibtrs_clt_add_path()
 *   path remove|reconnect|disconnect SESS IDX ibtrs_clt_*_path()
 *   fault SESS IDX none|drop|delay|close [ARG] ibtrs_clt_inject_fault()
 *   stats reset [SESS]                        ibtrs_clt_reset_stats()
 * Every function here runs on the control thread under its lock, so the
 * session is not closed meanwhile.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "clt_int.h"

/* Longest delay of "fault ... delay MS", milliseconds. */
#define CLT_CTL_MAX_FAULT_ARG 600000

static const char *clt_ctl_name(void *obj)
{
	struct ibtrs_clt *sess = obj;

	return sess->sessname;
}

static int parse_idx(const char *s, unsigned int *idx)
{
	unsigned long v;
	int ret = ctl_parse_uint(s, IBTRS_MAX_PATHS, &v);

	if (!ret)
		*idx = (unsigned int)v;
	return ret;
}

/* stats reset [SESS] */
static int cmd_stats_reset(void *obj, unsigned int argc, char **argv)
{
	(void)argc;
	(void)argv;
	ibtrs_clt_reset_stats(obj);
	return 0;
}

/* policy SESS NAME: the short names, or the long ones status shows */
static int cmd_policy(void *obj, unsigned int argc, char **argv)
{
	static const char *const names[] = { "rr", "min-inflight",
					     "min-latency" };
	unsigned int i;

	(void)argc;
	for (i = 0; i < ARRAY_SIZE(names); i++)
		if (!strcmp(argv[2], names[i]) ||
		    !strcmp(argv[2], ibtrs_mp_policy_str((int)i)))
			return ibtrs_clt_set_policy(obj, (int)i);
	return -EINVAL;
}

/* fault SESS IDX TYPE [ARG] */
static int cmd_fault(void *obj, unsigned int argc, char **argv)
{
	static const char *const faults[] = {
		[IBTRS_FAULT_NONE] = "none",
		[IBTRS_FAULT_DROP] = "drop",
		[IBTRS_FAULT_DELAY] = "delay",
		[IBTRS_FAULT_CLOSE] = "close",
	};
	unsigned long arg = 0;
	unsigned int idx, type;

	if (parse_idx(argv[2], &idx) ||
	    ctl_parse_word(argv[3], faults, ARRAY_SIZE(faults), &type) ||
	    (argc == 5 &&
	     ctl_parse_uint(argv[4], CLT_CTL_MAX_FAULT_ARG + 1, &arg)))
		return -EINVAL;
	return ibtrs_clt_inject_fault(obj, idx, (enum ibtrs_fault_type)type,
				      (unsigned int)arg);
}

/* path add SESS ADDR: ADDR as ibtrs_addr_to_sockaddr() reads it */
static int cmd_path_add(void *obj, unsigned int argc, char **argv)
{
	struct ibtrs_clt *sess = obj;
	struct sockaddr_storage src, dst;
	struct ibtrs_addr a = { .src = &src, .dst = &dst };
	int ret;

	(void)argc;
	ret = ibtrs_addr_to_sockaddr(argv[3], strlen(argv[3]), sess->port, &a);
	if (ret)
		return ret;
	return ibtrs_clt_add_path(sess, &a);
}

/* path remove|reconnect|disconnect SESS IDX */
static int cmd_path_idx(void *obj, unsigned int argc, char **argv)
{
	unsigned int idx;

	(void)argc;
	if (parse_idx(argv[3], &idx))
		return -EINVAL;
	if (!strcmp(argv[1], "remove"))
		return ibtrs_clt_remove_path(obj, idx);
	if (!strcmp(argv[1], "reconnect"))
		return ibtrs_clt_reconnect_path(obj, idx);
	return ibtrs_clt_disconnect_path(obj, idx);
}

static const struct ctl_cmd clt_ctl_cmds[] = {
	{ "stats", "reset", "stats", 2, 3, 2, true, cmd_stats_reset },
	{ "policy", NULL, "policy", 3, 3, 1, false, cmd_policy },
	{ "fault", NULL, "fault", 4, 5, 1, false, cmd_fault },
	{ "path", "add", "add", 4, 4, 2, false, cmd_path_add },
	{ "path", "remove", "remove", 4, 4, 2, false, cmd_path_idx },
	{ "path", "reconnect", "reconnect", 4, 4, 2, false, cmd_path_idx },
	{ "path", "disconnect", "disconnect", 4, 4, 2, false, cmd_path_idx },
	{ .word = NULL },
};

struct path_sec {
	struct ibtrs_clt *sess;
	unsigned int idx;
	char str[64];
};

/*
 * Loop thread: what protects the bytes of a connected path (its first
 * connection speaks for all: one session has one TLS setting), "" when
 * it is not connected. Connections change only on the loop thread.
 */
static void path_sec_fn(void *arg)
{
	struct path_sec *a = arg;
	struct clt_path *path = clt_path_get(a->sess, a->idx);

	a->str[0] = '\0';
	if (path && atomic_load(&path->state) == IBTRS_PATH_CONNECTED &&
	    path->cons[0].xcon)
		a->sess->ops->sec_str(path->cons[0].xcon, a->str,
				      sizeof(a->str));
}

/*
 * The path's latency histogram as it stands, the buckets that are not
 * empty as [index, count] pairs: a reader that keeps two of them has the
 * latencies of the time between (the percentiles are since the start).
 * Bucket i holds the nanoseconds from hist_bucket_low(i, bits) up to the
 * next bucket's low end.
 */
static void status_hist(struct clt_path *path, struct json *j)
{
	unsigned int i;

	json_obj_begin(j, "lat_hist");
	json_u64(j, "bits", IBTRS_HIST_BITS);
	json_arr_begin(j, "ns");
	for (i = 0; i < IBTRS_HIST_BUCKETS; i++) {
		uint64_t v = atomic_load_explicit(&path->hist.b[i],
						  memory_order_relaxed);

		if (!v)
			continue;
		json_arr_begin(j, NULL);
		json_u64(j, NULL, i);
		json_u64(j, NULL, v);
		json_arr_end(j);
	}
	json_arr_end(j);
	json_obj_end(j);
}

static void status_path(struct ibtrs_clt *sess, unsigned int idx,
			struct json *j)
{
	struct clt_path *path = clt_path_get(sess, idx);

	struct ibtrs_path_stats st = { .size = sizeof(st) };
	struct path_sec sec = { .sess = sess, .idx = idx };

	if (ibtrs_clt_path_stats(sess, idx, &st))
		return;
	ibtrs_loop_call(sess->loop, path_sec_fn, &sec);
	json_obj_begin(j, NULL);
	json_u64(j, "idx", idx);
	json_str(j, "state", ibtrs_path_state_str(st.state));
	json_str(j, "src", st.src);
	json_str(j, "dst", st.dst);
	json_str(j, "tls", sec.str);
	json_u64(j, "inflight", st.inflight);
	json_u64(j, "rd_ops", st.rd_ops);
	json_u64(j, "rd_bytes", st.rd_bytes);
	json_u64(j, "wr_ops", st.wr_ops);
	json_u64(j, "wr_bytes", st.wr_bytes);
	json_u64(j, "errors", st.errors);
	json_u64(j, "proto_errors", st.proto_errors);
	json_u64(j, "proto_xprt", st.proto_xprt);
	json_u64(j, "failovers", st.failovers);
	json_u64(j, "reconnect_attempts", st.reconnect_attempts);
	json_u64(j, "reconnects", st.reconnects);
	json_u64(j, "hb_rtt_us", st.hb_rtt_us);
	json_bool(j, "demoted", st.demoted);
	json_str(j, "demote_reason", st.demote_reason);
	json_u64(j, "demotions", st.demotions);
	json_u64(j, "readmissions", st.readmissions);
	json_obj_begin(j, "lat_us");
	json_u64(j, "p50", st.lat_p50_us);
	json_u64(j, "p99", st.lat_p99_us);
	json_u64(j, "p999", st.lat_p999_us);
	json_u64(j, "max", st.lat_max_us);
	json_obj_end(j);
	if (path)
		status_hist(path, j);
	json_obj_end(j);
}

static void clt_ctl_status(void *obj, struct json *j)
{
	struct ibtrs_clt *sess = obj;
	struct ibtrs_clt_stats cs = { .size = sizeof(cs) };
	struct ibtrs_event ev[16];
	unsigned int i, n = atomic_load(&sess->path_cnt);
	char uuid[37], inc[17], reason[sizeof(sess->loss_reason)];
	size_t k, nev;

	ibtrs_uuid_str(sess->uuid, uuid);
	json_obj_begin(j, NULL);
	json_str(j, "sessname", sess->sessname);
	json_str(j, "uuid", uuid);
	json_str(j, "backend", sess->ops->name);
	json_str(j, "policy", ibtrs_mp_policy_str(atomic_load(&sess->policy)));
	json_u64(j, "queue_depth", sess->queue_depth);
	json_u64(j, "max_io_size", sess->max_io_size);
	ibtrs_clt_get_stats(sess, &cs);
	snprintf(inc, sizeof(inc), "%016llx",
		 (unsigned long long)cs.incarnation);
	json_str(j, "incarnation", cs.incarnation ? inc : "");
	json_u64(j, "session_losses", cs.session_losses);
	json_u64(j, "unknown_outcome", cs.unknown_outcome);
	json_u64(j, "replayed_after_loss", cs.replayed_after_loss);
	json_bool(j, "replay_on_session_loss", sess->replay_on_loss);
	pthread_mutex_lock(&sess->ev_lock);
	memcpy(reason, sess->loss_reason, sizeof(reason));
	pthread_mutex_unlock(&sess->ev_lock);
	json_str(j, "last_session_loss", reason);
	json_u64(j, "proto_errors", cs.proto_errors);
	json_u64(j, "proto_xprt", cs.proto_xprt);
	ibtrs_loop_status(sess->loop, j);
	json_arr_begin(j, "paths");
	for (i = 0; i < n; i++)
		status_path(sess, i, j);
	json_arr_end(j);
	nev = ibtrs_clt_get_events(sess, ev, ARRAY_SIZE(ev));
	json_arr_begin(j, "events");
	for (k = 0; k < nev; k++) {
		json_obj_begin(j, NULL);
		json_f64(j, "ts", (double)ev[k].ts_ns / 1e9);
		json_i64(j, "path", ev[k].path);
		json_str(j, "msg", ev[k].msg);
		json_obj_end(j);
	}
	json_arr_end(j);
	json_obj_end(j);
}

const struct ctl_ops clt_ctl_ops = {
	.section = CTL_SECTION_CLIENTS,
	.ident = clt_ctl_name,
	.status = clt_ctl_status,
	.cmds = clt_ctl_cmds,
};
