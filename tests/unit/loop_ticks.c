// SPDX-License-Identifier: MIT
/*
 * loop_ticks.c - a loop carrying several ticks, and the shared loop pool.
 *
 * Ticks of different periods on one loop each run at their own rate, on
 * the loop thread; one removed never runs again, also when it removes
 * itself from its own callback, and the others go on. The pool makes a
 * loop on first use, places a new user on the loop with the fewest users
 * of the first N, keeps a loop while one user is left and destroys it with
 * its last user; a loop made again after that is a new one.
 */
#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "loop.h"
#include "test.h"

struct tcount {
	struct ibtrs_loop *loop;
	struct ibtrs_loop_tick *tick;
	/* the handle for removing itself, once the adder has it */
	_Atomic(struct ibtrs_loop_tick *) self;
	atomic_uint n;
	atomic_bool off_thread; /* ran on another thread than the loop's */
	unsigned int stop_at;	/* removes itself at this count, 0: never */
};

static void count_tick(void *arg)
{
	struct tcount *c = arg;
	unsigned int n = atomic_fetch_add(&c->n, 1) + 1;

	if (!ibtrs_loop_on_thread(c->loop))
		atomic_store(&c->off_thread, true);
	if (c->stop_at && n >= c->stop_at) {
		struct ibtrs_loop_tick *t = atomic_exchange(&c->self, NULL);

		if (t)
			ibtrs_loop_tick_del(t);
	}
}

/* Until @c counted @n ticks, at most @sec seconds. */
static bool reaches(struct tcount *c, unsigned int n, double sec)
{
	double deadline = t_now() + sec;

	while (atomic_load(&c->n) < n && t_now() < deadline)
		usleep(1000);
	return atomic_load(&c->n) >= n;
}

static void test_ticks(void)
{
	struct tcount fast = { 0 }, slow = { 0 }, self = { .stop_at = 3 };
	struct ibtrs_loop_tick *t;
	struct ibtrs_loop *loop;
	unsigned int n, ns;

	CHECK_EQ(ibtrs_loop_create(&loop, "t-ticks", NULL, NULL, 0), 0);
	fast.loop = slow.loop = self.loop = loop;
	CHECK_EQ(ibtrs_loop_tick_add(loop, count_tick, &fast, 0, &t), -EINVAL);
	CHECK_EQ(ibtrs_loop_tick_add(NULL, count_tick, &fast, 5, &t), -EINVAL);
	CHECK_EQ(ibtrs_loop_tick_add(loop, count_tick, &fast, 5, &fast.tick),
		 0);
	CHECK_EQ(ibtrs_loop_tick_add(loop, count_tick, &slow, 50, &slow.tick),
		 0);
	CHECK_EQ(ibtrs_loop_tick_add(loop, count_tick, &self, 5, &self.tick),
		 0);
	atomic_store(&self.self, self.tick);
	/* Each at its own period: the 5 ms tick far more often. */
	CHECK(reaches(&slow, 3, 30));
	CHECK(reaches(&fast, 20, 30));
	printf("5 ms tick: %u, 50 ms tick: %u\n", atomic_load(&fast.n),
	       atomic_load(&slow.n));
	CHECK(atomic_load(&fast.n) > atomic_load(&slow.n));
	/* Removed from its own callback at its third run (or the first
	 * after its handle was stored): never again. */
	ns = atomic_load(&self.n);
	CHECK(ns >= 3 && !atomic_load(&self.self));

	/* Removed from another thread: when the call returns it is over. */
	ibtrs_loop_tick_del(fast.tick);
	n = atomic_load(&fast.n);
	CHECK(reaches(&slow, atomic_load(&slow.n) + 2, 30));
	CHECK_EQ(atomic_load(&fast.n), n);
	CHECK_EQ(atomic_load(&self.n), ns);
	CHECK(!atomic_load(&fast.off_thread) && !atomic_load(&slow.off_thread));
	/* The one left goes with the loop. */
	ibtrs_loop_destroy(loop);
	ibtrs_loop_tick_del(NULL);
}

struct pool_call {
	struct ibtrs_loop_pool *pool;
	struct ibtrs_loop *got;
	int ret;
};

static void pool_get_fn(void *arg)
{
	struct pool_call *c = arg;

	c->ret = ibtrs_loop_pool_get(c->pool, 2, &c->got);
}

