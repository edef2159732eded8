// SPDX-License-Identifier: MIT
/*
 * loop.c - one-thread epoll loop with deferred work and a periodic tick.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "log.h"
#include "loop.h"

#define LOOP_MAX_EVENTS 64

struct ibtrs_loop {
	int epfd;
	struct ibtrs_loop_src wake;	  /* eventfd: work queued or stop */
	struct ibtrs_loop_tick *own_tick; /* the tick of ibtrs_loop_create() */
	struct ibtrs_loop_tick *ticks;	  /* under @lock: every tick */
	pthread_t thread;
	pthread_mutex_t lock;
	struct ibtrs_work *head, *tail; /* under @lock */
	bool stop;			/* under @lock */
	bool sleeping; /* under @lock: waits in epoll_wait with a timeout */
	_Atomic uint64_t late_ns; /* sum of every tick's lateness */
	_Atomic uint64_t late_ticks;
	_Atomic uint32_t busy_poll_us; /* spin this long after an event */
	_Atomic bool busy_adaptive;    /* ...at most, see loop_adapt() */
	_Atomic uint64_t empty_polls;  /* spins that found nothing */
	_Atomic uint64_t kicks;	       /* eventfd writes that woke it */
	_Atomic uint64_t poll_win_ns;  /* the adaptive window now */
	uint64_t now_ns;	       /* loop thread: ibtrs_loop_now_ns() */
	char name[16];
};

static uint64_t (*_Atomic test_clock)(void);
/* The lateness of the tick running on this thread (timer_cb()). */
static __thread uint64_t tick_late_tls;
static void (*_Atomic test_sleep_hook)(struct ibtrs_loop *loop);

void ibtrs_set_test_sleep_hook(void (*fn)(struct ibtrs_loop *loop))
{
	atomic_store(&test_sleep_hook, fn);
}

void ibtrs_set_test_clock(uint64_t (*clock_fn)(void))
{
	atomic_store(&test_clock, clock_fn);
}

