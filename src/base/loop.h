/* SPDX-License-Identifier: MIT */
/*
 * loop.h - the event loop a session or server context runs its connections
 * on: one thread, epoll, deferred work and a periodic tick.
 */
#ifndef IBTRS_LOOP_H
#define IBTRS_LOOP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct ibtrs_loop;
struct json;

/**
 * struct ibtrs_loop_src - a file descriptor watched by the loop
 * @fd: the descriptor
 * @cb: called on the loop thread with the epoll events
 */
struct ibtrs_loop_src {
	int fd;
	void (*cb)(struct ibtrs_loop_src *src, uint32_t events);
};

/**
 * struct ibtrs_work - a function to run on the loop thread
 *
 * Embedded in the object it works on; queueing never allocates. A work item
 * already queued is not queued twice.
 */
struct ibtrs_work {
	void (*fn)(struct ibtrs_work *w);
	struct ibtrs_work *next;
	bool queued;
};

/*
 * @tick is called on the loop thread every @tick_ms milliseconds (0: never),
 * as a tick of ibtrs_loop_tick_add() that lives as long as the loop.
 */
int ibtrs_loop_create(struct ibtrs_loop **loop, const char *name,
		      void (*tick)(void *arg), void *arg, unsigned int tick_ms);
/* Stops the thread (after running queued work) and frees the loop. */
void ibtrs_loop_destroy(struct ibtrs_loop *loop);

/*
 * A periodic callback: @fn(@arg) runs on the loop thread every @ms
 * milliseconds, on its own timer, and ibtrs_loop_tick_late_ns() tells it
 * its own lateness. A loop carries any number of them (the sessions of a
 * shared loop each keep their own). Any thread; *@tick is the handle for
 * ibtrs_loop_tick_del(), stored before the tick can first run (NULL on
 * failure).
 */
struct ibtrs_loop_tick;
int ibtrs_loop_tick_add(struct ibtrs_loop *loop, void (*fn)(void *arg),
			void *arg, unsigned int ms,
			struct ibtrs_loop_tick **tick);
/*
 * Remove @tick (NULL: nothing): once it returns its callback is not
 * running and never runs again. Waits for the loop thread unless called on
 * it; there it may be called from any callback, its own included.
 */
void ibtrs_loop_tick_del(struct ibtrs_loop_tick *tick);

/*
 * A process-wide pool of loops that owners share (the client sessions
 * that ask for it): up to IBTRS_LOOP_POOL_MAX loops, each made on first
 * use and destroyed when its last user puts it, named "<name>/<slot>".
 * Define one with IBTRS_LOOP_POOL_INIT(name).
 */
#define IBTRS_LOOP_POOL_MAX 64

struct ibtrs_loop_pool {
	pthread_mutex_t lock;
	const char *name;
	struct {
		struct ibtrs_loop *loop;
		unsigned int users;
	} slot[IBTRS_LOOP_POOL_MAX]; /* under @lock */
};

#define IBTRS_LOOP_POOL_INIT(n)                              \
	{                                                    \
		.lock = PTHREAD_MUTEX_INITIALIZER, .name = n \
	}

/*
 * Take one of the first @nr (1..IBTRS_LOOP_POOL_MAX) loops of @pool: the
 * one with the fewest users, made if it does not exist. 0 and *@loop set,
 * -EINVAL, -EDEADLK on the thread of one of the pool's loops (a user there
 * could be given that loop and wait for it), or the error of
 * ibtrs_loop_create().
 */
int ibtrs_loop_pool_get(struct ibtrs_loop_pool *pool, unsigned int nr,
			struct ibtrs_loop **loop);
/*
 * Give back a loop of ibtrs_loop_pool_get(): the last user's put destroys
 * it (ibtrs_loop_destroy()), so not from that loop's own thread, and only
 * once nothing of the user is left on the loop (its sources deleted, its
 * ticks removed).
 */
void ibtrs_loop_pool_put(struct ibtrs_loop_pool *pool, struct ibtrs_loop *loop);
/* Users of @loop in @pool, or with @loop NULL the loops that exist. */
unsigned int ibtrs_loop_pool_users(struct ibtrs_loop_pool *pool,
				   const struct ibtrs_loop *loop);

int ibtrs_loop_add(struct ibtrs_loop *loop, struct ibtrs_loop_src *src,
		   uint32_t events);
int ibtrs_loop_mod(struct ibtrs_loop *loop, struct ibtrs_loop_src *src,
		   uint32_t events);
void ibtrs_loop_del(struct ibtrs_loop *loop, struct ibtrs_loop_src *src);

/* Queue @w to run on the loop thread; safe from any thread. */
void ibtrs_loop_queue(struct ibtrs_loop *loop, struct ibtrs_work *w);

