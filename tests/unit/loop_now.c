// SPDX-License-Identifier: MIT
/*
 * loop_now.c - the loop's batch time, ibtrs_loop_now_ns().
 *
 * On the loop thread it is the clock as read when the loop woke up for the
 * current batch of events, or took the current work item: it stays put
 * while the clock moves during the batch, and the next batch or work item
 * sees the new time. On any other thread it is the clock itself.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "loop.h"
#include "test.h"

static _Atomic uint64_t fake_ns = 1000000;
static struct ibtrs_loop *loop;

static uint64_t fake_clock(void)
{
	return atomic_load(&fake_ns);
}

/* What callback number i saw: the batch time before and after the clock
 * moved, and the clock after it moved. */
struct seen {
	uint64_t before, after, clock;
};
static struct seen seen[8];
static atomic_uint calls;
static atomic_bool queue_work;
static struct ibtrs_work work;

static void observe(void)
{
	struct seen *s = &seen[atomic_load(&calls) % 8];

	s->before = ibtrs_loop_now_ns(loop);
	atomic_fetch_add(&fake_ns, 500); /* time passes inside the batch */
	s->after = ibtrs_loop_now_ns(loop);
	s->clock = ibtrs_now_ns();
	atomic_fetch_add(&calls, 1); /* publishes *s */
}

static void ev_cb(struct ibtrs_loop_src *src, uint32_t ev)
{
	uint64_t v;

	(void)ev;
	if (read(src->fd, &v, sizeof(v)) != sizeof(v))
		return;
	observe();
	/* Queued on the loop thread: it runs with no wake-up in between. */
	if (atomic_load(&queue_work))
		ibtrs_loop_queue(loop, &work);
}

static void work_fn(struct ibtrs_work *w)
{
	(void)w;
	observe();
}

static void wait_calls(unsigned int n)
{
	double deadline = t_now() + 5.0;

	while (atomic_load(&calls) < n && t_now() < deadline)
		usleep(1000);
	CHECK(atomic_load(&calls) >= n);
}

int main(void)
{
	struct ibtrs_loop_src src = { .cb = ev_cb };
	uint64_t one = 1, t;

	t_watchdog(60);
	work.fn = work_fn;
	ibtrs_set_test_clock(fake_clock);
	src.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	CHECK(src.fd >= 0);
	CHECK_EQ(ibtrs_loop_create(&loop, "t-now", NULL, NULL, 0), 0);
	CHECK_EQ(ibtrs_loop_add(loop, &src, EPOLLIN), 0);

	/* Off the loop thread: the clock. */
	CHECK_EQ(ibtrs_loop_now_ns(loop), atomic_load(&fake_ns));
	atomic_fetch_add(&fake_ns, 7);
	CHECK_EQ(ibtrs_loop_now_ns(loop), atomic_load(&fake_ns));

	/* An event: the batch time is the clock at the wake-up, and it does
	 * not follow the clock until the next batch. */
	atomic_store(&fake_ns, 2000000);
	CHECK_EQ(write(src.fd, &one, sizeof(one)), sizeof(one));
	wait_calls(1);
	CHECK_EQ(seen[0].before, 2000000);
	CHECK_EQ(seen[0].after, 2000000);
	CHECK_EQ(seen[0].clock, 2000500);

	/* The next event, after the clock moved on while the loop slept. */
	atomic_store(&fake_ns, 3000000);
	CHECK_EQ(write(src.fd, &one, sizeof(one)), sizeof(one));
	wait_calls(2);
	CHECK_EQ(seen[1].before, 3000000);
	CHECK_EQ(seen[1].after, 3000000);

	/* A work item that the event's callback queues after the clock moved:
	 * its own time, not the time of the event's batch. */
	atomic_store(&fake_ns, 4000000);
	atomic_store(&queue_work, true);
	CHECK_EQ(write(src.fd, &one, sizeof(one)), sizeof(one));
	wait_calls(4);
	CHECK_EQ(atomic_load(&calls), 4);
	CHECK_EQ(seen[2].before, 4000000);
	t = seen[2].clock;
	CHECK_EQ(t, 4000500);
	printf("event batch at 4000000, work item at %llu\n",
	       (unsigned long long)seen[3].before);
	CHECK_EQ(seen[3].before, t);
	CHECK_EQ(seen[3].after, t);

	ibtrs_loop_del(loop, &src);
	ibtrs_loop_destroy(loop);
	ibtrs_set_test_clock(NULL);
	close(src.fd);
	printf("loop_now: ok\n");
	return 0;
}
