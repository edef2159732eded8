// SPDX-License-Identifier: MIT
/*
 * prom.c - "ibtrs status --format prometheus": the answers of the control
 * sockets in the Prometheus text exposition format, one metric family per
 * entry of a table.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctlclient.h"
#include "hist.h"
#include "status.h"
#include "tool.h"

/* What a metric is about, i.e. which objects give its samples. */
enum st_scope {
	SC_SESSION,  /* client sessions */
	SC_PATH,     /* paths of client sessions */
	SC_SERVER,   /* server contexts */
	SC_SRV_PATH, /* paths of the sessions of server contexts */
};

/* How the value(s) of a sample are found. */
enum st_kind {
	MK_U64,	  /* the integer member @key */
	MK_US,	  /* the member @key, microseconds, as seconds */
	MK_DIR,	  /* "rd_"@key and "wr_"@key, label dir="read"|"write" */
	MK_STATE, /* one sample per path state, 1 for the current */
	MK_LAT,	  /* lat_us.p50/p99/p999, label quantile */
	MK_HIST,  /* lat_hist as _bucket{le} and _count */
	MK_INFO,  /* 1, with policy and backend labels */
};

/**
 * struct st_metric - a metric family
 * @name: its name
 * @type: "counter", "gauge" or "histogram"
 * @help: the HELP text
 * @scope: which objects it describes
 * @kind: how the values are found
 * @key: the member holding the value
 */
struct st_metric {
	const char *name;
	const char *type;
	const char *help;
	enum st_scope scope;
	enum st_kind kind;
	const char *key;
};

static const struct st_metric st_metrics[] = {
	{ "ibtrs_session_info", "gauge",
	  "Client session, with its multipath policy and backend (always 1).",
	  SC_SESSION, MK_INFO, NULL },
	{ "ibtrs_session_queue_depth", "gauge",
	  "Requests a client session may have in flight.", SC_SESSION, MK_U64,
	  "queue_depth" },
	{ "ibtrs_path_state", "gauge",
	  "State of a client path: 1 for the current state, 0 for the others.",
	  SC_PATH, MK_STATE, "state" },
	{ "ibtrs_path_ops_total", "counter",
	  "Requests completed on a client path, by direction.", SC_PATH, MK_DIR,
	  "ops" },
	{ "ibtrs_path_bytes_total", "counter",
	  "Data bytes of the requests completed on a client path, by direction.",
	  SC_PATH, MK_DIR, "bytes" },
	{ "ibtrs_path_inflight", "gauge",
	  "Requests in flight on a client path.", SC_PATH, MK_U64, "inflight" },
	{ "ibtrs_path_errors_total", "counter",
	  "Requests completed with an error on a client path.", SC_PATH, MK_U64,
	  "errors" },
	{ "ibtrs_path_proto_errors_total", "counter",
	  "Malformed messages received on a client path.", SC_PATH, MK_U64,
	  "proto_errors" },
	{ "ibtrs_path_failovers_total", "counter",
	  "Requests moved from a failed client path to another.", SC_PATH,
	  MK_U64, "failovers" },
	{ "ibtrs_path_reconnect_attempts_total", "counter",
	  "Reconnect attempts of a client path.", SC_PATH, MK_U64,
	  "reconnect_attempts" },
	{ "ibtrs_path_reconnects_total", "counter",
	  "Successful reconnects of a client path.", SC_PATH, MK_U64,
	  "reconnects" },
	{ "ibtrs_path_hb_rtt_seconds", "gauge",
	  "Last heartbeat round trip of a client path (0: none yet).", SC_PATH,
	  MK_US, "hb_rtt_us" },
	{ "ibtrs_path_latency_seconds", "gauge",
	  "Request latency quantiles of a client path (0: no requests).",
	  SC_PATH, MK_LAT, "lat_us" },
	/* The quantiles of a time range: histogram_quantile() of rate(). */
	{ "ibtrs_path_request_duration_seconds", "histogram",
	  "Request latencies of a client path, since the start or the last reset (no _sum: the library keeps none).",
	  SC_PATH, MK_HIST, "lat_hist" },
	{ "ibtrs_server_requests_total", "counter",
	  "Requests given to the request callback of a server context.",
	  SC_SERVER, MK_U64, "requests" },
	{ "ibtrs_server_replays_total", "counter",
	  "Requests sent again after a failover, answered without running again.",
	  SC_SERVER, MK_U64, "replays" },
	{ "ibtrs_server_stale_total", "counter",
	  "Late copies of requests from a dead path, dropped unanswered.",
	  SC_SERVER, MK_U64, "stale" },
	{ "ibtrs_server_busy_total", "counter",
	  "Requests refused because their tag was still busy.", SC_SERVER,
	  MK_U64, "busy" },
	{ "ibtrs_server_proto_errors_total", "counter",
	  "Connections of a server context closed for a malformed message.",
	  SC_SERVER, MK_U64, "proto_errors" },
	{ "ibtrs_server_path_ops_total", "counter",
	  "Requests run for a path of a server session, by direction.",
	  SC_SRV_PATH, MK_DIR, "ops" },
	{ "ibtrs_server_path_bytes_total", "counter",
	  "Data bytes of the requests of a path of a server session, by direction.",
	  SC_SRV_PATH, MK_DIR, "bytes" },
};