static void test_pool(void)
{
	static struct ibtrs_loop_pool pool = IBTRS_LOOP_POOL_INIT("t-pool");
	struct ibtrs_loop *l[5], *again;
	struct tcount c = { 0 };
	unsigned int i;

	CHECK_EQ(ibtrs_loop_pool_get(&pool, 0, &l[0]), -EINVAL);
	CHECK_EQ(ibtrs_loop_pool_get(&pool, IBTRS_LOOP_POOL_MAX + 1, &l[0]),
		 -EINVAL);
	CHECK_EQ(ibtrs_loop_pool_users(&pool, NULL), 0);
	/* Five users on two loops: 3 and 2, alternating. */
	for (i = 0; i < 5; i++)
		CHECK_EQ(ibtrs_loop_pool_get(&pool, 2, &l[i]), 0);
	CHECK(l[0] != l[1]);
	CHECK(l[2] == l[0] && l[4] == l[0] && l[3] == l[1]);
	CHECK_EQ(ibtrs_loop_pool_users(&pool, NULL), 2);
	CHECK_EQ(ibtrs_loop_pool_users(&pool, l[0]), 3);
	CHECK_EQ(ibtrs_loop_pool_users(&pool, l[1]), 2);
	CHECK(t_threads_become("t-pool/0", true, 1));
	CHECK(t_threads_become("t-pool/1", true, 1));
	{
		/* From a callback on a loop of the pool: refused, whichever
		 * loop it would have been given. */
		struct pool_call pc = { .pool = &pool, .ret = 1 };

		ibtrs_loop_call(l[0], pool_get_fn, &pc);
		CHECK_EQ(pc.ret, -EDEADLK);
		pc.ret = 1;
		ibtrs_loop_call(l[1], pool_get_fn, &pc);
		CHECK_EQ(pc.ret, -EDEADLK);
		CHECK_EQ(ibtrs_loop_pool_users(&pool, NULL), 2);
	}

	/* A user's tick on a shared loop runs until that user leaves. */
	c.loop = l[1];
	CHECK_EQ(ibtrs_loop_tick_add(l[1], count_tick, &c, 5, &c.tick), 0);
	CHECK(reaches(&c, 2, 30));
	ibtrs_loop_tick_del(c.tick);

	/* The least loaded takes the next user: loop 1 after two puts. */
	ibtrs_loop_pool_put(&pool, l[1]);
	ibtrs_loop_pool_put(&pool, l[3]);
	CHECK_EQ(ibtrs_loop_pool_users(&pool, NULL), 1);
	CHECK(t_threads_become("t-pool/1", true, 0));
	CHECK_EQ(ibtrs_loop_pool_get(&pool, 2, &l[1]), 0);
	CHECK(l[1] != l[0]);
	CHECK(t_threads_become("t-pool/1", true, 1));
	/* With N = 1 the first loop only, however loaded. */
	CHECK_EQ(ibtrs_loop_pool_get(&pool, 1, &l[3]), 0);
	CHECK(l[3] == l[0]);
	CHECK_EQ(ibtrs_loop_pool_users(&pool, l[0]), 4);

	/* Still in use: a put of one user leaves the loop running. */
	ibtrs_loop_pool_put(&pool, l[0]);
	ibtrs_loop_pool_put(&pool, l[2]);
	ibtrs_loop_pool_put(&pool, l[3]);
	CHECK(t_threads_become("t-pool/0", true, 1));
	c.loop = l[4];
	atomic_store(&c.n, 0);
	CHECK_EQ(ibtrs_loop_tick_add(l[4], count_tick, &c, 5, &c.tick), 0);
	CHECK(reaches(&c, 2, 30));
	ibtrs_loop_tick_del(c.tick);
	ibtrs_loop_pool_put(&pool, l[4]);
	ibtrs_loop_pool_put(&pool, l[1]);
	CHECK_EQ(ibtrs_loop_pool_users(&pool, NULL), 0);
	CHECK(t_threads_become("t-pool/0", true, 0));
	CHECK(t_threads_become("t-pool/1", true, 0));

	/* Made again on the next use. */
	CHECK_EQ(ibtrs_loop_pool_get(&pool, 2, &again), 0);
	CHECK_EQ(ibtrs_loop_pool_users(&pool, NULL), 1);
	ibtrs_loop_pool_put(&pool, again);
	CHECK_EQ(ibtrs_loop_pool_users(&pool, NULL), 0);
}

int main(void)
{
	t_watchdog(120);
	test_ticks();
	test_pool();
	return 0;
}
