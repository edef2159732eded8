// SPDX-License-Identifier: MIT
/*
 * clt_events.c - a client session's event log: the last
 * IBTRS_EVENT_LOG_LEN state changes and verdicts of its paths, kept for
 * ibtrs_clt_get_events() and the control socket, and logged. The lowest
 * of the client's files: every other one reports here.
 */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "clt_int.h"
#include "log.h"

void clt_event(struct ibtrs_clt *sess, int path, const char *fmt, ...)
{
	struct ibtrs_event *ev;
	struct timespec ts;
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &ts);
	pthread_mutex_lock(&sess->ev_lock);
	ev = &sess->events[(sess->ev_head + sess->ev_cnt) % IBTRS_EVENT_LOG_LEN];
	if (sess->ev_cnt == IBTRS_EVENT_LOG_LEN)
		sess->ev_head = (sess->ev_head + 1) % IBTRS_EVENT_LOG_LEN;
	else
		sess->ev_cnt++;
	ev->ts_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	ev->path = path;
	va_start(ap, fmt);
	vsnprintf(ev->msg, sizeof(ev->msg), fmt, ap);
	va_end(ap);
	if (path >= 0)
		ibtrs_log(IBTRS_LOG_INFO, "session %s: path %d: %s",
			  sess->sessname, path, ev->msg);
	else
		ibtrs_log(IBTRS_LOG_INFO, "session %s: %s", sess->sessname,
			  ev->msg);
	pthread_mutex_unlock(&sess->ev_lock);
}

size_t ibtrs_clt_get_events(struct ibtrs_clt *sess, struct ibtrs_event *ev,
			    size_t max)
{
	size_t i, n;

	if (!sess || !ev)
		return 0;
	pthread_mutex_lock(&sess->ev_lock);
	n = sess->ev_cnt < max ? sess->ev_cnt : max;
	/* The newest @n, oldest first. */
	for (i = 0; i < n; i++)
		ev[i] = sess->events[(sess->ev_head + sess->ev_cnt - n + i) %
				     IBTRS_EVENT_LOG_LEN];
	pthread_mutex_unlock(&sess->ev_lock);
	return n;
}