/**
 * struct st_labels - label text being built
 * @buf: the labels, name="value" separated by commas
 * @len: length of @buf
 */
struct st_labels {
	char buf[2048];
	size_t len;
};

/* Append name="value", the value escaped (backslash, quote, newline). */
static void st_label(struct st_labels *l, const char *name, const char *val)
{
	char tmp[sizeof(l->buf)];
	size_t n = 0;

	for (; *val && n + 3 < sizeof(tmp); val++) {
		if (*val == '\\' || *val == '"') {
			tmp[n++] = '\\';
			tmp[n++] = *val;
		} else if (*val == '\n') {
			tmp[n++] = '\\';
			tmp[n++] = 'n';
		} else {
			tmp[n++] = *val;
		}
	}
	tmp[n] = '\0';
	n = (size_t)snprintf(l->buf + l->len, sizeof(l->buf) - l->len,
			     "%s%s=\"%s\"", l->len ? "," : "", name, tmp);
	l->len += n;
	if (l->len >= sizeof(l->buf))
		l->len = sizeof(l->buf) - 1;
}

static void st_label_u64(struct st_labels *l, const char *name, uint64_t v)
{
	char tmp[24];

	snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)v);
	st_label(l, name, tmp);
}

/**
 * struct st_emit - state of one family being printed
 * @f: output stream
 * @m: the family
 * @started: its HELP and TYPE lines were printed
 */
struct st_emit {
	FILE *f;
	const struct st_metric *m;
	bool started;
};

/* One sample: name[suffix]{labels[,extra]} value. */
static void st_sample_sfx(struct st_emit *e, const struct st_labels *l,
			  const char *suffix, const char *extra,
			  const char *value)
{
	if (!e->started) {
		fprintf(e->f, "# HELP %s %s\n# TYPE %s %s\n", e->m->name,
			e->m->help, e->m->name, e->m->type);
		e->started = true;
	}
	fprintf(e->f, "%s%s{%s%s%s} %s\n", e->m->name, suffix, l->buf,
		extra && l->len ? "," : "", extra ? extra : "", value);
}

static void st_sample(struct st_emit *e, const struct st_labels *l,
		      const char *extra, const char *value)
{
	st_sample_sfx(e, l, "", extra, value);
}

/* Powers of two of nanoseconds the histogram has as its buckets' le. */
#define ST_HIST_LE_MIN 10 /* 1.024 us */
#define ST_HIST_LE_MAX 41 /* 36.6 min, the library's last bucket */

/*
 * A path's histogram with a bucket per power of two of nanoseconds: the
 * library's buckets split every power of two in 2^bits, so these bounds
 * are bounds of its buckets. Counted below each bound.
 */
static void st_emit_hist(struct st_emit *e, const struct st_labels *l,
			 const struct jval *obj)
{
	uint64_t counts[IBTRS_HIST_BUCKETS], below = 0, total = 0;
	unsigned int k, i = 0, end;
	char le[48], v[24];

	if (!st_hist_counts(obj, counts))
		return;
	for (k = ST_HIST_LE_MIN; k <= ST_HIST_LE_MAX; k++) {
		/* Bucket (k - 2) << bits starts at 2^k ns (hist.h). */
		end = (k - 2) << IBTRS_HIST_BITS;
		for (; i < end && i < IBTRS_HIST_BUCKETS; i++)
			below += counts[i];
		snprintf(le, sizeof(le), "le=\"%.9g\"",
			 (double)(1ull << k) / 1e9);
		snprintf(v, sizeof(v), "%llu", (unsigned long long)below);
		st_sample_sfx(e, l, "_bucket", le, v);
	}
	for (i = 0; i < IBTRS_HIST_BUCKETS; i++)
		total += counts[i];
	snprintf(v, sizeof(v), "%llu", (unsigned long long)total);
	st_sample_sfx(e, l, "_bucket", "le=\"+Inf\"", v);
	st_sample_sfx(e, l, "_count", NULL, v);
}

static void st_sample_u64(struct st_emit *e, const struct st_labels *l,
			  const char *extra, uint64_t v)
{
	char tmp[24];

	snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)v);
	st_sample(e, l, extra, tmp);
}

