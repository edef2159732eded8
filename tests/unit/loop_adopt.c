// SPDX-License-Identifier: MIT
/*
 * loop_adopt.c - a loop taken over by a test's thread (the fuzz targets'
 * harness): its own thread ends, nothing runs but what the adopting
 * thread runs with ibtrs_loop_test_run(), ibtrs_loop_call() from it runs
 * at once, its events are seen, and work queued by another thread wakes a
 * waiting ibtrs_loop_test_run().
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

static atomic_uint ran;
static pthread_t ran_on;
static struct ibtrs_loop *loop;
static struct ibtrs_work w_count;

static void count_fn(struct ibtrs_work *w)
{
	(void)w;
	ran_on = pthread_self();
	atomic_fetch_add(&ran, 1);
}

static void call_fn(void *arg)
{
	*(pthread_t *)arg = pthread_self();
}

static void ev_cb(struct ibtrs_loop_src *src, uint32_t events)
{
	uint64_t v;

	(void)events;
	CHECK(read(src->fd, &v, sizeof(v)) == sizeof(v));
	ran_on = pthread_self();
	atomic_fetch_add(&ran, 1);
}

/* Another thread queues work, before or while the main one waits. */
static void *queue_other(void *arg)
{
	(void)arg;
	ibtrs_loop_queue(loop, &w_count);
	return NULL;
}

int main(void)
{
	struct ibtrs_loop_src src = { .cb = ev_cb };
	uint64_t one = 1;
	pthread_t who = 0, th;
	double t0;

	w_count.fn = count_fn;
	CHECK_EQ(ibtrs_loop_create(&loop, "adopt", NULL, NULL, 0), 0);
	ibtrs_loop_test_adopt(loop);
	CHECK(ibtrs_loop_on_thread(loop));

	/* Queued work waits for the adopting thread: no other runs it. */
	ibtrs_loop_queue(loop, &w_count);
	CHECK_EQ(atomic_load(&ran), 0);
	CHECK(ibtrs_loop_test_run(loop, 0));
	CHECK_EQ(atomic_load(&ran), 1);
	CHECK(pthread_equal(ran_on, pthread_self()));
	CHECK(!ibtrs_loop_test_run(loop, 0));

	/* A call runs at once, here. */
	ibtrs_loop_call(loop, call_fn, &who);
	CHECK(pthread_equal(who, pthread_self()));

	/* Events of its sources. */
	src.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	CHECK(src.fd >= 0);
	CHECK_EQ(ibtrs_loop_add(loop, &src, EPOLLIN), 0);
	CHECK(write(src.fd, &one, sizeof(one)) == sizeof(one));
	CHECK(ibtrs_loop_test_run(loop, 0));
	CHECK_EQ(atomic_load(&ran), 2);
	ibtrs_loop_del(loop, &src);
	close(src.fd);

	/* Work from another thread wakes a wait long before its end. */
	t0 = t_now();
	CHECK_EQ(pthread_create(&th, NULL, queue_other, NULL), 0);
	while (atomic_load(&ran) < 3 && t_now() - t0 < 10.0)
		ibtrs_loop_test_run(loop, 10000);
	CHECK_EQ(atomic_load(&ran), 3);
	CHECK(t_now() - t0 < 5.0);
	pthread_join(th, NULL);

	ibtrs_loop_destroy(loop);
	printf("loop_adopt: ok\n");
	return 0;
}