uint64_t ibtrs_real_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t ibtrs_now_ns(void)
{
	uint64_t (*fn)(void) =
		atomic_load_explicit(&test_clock, memory_order_relaxed);
	struct timespec ts;

	if (fn)
		return fn();

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void loop_kick(struct ibtrs_loop *loop)
{
	uint64_t one = 1;

	atomic_fetch_add_explicit(&loop->kicks, 1, memory_order_relaxed);
	/* A full counter still wakes the loop: nothing to do on failure. */
	if (write(loop->wake.fd, &one, sizeof(one)) < 0)
		return;
}

/*
 * Runs every queued work item; returns true if the loop must stop. Sets
 * @ran if there was any.
 */
static bool loop_run_work(struct ibtrs_loop *loop, bool *ran)
{
	struct ibtrs_work *w;
	bool stop;

	*ran = false;
	for (;;) {
		pthread_mutex_lock(&loop->lock);
		w = loop->head;
		if (w) {
			loop->head = w->next;
			if (!loop->head)
				loop->tail = NULL;
			w->next = NULL;
			w->queued = false;
		}
		stop = loop->stop;
		pthread_mutex_unlock(&loop->lock);
		if (!w)
			return stop;
		if (!*ran)
			loop->now_ns = ibtrs_now_ns();
		*ran = true;
		w->fn(w);
	}
}

static void wake_cb(struct ibtrs_loop_src *src, uint32_t events)
{
	uint64_t v;

	(void)events;
	if (read(src->fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		ibtrs_log(IBTRS_LOG_ERR, "loop: eventfd read: %s",
			  strerror(errno));
}

/*
 * One periodic callback of a loop: its own timerfd, so that every owner of
 * a shared loop keeps its own period and its own lateness.
 */
struct ibtrs_loop_tick {
	struct ibtrs_loop_src src; /* the timerfd */
	struct ibtrs_loop *loop;
	void (*fn)(void *arg); /* loop thread; NULL once removed */
	void *arg;
	uint64_t every_ns; /* the period */
	uint64_t last_ns;  /* real clock at the last tick, 0: none */
	struct ibtrs_loop_tick *next, **pprev; /* under loop->lock */
	struct ibtrs_work free_work;	       /* frees it after the batch */
};

static void timer_cb(struct ibtrs_loop_src *src, uint32_t events)
{
	struct ibtrs_loop_tick *t =
		(struct ibtrs_loop_tick *)((char *)src -
					   offsetof(struct ibtrs_loop_tick,
						    src));
	struct ibtrs_loop *loop = t->loop;
	uint64_t v, now, gap, late;

	(void)events;
	/* Removed earlier in this batch: its event is stale. */
	if (!t->fn || read(src->fd, &v, sizeof(v)) != sizeof(v))
		return;
	/* How much later than its period this tick came: time in which the
	 * loop did not run (preempted, stopped, a long batch), so time that
	 * proves nothing about a peer. The real clock: it is the thread's
	 * own time, whatever a test does to ibtrs_now_ns(). */
	now = ibtrs_real_now_ns();
	gap = t->last_ns ? now - t->last_ns : 0;
	t->last_ns = now;
	/* Timer jitter is not a stall: half a period of slack. A test that
	 * moves its own clock decides what time passed: no lateness then. */
	if (atomic_load_explicit(&test_clock, memory_order_relaxed))
		gap = 0;
	late = gap > t->every_ns + t->every_ns / 2 ? gap - t->every_ns : 0;
	tick_late_tls = late;
	if (late) {
		atomic_fetch_add_explicit(&loop->late_ns, late,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&loop->late_ticks, 1,
					  memory_order_relaxed);
	}
	t->fn(t->arg);
}

/*
 * The loop is about to sleep: from here on, work queued by another thread
 * kicks it awake (ibtrs_loop_queue()). Returns false, and the loop must
 * not sleep, if work was queued since it last looked.
 */
static bool loop_sleep_begin(struct ibtrs_loop *loop)
{
	void (*hook)(struct ibtrs_loop *) =
		atomic_load_explicit(&test_sleep_hook, memory_order_relaxed);
	bool empty;

	if (hook)
		hook(loop);

	pthread_mutex_lock(&loop->lock);
	empty = !loop->head;
	loop->sleeping = empty;
	pthread_mutex_unlock(&loop->lock);
	return empty;
}

static void loop_sleep_end(struct ibtrs_loop *loop)
{
	pthread_mutex_lock(&loop->lock);
	loop->sleeping = false;
	pthread_mutex_unlock(&loop->lock);
}

/*
 * Adaptive busy polling: the window in which the loop polls after it ran
 * out of events follows the idle gaps between events, as the kernel's
 * haltpoll does for idle CPUs. An event that woke the loop from a sleep
 * within @max_ns of the end of the batch before would have been caught by
 * a longer window: the window doubles, or grows to a quarter more than
 * that gap if this is more (from LOOP_ADAPT_START_NS, up to @max_ns), so
 * that one such sleep is enough to cover gaps like it. One that came later
 * means polling would have been for nothing: the window shrinks by a
 * quarter, and below LOOP_ADAPT_START_NS it closes. A long gap now and
 * then (the thread preempted, a pause in the load) leaves it wide enough;
 * a run of them closes it in a dozen events. Under load the loop polls as
 * with a fixed window; with events far apart it soon sleeps at once and
 * spends nothing.
 */
#define LOOP_ADAPT_START_NS 10000ull

static uint64_t loop_adapt(uint64_t win_ns, uint64_t gap_ns, uint64_t max_ns)
{
	if (gap_ns <= max_ns) {
		win_ns = win_ns ? win_ns * 2 : LOOP_ADAPT_START_NS;
		if (win_ns < gap_ns + gap_ns / 4)
			win_ns = gap_ns + gap_ns / 4;
		return win_ns < max_ns ? win_ns : max_ns;
	}
	win_ns -= win_ns / 4;
	return win_ns < LOOP_ADAPT_START_NS ? 0 : win_ns;
}

/* The busy polling setting: microseconds (0: none), and whether adaptive. */
static uint32_t loop_busy_setting(struct ibtrs_loop *loop, bool *adaptive)
{
	uint32_t us =
		atomic_load_explicit(&loop->busy_poll_us, memory_order_relaxed);

	*adaptive = us && atomic_load_explicit(&loop->busy_adaptive,
					       memory_order_relaxed);
	return us;
}

static void *loop_thread(void *arg)
{
	struct ibtrs_loop *loop = arg;
	struct epoll_event ev[LOOP_MAX_EVENTS];
	uint64_t idle_ns = 0, win_ns = 0;

	pthread_setname_np(pthread_self(), loop->name);
	for (;;) {
		bool adaptive;
		uint32_t busy_us = loop_busy_setting(loop, &adaptive);
		uint64_t poll_ns = adaptive ? win_ns
					    : (uint64_t)busy_us * 1000u;
		int i, n, timeout = -1;
		bool ran;

		if (loop_run_work(loop, &ran))
			break;
		/* Work queued by other threads is activity as events are. */
		if (ran && busy_us)
			idle_ns = ibtrs_real_now_ns();
		/* Busy polling: no sleep (and no wake-up) for an event that
		 * comes within the window after the loop ran out of events;
		 * work that just ran opened it anew. */
		if (poll_ns && (ran || ibtrs_real_now_ns() - idle_ns < poll_ns))
			timeout = 0;
		if (timeout && !loop_sleep_begin(loop))
			continue;
		n = epoll_wait(loop->epfd, ev, LOOP_MAX_EVENTS, timeout);
		if (timeout)
			loop_sleep_end(loop);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ibtrs_log(IBTRS_LOG_ERR, "loop %s: epoll_wait: %s",
				  loop->name, strerror(errno));
			break;
		}
		if (!n && !timeout)
			atomic_fetch_add_explicit(&loop->empty_polls, 1,
						  memory_order_relaxed);
		if (n > 0)
			loop->now_ns = ibtrs_now_ns();
		/* A setting changed while asleep counts from this event on. */
		busy_us = loop_busy_setting(loop, &adaptive);
		/* Woken from a sleep: would a longer window have caught it? */
		if (n > 0 && adaptive && timeout) {
			win_ns = loop_adapt(win_ns,
					    ibtrs_real_now_ns() - idle_ns,
					    (uint64_t)busy_us * 1000u);
			atomic_store_explicit(&loop->poll_win_ns, win_ns,
					      memory_order_relaxed);
		}
		for (i = 0; i < n; i++) {
			struct ibtrs_loop_src *src = ev[i].data.ptr;

			src->cb(src, ev[i].events);
		}
		/* The window counts from the end of the batch: how long it
		 * took is not time the loop waited. */
		if (n > 0 && busy_us)
			idle_ns = ibtrs_real_now_ns();
	}
	return NULL;
}

/* Under loop->lock. */
static void tick_unlink(struct ibtrs_loop_tick *t)
{
	if (!t->pprev)
		return;
	*t->pprev = t->next;
	if (t->next)
		t->next->pprev = t->pprev;
	t->next = NULL;
	t->pprev = NULL;
}

static void tick_free_work(struct ibtrs_work *w)
{
	struct ibtrs_loop_tick *t =
		(struct ibtrs_loop_tick *)((char *)w -
					   offsetof(struct ibtrs_loop_tick,
						    free_work));

	close(t->src.fd);
	free(t);
}

/* The thread is gone (or never ran): the ticks left go with the loop. */
static void loop_free_ticks(struct ibtrs_loop *loop)
{
	struct ibtrs_loop_tick *t;

	while ((t = loop->ticks)) {
		tick_unlink(t);
		close(t->src.fd);
		free(t);
	}
}

int ibtrs_loop_create(struct ibtrs_loop **loopp, const char *name,
		      void (*tick)(void *arg), void *arg, unsigned int tick_ms)
{
	struct ibtrs_loop *loop;
	int ret;

	loop = calloc(1, sizeof(*loop));
	if (!loop)
		return -ENOMEM;
	snprintf(loop->name, sizeof(loop->name), "%s", name);
	pthread_mutex_init(&loop->lock, NULL);
	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (loop->epfd < 0) {
		ret = -errno;
		goto free_loop;
	}
	loop->wake.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (loop->wake.fd < 0) {
		ret = -errno;
		goto close_ep;
	}
	loop->wake.cb = wake_cb;
	ret = ibtrs_loop_add(loop, &loop->wake, EPOLLIN);
	if (ret)
		goto close_wake;
	/* Before the thread runs: the tick needs no call onto the loop. */
	if (tick && tick_ms) {
		ret = ibtrs_loop_tick_add(loop, tick, arg, tick_ms,
					  &loop->own_tick);
		if (ret)
			goto close_wake;
	}
	ret = -pthread_create(&loop->thread, NULL, loop_thread, loop);
	if (ret)
		goto free_ticks;
	*loopp = loop;
	return 0;

free_ticks:
	loop_free_ticks(loop);
close_wake:
	close(loop->wake.fd);
close_ep:
	close(loop->epfd);
free_loop:
	pthread_mutex_destroy(&loop->lock);
	free(loop);
	return ret;
}

void ibtrs_loop_destroy(struct ibtrs_loop *loop)
{
	if (!loop)
		return;
	pthread_mutex_lock(&loop->lock);
	loop->stop = true;
	pthread_mutex_unlock(&loop->lock);
	loop_kick(loop);
	pthread_join(loop->thread, NULL);
	loop_free_ticks(loop);
	close(loop->wake.fd);
	close(loop->epfd);
	pthread_mutex_destroy(&loop->lock);
	free(loop);
}

int ibtrs_loop_tick_add(struct ibtrs_loop *loop, void (*fn)(void *arg),
			void *arg, unsigned int ms,
			struct ibtrs_loop_tick **tickp)
{
	struct itimerspec its = {
		.it_interval.tv_sec = ms / 1000,
		.it_interval.tv_nsec = (long)(ms % 1000) * 1000000,
	};
	struct ibtrs_loop_tick *t;
	int ret;

	if (!loop || !fn || !ms || !tickp)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	its.it_value = its.it_interval;
	t->loop = loop;
	t->fn = fn;
	t->arg = arg;
	t->every_ns = (uint64_t)ms * 1000000;
	t->free_work.fn = tick_free_work;
	t->src.cb = timer_cb;
	t->src.fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (t->src.fd < 0) {
		ret = -errno;
		free(t);
		return ret;
	}
	/* On the list before it can fire: the destroy finds it. */
	*tickp = t;
	pthread_mutex_lock(&loop->lock);
	t->next = loop->ticks;
	if (t->next)
		t->next->pprev = &t->next;
	t->pprev = &loop->ticks;
	loop->ticks = t;
	pthread_mutex_unlock(&loop->lock);
	if (timerfd_settime(t->src.fd, 0, &its, NULL))
		ret = -errno;
	else
		ret = ibtrs_loop_add(loop, &t->src, EPOLLIN);
	if (ret) {
		pthread_mutex_lock(&loop->lock);
		tick_unlink(t);
		pthread_mutex_unlock(&loop->lock);
		close(t->src.fd);
		free(t);
		*tickp = NULL;
		return ret;
	}
	return 0;
}

/* Loop thread: the tick stops now; it is freed after the batch. */
static void tick_del_fn(void *arg)
{
	struct ibtrs_loop_tick *t = arg;
	struct ibtrs_loop *loop = t->loop;

	t->fn = NULL;
	ibtrs_loop_del(loop, &t->src);
	pthread_mutex_lock(&loop->lock);
	tick_unlink(t);
	pthread_mutex_unlock(&loop->lock);
	/* The batch being handled may still hold its event (timer_cb()
	 * skips it): the memory goes once the batch is over. */
	ibtrs_loop_queue(loop, &t->free_work);
}

void ibtrs_loop_tick_del(struct ibtrs_loop_tick *tick)
{
	if (tick)
		ibtrs_loop_call(tick->loop, tick_del_fn, tick);
}

int ibtrs_loop_add(struct ibtrs_loop *loop, struct ibtrs_loop_src *src,
		   uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = src };

	return epoll_ctl(loop->epfd, EPOLL_CTL_ADD, src->fd, &ev) ? -errno : 0;
}

int ibtrs_loop_mod(struct ibtrs_loop *loop, struct ibtrs_loop_src *src,
		   uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = src };

	return epoll_ctl(loop->epfd, EPOLL_CTL_MOD, src->fd, &ev) ? -errno : 0;
}