static void st_sample_us(struct st_emit *e, const struct st_labels *l,
			 const char *extra, uint64_t us)
{
	char tmp[32];

	snprintf(tmp, sizeof(tmp), "%.6f", (double)us / 1e6);
	st_sample(e, l, extra, tmp);
}

/* The samples of one object (a session, a path, ...) for one family. */
static void st_emit_obj(struct st_emit *e, const struct st_labels *l,
			const struct jval *obj)
{
	static const char *const states[] = { "connecting",   "connected",
					      "reconnecting", "closing",
					      "closed",	      "dead" };
	const struct st_metric *m = e->m;
	struct st_labels info;
	char key[64], extra[64];
	const struct jval *lat;
	const char *state;
	size_t i;

	switch (m->kind) {
	case MK_U64:
		st_sample_u64(e, l, NULL, jget_u64(obj, m->key, 0));
		break;
	case MK_US:
		st_sample_us(e, l, NULL, jget_u64(obj, m->key, 0));
		break;
	case MK_DIR:
		snprintf(key, sizeof(key), "rd_%s", m->key);
		st_sample_u64(e, l, "dir=\"read\"", jget_u64(obj, key, 0));
		snprintf(key, sizeof(key), "wr_%s", m->key);
		st_sample_u64(e, l, "dir=\"write\"", jget_u64(obj, key, 0));
		break;
	case MK_STATE:
		state = jget_str(obj, m->key, "unknown");
		for (i = 0; i < ARRAY_SIZE(states); i++) {
			snprintf(extra, sizeof(extra), "state=\"%s\"",
				 states[i]);
			st_sample(e, l, extra,
				  strcmp(state, states[i]) ? "0" : "1");
		}
		break;
	case MK_LAT:
		lat = jget(obj, m->key);
		st_sample_us(e, l, "quantile=\"0.5\"", jget_u64(lat, "p50", 0));
		st_sample_us(e, l, "quantile=\"0.99\"",
			     jget_u64(lat, "p99", 0));
		st_sample_us(e, l, "quantile=\"0.999\"",
			     jget_u64(lat, "p999", 0));
		break;
	case MK_HIST:
		st_emit_hist(e, l, obj);
		break;
	case MK_INFO:
		info = *l;
		st_label(&info, "policy", jget_str(obj, "policy", ""));
		st_label(&info, "backend", jget_str(obj, "backend", ""));
		st_sample(e, &info, NULL, "1");
		break;
	}
}

/* The samples of one process for one family. */
static void st_emit_proc(struct st_emit *e, const struct st_proc *p)
{
	const struct jval *list;
	struct st_labels base = { .len = 0 }, l1, l2;
	size_t i, k, q;
	bool client;

	st_label_u64(&base, "pid", (uint64_t)p->pid);
	client = e->m->scope == SC_SESSION || e->m->scope == SC_PATH;
	list = jget(p->doc, client ? "clients" : "servers");
	if (!list || list->type != JT_ARR)
		return;
	for (i = 0; i < list->n; i++) {
		const struct jval *o = &list->items[i];
		const struct jval *subs;

		l1 = base;
		if (client)
			st_label(&l1, "session", jget_str(o, "sessname", ""));
		else
			st_label_u64(&l1, "port", jget_u64(o, "port", 0));
		if (e->m->scope == SC_SESSION || e->m->scope == SC_SERVER) {
			st_emit_obj(e, &l1, o);
			continue;
		}
		if (client) {
			subs = jget(o, "paths");
			for (k = 0; subs && subs->type == JT_ARR && k < subs->n;
			     k++) {
				const struct jval *pa = &subs->items[k];

				l2 = l1;
				st_label_u64(&l2, "path",
					     jget_u64(pa, "idx", k));
				st_label(&l2, "src", jget_str(pa, "src", ""));
				st_label(&l2, "dst", jget_str(pa, "dst", ""));
				st_emit_obj(e, &l2, pa);
			}
			continue;
		}
		subs = jget(o, "sessions");
		for (k = 0; subs && subs->type == JT_ARR && k < subs->n; k++) {
			const struct jval *se = &subs->items[k];
			const struct jval *paths = jget(se, "paths");

			for (q = 0;
			     paths && paths->type == JT_ARR && q < paths->n;
			     q++) {
				l2 = l1;
				st_label(&l2, "session",
					 jget_str(se, "sessname", ""));
				st_label(&l2, "peer",
					 jget_str(&paths->items[q], "peer",
						  ""));
				st_emit_obj(e, &l2, &paths->items[q]);
			}
		}
	}
}

void st_print_prom(FILE *f, const struct st_set *set)
{
	size_t i, k;

	for (i = 0; i < ARRAY_SIZE(st_metrics); i++) {
		struct st_emit e = { .f = f, .m = &st_metrics[i] };

		for (k = 0; k < set->n; k++)
			st_emit_proc(&e, &set->procs[k]);
	}
}