/*
 * Busy polling: after an event the loop thread polls without sleeping for
 * @us microseconds (0: never) before it waits in the kernel again; with
 * @adaptive, for a window of at most @us that grows while events come
 * close together and closes while they come far apart (loop.c).
 */
void ibtrs_loop_set_busy_poll(struct ibtrs_loop *loop, uint32_t us,
			      bool adaptive);

/* The adaptive window as the loop thread last set it, nanoseconds. */
uint64_t ibtrs_loop_poll_window_ns(struct ibtrs_loop *loop);

/*
 * Add the loop's busy polling to @j as object "poll": busy_poll_us,
 * adaptive, window_us (the adaptive window now), empty_polls and kicks.
 */
void ibtrs_loop_status(struct ibtrs_loop *loop, struct json *j);

/*
 * Tick lateness: how much longer than its period the gap before the tick
 * now running on this thread was (the loop thread did not run: preempted,
 * stopped, busy in a long batch), 0 if it came on time, and always 0 while a
 * test clock is injected (ibtrs_set_test_clock()): the test decides what time
 * passed. From the tick: it needs no loop pointer, which the tick may run
 * before its creator has stored.
 */
uint64_t ibtrs_loop_tick_late_ns(void);

/*
 * The sum of every tick's lateness since the loop's creation, and in
 * *@ticks (if not NULL) how many ticks came late; any thread.
 */
uint64_t ibtrs_loop_late_ns(struct ibtrs_loop *loop, uint64_t *ticks);

/* Polls of a busy-polling loop that found nothing, since its creation. */
uint64_t ibtrs_loop_empty_polls(struct ibtrs_loop *loop);

/*
 * Times the loop was woken from a sleep by a system call (work queued, or
 * the stop), since its creation. Work queued while the loop is running or
 * polling costs none: it runs before the loop sleeps again.
 */
uint64_t ibtrs_loop_kicks(struct ibtrs_loop *loop);

/*
 * Take @w off the queue if it is queued. It may be running already unless
 * called on the loop thread.
 */
void ibtrs_loop_cancel(struct ibtrs_loop *loop, struct ibtrs_work *w);

/* True when called on the loop's thread. */
bool ibtrs_loop_on_thread(const struct ibtrs_loop *loop);

/*
 * Run @fn(@arg) on the loop thread and wait for it to return; runs it
 * directly when already on the loop thread.
 */
void ibtrs_loop_call(struct ibtrs_loop *loop, void (*fn)(void *arg), void *arg);

/* Monotonic clock in nanoseconds (a test may inject its own). */
uint64_t ibtrs_now_ns(void);
/* The real monotonic clock, for bounded waits that sleep in real time. */
uint64_t ibtrs_real_now_ns(void);
/*
 * ibtrs_now_ns() as read when the loop thread last woke up with events or
 * took a work item: one clock read per batch instead of one per request.
 * Behind the clock by at most the time the batch has run so far. On any
 * other thread than the loop's it reads the clock.
 */
uint64_t ibtrs_loop_now_ns(const struct ibtrs_loop *loop);

/* The same for a caller known to run on the loop thread: no check. */
uint64_t ibtrs_loop_batch_ns(const struct ibtrs_loop *loop);

/*
 * Tests only: make ibtrs_now_ns() return @clock_fn() (NULL: the real
 * clock again), so that heartbeat timeouts, RTTs and deadlines follow a
 * clock the test moves. The loop's periodic tick still fires in real
 * time; with an injected clock it only looks at the injected time.
 */
void ibtrs_set_test_clock(uint64_t (*clock_fn)(void));

/*
 * Tests only: @fn runs on a loop thread that ran out of work and is about
 * to sleep, before it looks at its queue a last time (NULL: none).
 */
void ibtrs_set_test_sleep_hook(void (*fn)(struct ibtrs_loop *loop));

/*
 * Tests only: the calling thread becomes @loop's thread, and the loop's
 * own thread ends: from then on @loop's work and events run only when
 * this thread calls ibtrs_loop_test_run(), and ibtrs_loop_call() from it
 * runs the function directly. For a harness that drives a server and its
 * peer on one thread, without a thread hand-off per message (the fuzz
 * targets). Not undone; ibtrs_loop_destroy() works from this thread.
 */
void ibtrs_loop_test_adopt(struct ibtrs_loop *loop);

/*
 * Tests only, on the thread that adopted @loop: run the work queued and
 * the events ready, waiting up to @timeout_ms for events (0: not at all)
 * if there was no work; work queued by another thread meanwhile wakes it.
 * Return: true if anything ran.
 */
bool ibtrs_loop_test_run(struct ibtrs_loop *loop, int timeout_ms);

#endif /* IBTRS_LOOP_H */