void ibtrs_loop_del(struct ibtrs_loop *loop, struct ibtrs_loop_src *src)
{
	epoll_ctl(loop->epfd, EPOLL_CTL_DEL, src->fd, NULL);
}

void ibtrs_loop_queue(struct ibtrs_loop *loop, struct ibtrs_work *w)
{
	bool kick = false;

	pthread_mutex_lock(&loop->lock);
	if (!w->queued) {
		w->queued = true;
		w->next = NULL;
		if (loop->tail)
			loop->tail->next = w;
		else
			loop->head = w;
		loop->tail = w;
		/*
		 * Only a sleeping loop needs the system call: one that is
		 * running or polling runs the work before it can sleep
		 * (loop_sleep_begin() looks), and so does the loop thread.
		 * The first kick of a sleep is enough.
		 */
		kick = loop->sleeping;
		loop->sleeping = false;
	}
	pthread_mutex_unlock(&loop->lock);
	if (kick)
		loop_kick(loop);
}

void ibtrs_loop_cancel(struct ibtrs_loop *loop, struct ibtrs_work *w)
{
	struct ibtrs_work **pp, *prev = NULL;

	pthread_mutex_lock(&loop->lock);
	for (pp = &loop->head; *pp; prev = *pp, pp = &(*pp)->next) {
		if (*pp != w)
			continue;
		*pp = w->next;
		if (loop->tail == w)
			loop->tail = prev;
		w->next = NULL;
		w->queued = false;
		break;
	}
	pthread_mutex_unlock(&loop->lock);
}

