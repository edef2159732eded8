/* SPDX-License-Identifier: MIT */
/*
 * loop_xprt.h - fault knobs of the "loop" backend, an in-process test
 * double of the transport ops table (no sockets: both ends of every
 * connection live in this process).
 *
 * A knob names an address: it applies to every connection whose client
 * dialled that address, and to every connection of a listener bound to
 * it. A listener on a wildcard address (0.0.0.0, ::) takes connections
 * to any address of its port, so that one server context can be reached
 * over several fake paths (127.0.0.1, 127.0.0.2, ...) whose faults are
 * set one by one.
 */
#ifndef IBTRS_LOOP_XPRT_H
#define IBTRS_LOOP_XPRT_H

#include <stdbool.h>
#include <sys/socket.h>

/**
 * loop_xprt_set_delay() - hold every frame of some connections
 * @dst_listen_addr: the address the connections were dialled to, or the
 *                   bound address of their listener
 * @delay_us: one-way delay in microseconds, 0 to clear
 *
 * Every frame towards or from those connections is delivered once
 * ibtrs_now_ns() (the injectable clock) has passed its post time plus the
 * delay; frames of one connection stay in order. Signalled send
 * completions follow the delivery. Applies to existing and future
 * connections, and to frames already queued.
 */
void loop_xprt_set_delay(const struct sockaddr *dst_listen_addr,
			 unsigned int delay_us);

/**
 * loop_xprt_set_drop() - pull or plug the cable of some connections
 * @addr: as for loop_xprt_set_delay()
 * @drop: true to discard everything, both directions
 *
 * Frames are discarded silently at delivery; their signalled send
 * completions never come (until the connection is flushed). A connection
 * closed at one end is not reported to the other while dropping; a connect
 * to a dropped address times out. Clearing the drop lets an end whose peer
 * went away in the meantime see a reset.
 */
void loop_xprt_set_drop(const struct sockaddr *addr, bool drop);

/**
 * loop_xprt_break() - reset some connections now
 * @addr: as for loop_xprt_set_delay()
 *
 * Both ends of every matching connection fail with -ECONNRESET, each on
 * its loop thread.
 */
void loop_xprt_break(const struct sockaddr *addr);

#endif /* IBTRS_LOOP_XPRT_H */
