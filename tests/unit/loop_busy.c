// SPDX-License-Identifier: MIT
/*
 * loop_busy.c - busy polling of the event loop.
 *
 * With busy polling set, the loop thread keeps polling without sleeping
 * for the given time after an event (its empty polls count up), then
 * sleeps again (they stop counting); without it, it never polls empty.
 * A changed setting takes effect after the next event. Adaptive busy
 * polling opens its window while events come close together and closes
 * it while they come far apart.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "loop.h"
#include "test.h"

static atomic_uint events;

static void ev_cb(struct ibtrs_loop_src *src, uint32_t ev)
{
	uint64_t v;

	(void)ev;
	if (read(src->fd, &v, sizeof(v)) == sizeof(v))
		atomic_fetch_add(&events, 1);
}

/* Make the source readable and wait until the loop thread handled it. */
static void fire(struct ibtrs_loop_src *src)
{
	unsigned int before = atomic_load(&events);
	uint64_t one = 1;
	double deadline = t_now() + 5.0;

	CHECK_EQ(write(src->fd, &one, sizeof(one)), sizeof(one));
	while (atomic_load(&events) == before && t_now() < deadline)
		usleep(1000);
	CHECK(atomic_load(&events) != before);
}

/*
 * Empty polls in the @ms after @src fires (NULL: none fires). Counted from
 * before the event, not after it was handled: the loop thread polls on at
 * once, in the same time slice, and a busy machine may run something else
 * on its CPU for all of a short window that a count begun later would
 * cover.
 */
static uint64_t polls_during(struct ibtrs_loop *loop,
			     struct ibtrs_loop_src *src, unsigned int ms)
{
	uint64_t before = ibtrs_loop_empty_polls(loop);

	if (src)
		fire(src);
	usleep(ms * 1000u);
	return ibtrs_loop_empty_polls(loop) - before;
}

/*
 * Adaptive, at most 20 ms: events about 1 ms apart open the window until
 * it covers their gap, and the loop polls between them; events 50 ms apart
 * close it, and the loop sleeps right after each. The same events with the
 * fixed 20 ms window keep it polling after each.
 */
static void check_adaptive(struct ibtrs_loop *loop, struct ibtrs_loop_src *src)
{
	uint64_t win, n;
	unsigned int i;

	ibtrs_loop_set_busy_poll(loop, 20000, true);
	CHECK_EQ(ibtrs_loop_poll_window_ns(loop), 0);
	for (i = 0; i < 39; i++) {
		fire(src);
		usleep(500);
	}
	/*
	 * On a busy machine a gap may exceed the 20 ms bound now and then
	 * and shrink the window, and the loop thread may lose its CPU for
	 * all of the 2 ms after an event: go on with events 1 ms apart, at
	 * most 2000 more, until the window is open and the loop was seen
	 * polling in it. A loop that never polls fails all the same.
	 */
	for (n = 0, win = 0; i < 2039; i++) {
		n = polls_during(loop, src, 2);
		win = ibtrs_loop_poll_window_ns(loop);
		CHECK(win <= 20000000);
		if (win >= 500000 && n > 0)
			break;
	}
	printf("adaptive, events 1 ms apart: window %llu us after %u of them, %llu empty polls in the 2 ms after one\n",
	       (unsigned long long)win / 1000, i + 1, (unsigned long long)n);
	CHECK(win >= 500000 && win <= 20000000);
	CHECK(n > 0);

	/* A quarter less per event: from the gap above to 0 in 30 at most. */
	for (i = 0; i < 40 && ibtrs_loop_poll_window_ns(loop); i++) {
		fire(src);
		usleep(50000);
	}
	win = ibtrs_loop_poll_window_ns(loop);
	fire(src);
	usleep(1000);
	n = polls_during(loop, NULL, 50);
	printf("adaptive, events 50 ms apart: window %llu us after %u of them, %llu empty polls in 50 ms after one\n",
	       (unsigned long long)win / 1000, i, (unsigned long long)n);
	CHECK_EQ(win, 0);
	CHECK_EQ(n, 0);

	/* Fixed window: the loop polls after such an event all the same
	 * (seen in one of at most 100 events: the loop thread may lose its
	 * CPU for all of a window on a busy machine). */
	ibtrs_loop_set_busy_poll(loop, 20000, false);
	for (i = 0, n = 0; i < 100 && !n; i++)
		n = polls_during(loop, src, 10);
	printf("fixed 20 ms: %llu empty polls in the 10 ms after an event\n",
	       (unsigned long long)n);
	CHECK(n > 0);
	ibtrs_loop_set_busy_poll(loop, 0, false);
	fire(src);
}

int main(void)
{
	struct ibtrs_loop_src src = { .cb = ev_cb };
	struct ibtrs_loop *loop;
	unsigned int i;
	uint64_t n;

	alarm(60);
	src.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	CHECK(src.fd >= 0);
	CHECK_EQ(ibtrs_loop_create(&loop, "t-busy", NULL, NULL, 0), 0);
	CHECK_EQ(ibtrs_loop_add(loop, &src, EPOLLIN), 0);

	/* No busy polling: the loop sleeps right after the event. */
	fire(&src);
	n = polls_during(loop, NULL, 100);
	printf("busy poll off: %llu empty polls in 100 ms\n",
	       (unsigned long long)n);
	CHECK_EQ(n, 0);

	/* 300 ms of busy polling: it spins after the event... */
	ibtrs_loop_set_busy_poll(loop, 300000, false);
	fire(&src);
	n = polls_during(loop, NULL, 100);
	printf("busy poll 300 ms: %llu empty polls in the first 100 ms\n",
	       (unsigned long long)n);
	CHECK(n > 10);
	/* ...and sleeps once 300 ms passed without one: no empty poll in
	 * a 100 ms look from 400 ms on. A loop thread that lost its CPU in
	 * the middle of a poll may finish that one late: look again, ten
	 * times at most; a loop that polls on fails. */
	usleep(400000);
	for (i = 0; i < 10; i++) {
		n = polls_during(loop, NULL, 100);
		if (!n)
			break;
	}
	printf("busy poll 300 ms: %llu empty polls in a 100 ms look %u ms after the event\n",
	       (unsigned long long)n, 400 + 100 * i);
	CHECK_EQ(n, 0);

	/* Switched off again: after the next event it sleeps at once. */
	ibtrs_loop_set_busy_poll(loop, 0, false);
	fire(&src);
	usleep(20000);
	n = polls_during(loop, NULL, 100);
	printf("busy poll off again: %llu empty polls in 100 ms\n",
	       (unsigned long long)n);
	CHECK_EQ(n, 0);

	check_adaptive(loop, &src);

	ibtrs_loop_del(loop, &src);
	ibtrs_loop_destroy(loop);
	close(src.fd);
	printf("loop_busy: ok\n");
	return 0;
}