void ibtrs_loop_set_busy_poll(struct ibtrs_loop *loop, uint32_t us,
			      bool adaptive)
{
	atomic_store_explicit(&loop->busy_adaptive, adaptive,
			      memory_order_relaxed);
	atomic_store_explicit(&loop->busy_poll_us, us, memory_order_relaxed);
	/* A loop asleep picks the new setting up after its next event. */
}

uint64_t ibtrs_loop_poll_window_ns(struct ibtrs_loop *loop)
{
	return atomic_load_explicit(&loop->poll_win_ns, memory_order_relaxed);
}

void ibtrs_loop_status(struct ibtrs_loop *loop, struct json *j)
{
	json_obj_begin(j, "poll");
	json_u64(j, "busy_poll_us",
		 atomic_load_explicit(&loop->busy_poll_us,
				      memory_order_relaxed));
	json_bool(j, "adaptive",
		  atomic_load_explicit(&loop->busy_adaptive,
				       memory_order_relaxed));
	json_u64(j, "window_us", ibtrs_loop_poll_window_ns(loop) / 1000);
	json_u64(j, "empty_polls", ibtrs_loop_empty_polls(loop));
	json_u64(j, "kicks", ibtrs_loop_kicks(loop));
	json_obj_end(j);
	json_obj_begin(j, "tick");
	json_u64(j, "late_ticks",
		 atomic_load_explicit(&loop->late_ticks, memory_order_relaxed));
	json_u64(j, "late_ms",
		 atomic_load_explicit(&loop->late_ns, memory_order_relaxed) /
			 1000000);
	json_obj_end(j);
}

uint64_t ibtrs_loop_kicks(struct ibtrs_loop *loop)
{
	return atomic_load_explicit(&loop->kicks, memory_order_relaxed);
}

uint64_t ibtrs_loop_tick_late_ns(void)
{
	return tick_late_tls;
}

uint64_t ibtrs_loop_late_ns(struct ibtrs_loop *loop, uint64_t *ticks)
{
	if (ticks)
		*ticks = atomic_load_explicit(&loop->late_ticks,
					      memory_order_relaxed);
	return atomic_load_explicit(&loop->late_ns, memory_order_relaxed);
}

uint64_t ibtrs_loop_empty_polls(struct ibtrs_loop *loop)
{
	return atomic_load_explicit(&loop->empty_polls, memory_order_relaxed);
}

bool ibtrs_loop_on_thread(const struct ibtrs_loop *loop)
{
	return pthread_equal(pthread_self(), loop->thread);
}

uint64_t ibtrs_loop_batch_ns(const struct ibtrs_loop *loop)
{
	return loop->now_ns;
}

uint64_t ibtrs_loop_now_ns(const struct ibtrs_loop *loop)
{
	return ibtrs_loop_on_thread(loop) ? ibtrs_loop_batch_ns(loop)
					  : ibtrs_now_ns();
}

struct loop_call {
	struct ibtrs_work work;
	void (*fn)(void *arg);
	void *arg;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
};

static void loop_call_fn(struct ibtrs_work *w)
{
	struct loop_call *c = (struct loop_call *)w;

	c->fn(c->arg);
	pthread_mutex_lock(&c->lock);
	c->done = true;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

void ibtrs_loop_call(struct ibtrs_loop *loop, void (*fn)(void *arg), void *arg)
{
	struct loop_call c = {
		.work.fn = loop_call_fn,
		.fn = fn,
		.arg = arg,
	};

	if (ibtrs_loop_on_thread(loop)) {
		fn(arg);
		return;
	}
	pthread_mutex_init(&c.lock, NULL);
	pthread_cond_init(&c.cond, NULL);
	ibtrs_loop_queue(loop, &c.work);
	pthread_mutex_lock(&c.lock);
	while (!c.done)
		pthread_cond_wait(&c.cond, &c.lock);
	pthread_mutex_unlock(&c.lock);
	pthread_cond_destroy(&c.cond);
	pthread_mutex_destroy(&c.lock);
}

int ibtrs_loop_pool_get(struct ibtrs_loop_pool *pool, unsigned int nr,
			struct ibtrs_loop **loopp)
{
	unsigned int i, best = 0;
	char name[16];
	int ret = 0;

	if (!pool || !nr || nr > IBTRS_LOOP_POOL_MAX || !loopp)
		return -EINVAL;
	pthread_mutex_lock(&pool->lock);
	/* From a callback on one of the pool's loops: the new user might
	 * land on this very thread and wait for it (a session's open waits
	 * for its handshake on its loop). Refused wherever it would land. */
	for (i = 0; i < IBTRS_LOOP_POOL_MAX; i++) {
		if (pool->slot[i].loop &&
		    ibtrs_loop_on_thread(pool->slot[i].loop)) {
			pthread_mutex_unlock(&pool->lock);
			return -EDEADLK;
		}
	}
	/* The least loaded of the first @nr, a slot without a loop first. */
	for (i = 1; i < nr; i++)
		if (pool->slot[i].users < pool->slot[best].users)
			best = i;
	if (!pool->slot[best].loop) {
		snprintf(name, sizeof(name), "%s/%u", pool->name, best);
		ret = ibtrs_loop_create(&pool->slot[best].loop, name, NULL,
					NULL, 0);
	}
	if (!ret) {
		pool->slot[best].users++;
		*loopp = pool->slot[best].loop;
	}
	pthread_mutex_unlock(&pool->lock);
	return ret;
}

void ibtrs_loop_pool_put(struct ibtrs_loop_pool *pool, struct ibtrs_loop *loop)
{
	struct ibtrs_loop *gone = NULL;
	unsigned int i;

	if (!pool || !loop)
		return;
	pthread_mutex_lock(&pool->lock);
	for (i = 0; i < IBTRS_LOOP_POOL_MAX; i++) {
		if (pool->slot[i].loop != loop)
			continue;
		if (!--pool->slot[i].users) {
			gone = loop;
			pool->slot[i].loop = NULL;
		}
		break;
	}
	pthread_mutex_unlock(&pool->lock);
	if (i == IBTRS_LOOP_POOL_MAX)
		ibtrs_log(IBTRS_LOG_ERR,
			  "loop pool %s: put of a loop not its own",
			  pool->name);
	/* Outside the lock: the thread runs what is queued before it ends,
	 * and a get meanwhile makes a new loop. */
	ibtrs_loop_destroy(gone);
}

unsigned int ibtrs_loop_pool_users(struct ibtrs_loop_pool *pool,
				   const struct ibtrs_loop *loop)
{
	unsigned int i, n = 0;

	if (!pool)
		return 0;
	pthread_mutex_lock(&pool->lock);
	for (i = 0; i < IBTRS_LOOP_POOL_MAX; i++)
		if (pool->slot[i].loop && (!loop || pool->slot[i].loop == loop))
			n += loop ? pool->slot[i].users : 1;
	pthread_mutex_unlock(&pool->lock);
	return n;
}

/*
 * Tests only (loop.h): the calling thread takes @loop over from its own
 * thread, which ends. The stop flag is the destroy's, cleared again once
 * the thread is gone; ibtrs_loop_destroy() from this thread still works
 * (its join of itself fails at once).
 */
void ibtrs_loop_test_adopt(struct ibtrs_loop *loop)
{
	pthread_mutex_lock(&loop->lock);
	loop->stop = true;
	pthread_mutex_unlock(&loop->lock);
	loop_kick(loop);
	pthread_join(loop->thread, NULL);
	pthread_mutex_lock(&loop->lock);
	loop->stop = false;
	pthread_mutex_unlock(&loop->lock);
	loop->thread = pthread_self();
}

/* Tests only (loop.h): one turn of loop_thread(), without busy polling. */
bool ibtrs_loop_test_run(struct ibtrs_loop *loop, int timeout_ms)
{
	struct epoll_event ev[LOOP_MAX_EVENTS];
	bool ran;
	int i, n;

	loop_run_work(loop, &ran);
	if (ran || (timeout_ms && !loop_sleep_begin(loop)))
		timeout_ms = 0;
	n = epoll_wait(loop->epfd, ev, LOOP_MAX_EVENTS, timeout_ms);
	if (timeout_ms)
		loop_sleep_end(loop);
	if (n <= 0)
		return ran;
	loop->now_ns = ibtrs_now_ns();
	for (i = 0; i < n; i++) {
		struct ibtrs_loop_src *src = ev[i].data.ptr;

		src->cb(src, ev[i].events);
	}
	return true;
}
