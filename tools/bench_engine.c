// SPDX-License-Identifier: MIT
/*
 * bench_engine.c - the load engine of "ibtrs bench" and "ibtrs demo": a
 * load generator for the memory target of "ibtrs server", with optional
 * data verification. The command line is in bench_cli.c, the printing of
 * progress and results in bench_report.c.
 *
 * The target is cut into blocks of the request size; every submitter thread
 * owns a disjoint range of blocks and keeps its share of the queue depth in
 * flight, one tag (IBTRS_TAG_WAIT) per request. A block has at most one
 * request in flight, so that with --verify the content of every block is
 * known exactly: each WRITE stores a pattern derived from the block offset
 * and a per-thread sequence number, the sequence number of the last
 * completed WRITE is remembered per block, and every READ is compared with
 * it (blocks never written must read as zeros).
 *
 * Every request carries a unique id (a random 32-bit instance id and a
 * sequence number), so that the server can tell a request that ran twice.
 * The run accounts for every request submitted: its confirmation must run
 * (else it is "lost"), and the longest time without a successful completion
 * is measured.
 *
 * With --export NAME the same engine runs against an ibnbd export of the
 * server instead: the requests go through ibnbd_submit() on the device
 * (which takes the tags itself), the export's size bounds the offsets, and
 * --verify checks only blocks this run wrote (an export holds data the run
 * did not write), then reads every one of them back once more at the end.
 */
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ibnbd.h>

#include "addr.h"
#include "bench.h"
#include "hist.h"
#include "tool.h"

/* Time allowed for the requests still in flight at the end. */
#define BENCH_DRAIN_NS (10ull * 1000000000ull)
/* The same after SIGINT or SIGTERM: the run must end within 2 s, and
 * closing the session then fails what is left. */
#define BENCH_SIG_DRAIN_NS (500ull * 1000000ull)
/* ... and ends early once this long passes without a completion. */
#define BENCH_SIG_IDLE_NS (100ull * 1000000ull)
/* Longest sleep of a submitter waiting for a free tag. */
#define BENCH_TAG_POLL_NS (1000ull * 1000ull)
/* Extra time a submitter thread may take to finish after draining. */
#define BENCH_JOIN_NS (5ull * 1000000000ull)
/* Pause after a request could not be submitted, not to spin. */
#define BENCH_RETRY_US 10000
/* Individual failures reported on stderr per run. */
#define BENCH_MAX_REPORTS 5

/* Content of a block is unknown: a WRITE to it failed. */
#define BLK_UNKNOWN UINT64_MAX

struct bench;
struct bench_thread;

/**
 * struct bench_req - one request slot of a submitter thread
 * @t: the owning thread
 * @next: next free slot
 * @tag: the tag of the request in flight
 * @buf: data buffer, bs bytes
 * @blk: block index within the thread's range
 * @seq: WRITE: sequence number of the pattern written; READ: sequence
 *       number of the last completed WRITE of the block (0: never written)
 * @start_ns: submission time
 * @dir: IBTRS_READ or IBTRS_WRITE
 * @idx: index of the slot in its thread
 * @nblks: blocks the slot owns: idx, idx + qd, idx + 2 qd, ... of the
 *         thread's range
 * @wseq: last sequence number the slot wrote
 * @cursor: in-order mixes: how many of its blocks the slot went through
 * @rng: random state
 *
 * A slot owns its blocks, so no two requests in flight share a block and
 * choosing the next one needs nothing from the other slots: a completion
 * reuses its slot without a lock. Whoever holds the slot (the submitter
 * thread, or the loop thread from the completion on) uses its state.
 */
struct bench_req {
	struct bench_thread *t;
	struct bench_req *next;
	struct ibtrs_tag *tag;
	unsigned char *buf;
	uint64_t blk;
	uint64_t seq;
	uint64_t start_ns;
	int dir;
	unsigned int idx;
	uint64_t nblks;
	uint64_t wseq;
	uint64_t cursor;
	uint64_t rng;
};

/**
 * struct bench_thread - a submitter thread and the blocks it owns
 * @b: the benchmark
 * @thread: the thread
 * @lock: protects @free, @inflight and @waiting
 * @cond: signalled when a request completes
 * @reqs: @qd request slots
 * @free: free request slots
 * @qd: requests kept in flight
 * @inflight: requests in flight now
 * @first_blk: first block of the thread's range
 * @nblks: number of blocks of the range
 * @blk_seq: per block, sequence number of the last completed WRITE, 0 for
 *           none, BLK_UNKNOWN after a failed WRITE (--verify only)
 * @hist: latency of successful requests in nanoseconds (loop thread only;
 *        others read it with hist_read())
 * @tick_prev: @hist as of the last progress tick (the main thread's)
 * @submitted: requests submitted by the thread, whose confirmation is due
 *             (atomic)
 * @cb_submits: requests submitted from a completion callback (written by
 *              the session's loop thread only)
 * @confs: confirmations that ran (loop thread only)
 * @read_ops: successful READs (loop thread only)
 * @write_ops: successful WRITEs (loop thread only)
 * @errors: failed requests (atomic)
 * @aborted: of those, failed by the session's close at the end (atomic)
 * @vfail: READs with wrong data (atomic)
 * @verified: READs whose data was checked (loop thread only)
 * @final_verified: blocks checked by the final read pass (--export)
 * @unknown: requests completed with -ECONNRESET: in flight at a session
 *           loss, they may or may not have run (atomic)
 *
 * Confirmations run on the session's loop thread, and so do the
 * submissions from them: the counters only that thread writes are added
 * to with bench_count(), a plain load and store, not a locked add per
 * request.
 */
struct bench_thread {
	struct bench *b;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct bench_req *reqs;
	struct bench_req *free;
	unsigned int qd;
	unsigned int inflight;
	void *bufs;   /* the data buffers of all requests */
	bool waiting; /* the submitter sleeps on @cond for free slots */
	uint64_t first_blk;
	uint64_t nblks;
	uint64_t *blk_seq;
	struct hist hist;
	struct hist tick_prev;
	uint64_t submitted;
	uint64_t cb_submits;
	uint64_t confs;
	uint64_t read_ops;
	uint64_t write_ops;
	uint64_t errors;
	uint64_t aborted;
	uint64_t vfail;
	uint64_t verified;
	uint64_t final_verified;
	uint64_t unknown;
};

/**
 * struct bench - a benchmark run
 * @cfg: the configuration
 * @sess: the client session
 * @threads: the submitter threads
 * @nthreads: number of @threads
 * @stop: set when the submitters must stop (atomic)
 * @reports: failures reported on stderr so far (atomic)
 * @closing: set while the session is closed on purpose (atomic)
 * @instance_id: random id of this run, the high half of every request id
 * @next_seq: last request sequence number used (atomic)
 * @last_done_ns: time of the last successful completion, 0 before the
 *                first (written by the loop thread, and once at the end)
 * @max_gap_ns: longest time between successful completions (atomic)
 * @clt: the ibnbd client on @sess (--export), else NULL
 * @dev: the export opened (--export), else NULL
 * @geo: its geometry
 * @signal: the signal that ends the run early, 0 for none (written before
 *          @stop)
 */
struct bench {
	const struct bench_cfg *cfg;
	struct ibtrs_clt *sess;
	struct bench_thread *threads;
	unsigned int nthreads;
	int stop;
	unsigned int reports;
	int closing;
	uint32_t instance_id;
	uint64_t next_seq;
	uint64_t last_done_ns;
	uint64_t max_gap_ns;
	struct ibnbd_clt *clt;
	struct ibnbd_dev *dev;
	struct ibnbd_geometry geo;
	int signal;
};

static const char *const bench_rw_names[] = {
	[BENCH_READ] = "read",
	[BENCH_WRITE] = "write",
	[BENCH_RANDREAD] = "randread",
	[BENCH_RANDWRITE] = "randwrite",
	[BENCH_RW] = "rw",
	[BENCH_RANDRW] = "randrw",
};

/**
 * bench_rw_str() - name of a request mix, as fio's --rw
 * @rw: the mix
 *
 * Return: "read", "write", "randread", "randwrite", "rw" or "randrw".
 */
const char *bench_rw_str(enum bench_rw rw)
{
	return (unsigned int)rw < ARRAY_SIZE(bench_rw_names)
		       ? bench_rw_names[rw]
		       : "?";
}

/**
 * bench_rw_parse() - a request mix by its name
 * @s: the name, as bench_rw_str() gives it ("readwrite" is taken for "rw",
 *     as fio does)
 * @rw: filled on success
 *
 * Return: 0, or -EINVAL for an unknown name.
 */
int bench_rw_parse(const char *s, enum bench_rw *rw)
{
	unsigned int i;

	if (!strcmp(s, "readwrite"))
		s = "rw";
	for (i = 0; i < ARRAY_SIZE(bench_rw_names); i++) {
		if (!strcmp(s, bench_rw_names[i])) {
			*rw = (enum bench_rw)i;
			return 0;
		}
	}
	return -EINVAL;
}

/**
 * bench_rw_reads_only() - whether a mix only READs
 * @rw: the mix
 *
 * Return: true for read and randread.
 */
bool bench_rw_reads_only(enum bench_rw rw)
{
	return rw == BENCH_READ || rw == BENCH_RANDREAD;
}

/**
 * bench_submit_str() - name of a submission mode
 * @submit: the mode
 *
 * Return: "callback" or "thread".
 */
const char *bench_submit_str(enum bench_submit submit)
{
	return submit == BENCH_SUBMIT_THREAD ? "thread" : "callback";
}

/**
 * bench_cfg_init() - fill a configuration with the defaults
 * @cfg: the configuration; the caller sets the paths and what it wants
 *       changed
 *
 * The session options (policy, heartbeat, reconnect and failover) are the
 * library's defaults.
 */
void bench_cfg_init(struct bench_cfg *cfg)
{
	struct ibtrs_clt_opts o;

	memset(cfg, 0, sizeof(*cfg));
	ibtrs_clt_opts_init(&o, sizeof(o));
	cfg->port = IBTRS_DEFAULT_PORT;
	cfg->rw = BENCH_RANDRW;
	cfg->rwmixread = BENCH_DEFAULT_RWMIXREAD;
	cfg->bs = BENCH_DEFAULT_BS;
	cfg->qd = BENCH_DEFAULT_QD;
	cfg->threads = BENCH_DEFAULT_THREADS;
	cfg->time_s = BENCH_DEFAULT_TIME;
	cfg->policy = o.policy;
	cfg->hb_timeout_ms = o.hb_timeout_ms;
	cfg->reconnect_delay_s = o.reconnect_delay_sec;
	cfg->max_reconnects = o.max_reconnect_attempts;
	cfg->failover_timeout_ms = o.failover_timeout_ms;
}

/**
 * mix64() - the splitmix64 finalizer
 * @x: input
 *
 * Return: a well mixed 64-bit value.
 */
static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/**
 * rng_next() - next value of a xorshift64* generator
 * @s: the state, never 0
 *
 * Return: a pseudo-random value.
 */
static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

/**
 * pattern_word() - word @i of the pattern of a block
 * @seed: pattern seed from pattern_seed()
 * @i: word index
 *
 * Return: the word; distinct words of one pattern differ.
 */
static uint64_t pattern_word(uint64_t seed, uint64_t i)
{
	uint64_t w = (seed ^ i) * 0x9e3779b97f4a7c15ull;

	return w ^ (w >> 32);
}

/**
 * pattern_seed() - seed of the pattern written at @off with sequence @seq
 * @off: byte offset in the target
 * @seq: sequence number of the WRITE
 *
 * Return: the seed.
 */
static uint64_t pattern_seed(uint64_t off, uint64_t seq)
{
	return mix64(off ^ mix64(seq + 0x632be59bd9b4e019ull));
}

/**
 * pattern_fill() - write the pattern of (@off, @seq) into @buf
 * @buf: the buffer
 * @len: its length
 * @off: byte offset in the target
 * @seq: sequence number of the WRITE
 */
static void pattern_fill(unsigned char *buf, size_t len, uint64_t off,
			 uint64_t seq)
{
	uint64_t seed = pattern_seed(off, seq), w;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		w = htole64(pattern_word(seed, i / 8));
		memcpy(buf + i, &w, 8);
	}
	if (i < len) {
		w = htole64(pattern_word(seed, i / 8));
		memcpy(buf + i, &w, len - i);
	}
}

/**
 * pattern_check() - compare @buf with the pattern of (@off, @seq)
 * @buf: the data read
 * @len: its length
 * @off: byte offset in the target
 * @seq: sequence number of the last WRITE, 0 for zeros
 *
 * Return: -1 when @buf matches, else the offset of the first 8-byte word
 * that differs.
 */
static long pattern_check(const unsigned char *buf, size_t len, uint64_t off,
			  uint64_t seq)
{
	uint64_t seed = pattern_seed(off, seq), w = 0, r;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&r, buf + i, 8);
		if (seq)
			w = htole64(pattern_word(seed, i / 8));
		if (r != w)
			return (long)i;
	}
	if (i < len) {
		r = 0;
		memcpy(&r, buf + i, len - i);
		w = seq ? htole64(pattern_word(seed, i / 8)) : 0;
		if (memcmp(&r, &w, len - i))
			return (long)i;
	}
	return -1;
}

/**
 * bench_report() - print one failure line on stderr, at most
 * BENCH_MAX_REPORTS times per run
 * @b: the benchmark
 * @fmt: printf format
 */
static void __attribute__((format(printf, 2, 3)))
bench_report(struct bench *b, const char *fmt, ...)
{
	char buf[256];
	unsigned int n;
	va_list ap;

	if (b->cfg->quiet)
		return;
	n = __atomic_fetch_add(&b->reports, 1, __ATOMIC_RELAXED);
	if (n >= BENCH_MAX_REPORTS)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n == BENCH_MAX_REPORTS - 1)
		tool_err("warning: %s (further failures not shown)", buf);
	else
		tool_err("warning: %s", buf);
}

/*
 * Slots freed before the submitter is woken: half of its share of the
 * queue depth, all of a share under 8. One wake-up then refills many
 * requests while the rest keep the pipe busy; a wake-up costs more than a
 * request, so with a small share per thread (16 threads at QD 64: 4 each)
 * a thread waits for all of its requests, and other threads' requests
 * keep the pipe busy meanwhile.
 */
static unsigned int bench_batch(const struct bench_thread *t)
{
	return t->qd < 8 ? t->qd : t->qd / 2;
}

/* Add one to a counter that only the session's loop thread writes. */
static void bench_count(uint64_t *c)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
}

/**
 * bench_req_done() - give a request slot and its block back
 * @t: the thread
 * @req: the slot
 * @lat_ns: latency to record, 0 for none
 */
static void bench_req_done(struct bench_thread *t, struct bench_req *req,
			   uint64_t lat_ns)
{
	if (lat_ns)
		hist_add(&t->hist, lat_ns);
	pthread_mutex_lock(&t->lock);
	req->next = t->free;
	t->free = req;
	t->inflight--;
	/*
	 * Wake the submitter once a batch of slots is free, not for every
	 * completion: one wake-up then refills many requests. The drain
	 * waits for the last one.
	 */
	if (!t->inflight ||
	    (t->waiting && t->qd - t->inflight >= bench_batch(t)))
		pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

/**
 * bench_stopping() - whether the submitters must stop
 * @b: the benchmark
 *
 * Return: true once the run is over.
 */
static bool bench_stopping(struct bench *b)
{
	return __atomic_load_n(&b->stop, __ATOMIC_ACQUIRE);
}

/**
 * bench_note_gap() - account for the time since the previous completion
 * @b: the benchmark
 * @now: CLOCK_MONOTONIC time of a successful completion, or of the end of
 *       the run
 */
static void bench_note_gap(struct bench *b, uint64_t now)
{
	uint64_t prev, max;

	/* The loop thread completes, the main thread notes the end after
	 * setting stop: a completion that raced with it is microseconds
	 * away, no gap, whichever store wins. */
	prev = __atomic_load_n(&b->last_done_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&b->last_done_ns, now, __ATOMIC_RELAXED);
	if (!prev || now <= prev)
		return;
	max = __atomic_load_n(&b->max_gap_ns, __ATOMIC_RELAXED);
	while (now - prev > max &&
	       !__atomic_compare_exchange_n(&b->max_gap_ns, &max, now - prev,
					    false, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
}

static void bench_resubmit(struct bench_thread *t, struct bench_req *req,
			   uint64_t lat_ns, uint64_t now);

/**
 * bench_unknown_outcome() - a request completed with -ECONNRESET
 * @t: its thread
 * @req: the request
 *
 * The library's word for a request that was in flight when the server
 * session was lost (a restart): it may or may not have run. Not an error
 * of the transport nor a verified request: counted on its own, and a WRITE
 * leaves its block unknown.
 */
static void bench_unknown_outcome(struct bench_thread *t, struct bench_req *req)
{
	__atomic_fetch_add(&t->unknown, 1, __ATOMIC_RELAXED);
	bench_report(
		t->b,
		"%s at offset %llu: outcome unknown (session lost: it may or may not have run)",
		req->dir == IBTRS_READ ? "READ" : "WRITE",
		(unsigned long long)((t->first_blk + req->blk) *
				     t->b->cfg->bs));
	if (req->dir == IBTRS_WRITE && t->blk_seq)
		t->blk_seq[req->blk] = BLK_UNKNOWN;
}

/**
 * bench_conf() - completion of a request
 * @priv: the struct bench_req
 * @err: 0 or the negative errno of the failure
 *
 * The block of the request has no other request in flight, so its entry of
 * blk_seq may be read and written without the lock. With --submit callback
 * a successful completion submits the next request right here.
 */
static void bench_conf(void *priv, int err)
{
	struct bench_req *req = priv;
	struct bench_thread *t = req->t;
	struct bench *b = t->b;
	uint64_t now = tool_now_ns();
	uint64_t lat = now - req->start_ns;
	uint64_t bs = b->cfg->bs;
	uint64_t off = (t->first_blk + req->blk) * bs;
	long bad;

	bench_count(&t->confs);
	if (lat == 0)
		lat = 1;
	if (!err && !bench_stopping(b))
		bench_note_gap(b, now);
	if (err == -ECONNRESET && !b->dev) {
		bench_unknown_outcome(t, req);
		lat = 0;
	} else if (err) {
		__atomic_fetch_add(&t->errors, 1, __ATOMIC_RELAXED);
		/* Still in flight when the run ended and failed by its close.
		 */
		if (__atomic_load_n(&b->closing, __ATOMIC_ACQUIRE))
			__atomic_fetch_add(&t->aborted, 1, __ATOMIC_RELAXED);
		bench_report(b, "%s of %llu bytes at offset %llu failed: %s",
			     req->dir == IBTRS_READ ? "READ" : "WRITE",
			     (unsigned long long)bs, (unsigned long long)off,
			     strerror(-err));
		if (req->dir == IBTRS_WRITE && t->blk_seq)
			t->blk_seq[req->blk] = BLK_UNKNOWN;
		lat = 0;
	} else if (req->dir == IBTRS_WRITE) {
		bench_count(&t->write_ops);
		if (t->blk_seq)
			t->blk_seq[req->blk] = req->seq;
	} else {
		bench_count(&t->read_ops);
		if (t->blk_seq && req->seq != BLK_UNKNOWN) {
			bench_count(&t->verified);
			bad = pattern_check(req->buf, bs, off, req->seq);
			if (bad >= 0) {
				__atomic_fetch_add(&t->vfail, 1,
						   __ATOMIC_RELAXED);
				bench_report(
					b,
					"verify failure: READ at offset %llu differs at byte %ld from %s",
					(unsigned long long)off, bad,
					req->seq ? "the last write"
						 : "zeros (never written)");
			}
		}
	}
	if (!b->dev)
		ibtrs_clt_put_tag(b->sess, req->tag);
	if (!err && b->cfg->submit == BENCH_SUBMIT_CALLBACK)
		bench_resubmit(t, req, lat, now);
	else
		bench_req_done(t, req, lat);
}

/**
 * bench_pick() - choose the next request of a slot
 * @t: the thread
 * @req: the slot, held by the caller
 *
 * Picks one of the slot's blocks at random, and sets the direction and the
 * sequence number.
 */
static void bench_pick(struct bench_thread *t, struct bench_req *req)
{
	const struct bench_cfg *cfg = t->b->cfg;
	uint64_t blk, n;

	switch (cfg->rw) {
	case BENCH_READ:
	case BENCH_WRITE:
	case BENCH_RW:
		n = req->cursor++ % req->nblks;
		break;
	default:
		n = rng_next(&req->rng) % req->nblks;
		break;
	}
	blk = req->idx + n * t->qd;
	req->blk = blk;
	if (cfg->rw == BENCH_READ || cfg->rw == BENCH_RANDREAD)
		req->dir = IBTRS_READ;
	else if (cfg->rw == BENCH_WRITE || cfg->rw == BENCH_RANDWRITE)
		req->dir = IBTRS_WRITE;
	else
		req->dir = rng_next(&req->rng) % 100 < cfg->rwmixread
				   ? IBTRS_READ
				   : IBTRS_WRITE;
	if (req->dir == IBTRS_WRITE)
		req->seq = ++req->wseq;
	else
		req->seq = t->blk_seq ? t->blk_seq[blk] : 0;
}

/**
 * bench_take_slot() - wait for a free request slot and pick a free block
 * @t: the thread
 *
 * Return: the slot with its block chosen and marked busy, its direction
 * and sequence number set, or NULL when the run is over.
 */
static struct bench_req *bench_take_slot(struct bench_thread *t)
{
	struct bench_req *req;

	pthread_mutex_lock(&t->lock);
	while (t->inflight >= t->qd && !bench_stopping(t->b)) {
		t->waiting = true;
		pthread_cond_wait(&t->cond, &t->lock);
		t->waiting = false;
	}
	if (bench_stopping(t->b)) {
		pthread_mutex_unlock(&t->lock);
		return NULL;
	}
	req = t->free;
	t->free = req->next;
	t->inflight++;
	pthread_mutex_unlock(&t->lock);
	bench_pick(t, req);
	return req;
}

/* A condition whose timed waits take CLOCK_MONOTONIC (tool_now_ns()). */
static void bench_cond_init(pthread_cond_t *cond)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(cond, &ca);
	pthread_condattr_destroy(&ca);
}

/* @ns of tool_now_ns() as the deadline of a bench_cond_init() wait. */
static struct timespec bench_ts(uint64_t ns)
{
	return (struct timespec){ .tv_sec = (time_t)(ns / 1000000000ull),
				  .tv_nsec = (long)(ns % 1000000000ull) };
}

/**
 * bench_drain() - wait until the requests of a thread completed
 * @t: the thread
 *
 * Gives up after BENCH_DRAIN_NS, or after BENCH_SIG_DRAIN_NS once SIGINT or
 * SIGTERM came (also when it comes during the drain), and then as well as
 * soon as BENCH_SIG_IDLE_NS pass without a completion: a server that
 * stopped answering must not hold the end of the run. Closing the session
 * then aborts what is left.
 */
static void bench_drain(struct bench_thread *t)
{
	uint64_t now = tool_now_ns(), deadline = now + BENCH_DRAIN_NS;
	bool sig = false;
	unsigned int last;

	pthread_mutex_lock(&t->lock);
	last = t->inflight;
	while (t->inflight && now < deadline) {
		struct timespec ts;

		if (!sig && __atomic_load_n(&t->b->signal, __ATOMIC_RELAXED)) {
			sig = true;
			if (deadline > now + BENCH_SIG_DRAIN_NS)
				deadline = now + BENCH_SIG_DRAIN_NS;
		}
		/* Slices: a signal or a stall is seen within one. */
		ts = bench_ts(deadline < now + BENCH_SIG_IDLE_NS
				      ? deadline
				      : now + BENCH_SIG_IDLE_NS);
		if (pthread_cond_timedwait(&t->cond, &t->lock, &ts) ==
		    ETIMEDOUT) {
			if (sig && t->inflight == last)
				break;
			last = t->inflight;
		}
		now = tool_now_ns();
	}
	pthread_mutex_unlock(&t->lock);
}

/**
 * bench_submit() - fill a request slot and submit it
 * @t: the thread owning the slot
 * @req: the slot, its block chosen
 * @tag: a tag for it, NULL with --export (ibnbd_submit() takes one)
 * @start_ns: the time the request counts from, 0 for now
 * @cb: submitted from a completion callback, on the session's loop thread
 *
 * On failure the tag is put back and the slot freed. From a callback, an
 * export's request that finds no free tag (-EAGAIN) is no failure: the
 * slot goes back for the submitter thread.
 *
 * Return: 0, or the negative errno of ibtrs_clt_request() or
 * ibnbd_submit().
 */
static int bench_submit(struct bench_thread *t, struct bench_req *req,
			struct ibtrs_tag *tag, uint64_t start_ns, bool cb)
{
	struct bench *b = t->b;
	const struct bench_cfg *cfg = b->cfg;
	struct tool_blk_msg msg;
	struct iovec vec, sg;
	uint64_t off, seq;
	int ret;

	off = (t->first_blk + req->blk) * cfg->bs;
	req->tag = tag;
	if (t->blk_seq) {
		if (req->dir == IBTRS_WRITE)
			pattern_fill(req->buf, cfg->bs, off, req->seq);
		else /* stale data must not pass for good */
			memset(req->buf, 0xa5, cfg->bs);
	}
	/* A fresh id for every submission; the instance id moves on when
	 * the 32-bit sequence wraps. */
	seq = __atomic_add_fetch(&b->next_seq, 1, __ATOMIC_RELAXED);
	msg.offset = htole64(off);
	msg.len = htole32(cfg->bs);
	msg.flags = 0;
	msg.req_id = htole64(
		((uint64_t)(uint32_t)(b->instance_id + (seq >> 32)) << 32) |
		(seq & 0xffffffffull));
	vec.iov_base = &msg;
	vec.iov_len = sizeof(msg);
	sg.iov_base = req->buf;
	sg.iov_len = cfg->bs;

	req->start_ns = start_ns ? start_ns : tool_now_ns();
	/* Counted first: the confirmation may run before the call returns,
	 * unless it is called on the thread that runs confirmations. */
	if (!cb)
		__atomic_fetch_add(&t->submitted, 1, __ATOMIC_RELAXED);
	if (b->dev)
		ret = ibnbd_submit(b->dev,
				   req->dir == IBTRS_READ ? IBNBD_OP_READ
							  : IBNBD_OP_WRITE,
				   cb ? IBNBD_F_NOWAIT : 0, off, cfg->bs, &sg,
				   1, bench_conf, req);
	else
		ret = ibtrs_clt_request(req->dir, bench_conf, b->sess, tag, req,
					&vec, 1, cfg->bs, &sg, 1);
	if (!ret) {
		if (cb)
			bench_count(&t->cb_submits);
		return 0;
	}
	if (!cb)
		__atomic_fetch_sub(&t->submitted, 1, __ATOMIC_RELAXED);
	if (b->dev && cb && ret == -EAGAIN) {
		bench_req_done(t, req, 0);
		return ret;
	}
	/* The conf callback will not run. */
	__atomic_fetch_add(&t->errors, 1, __ATOMIC_RELAXED);
	bench_report(b, "cannot submit a %s: %s",
		     req->dir == IBTRS_READ ? "READ" : "WRITE", strerror(-ret));
	if (tag)
		ibtrs_clt_put_tag(b->sess, tag);
	bench_req_done(t, req, 0);
	return ret;
}

/**
 * bench_resubmit() - reuse a completed slot from its callback (--submit
 * callback)
 * @t: the thread owning the slot
 * @req: the slot, its request completed successfully, its tag put back
 * @lat_ns: the latency of that request
 * @now: the time it completed, the start of the next one
 *
 * Accounts for the completed request and picks the next one, with no
 * lock: the slot is the caller's. A slot for which no tag is free goes
 * back; the submitter thread retries it.
 */
static void bench_resubmit(struct bench_thread *t, struct bench_req *req,
			   uint64_t lat_ns, uint64_t now)
{
	struct ibtrs_tag *tag;

	if (bench_stopping(t->b)) {
		bench_req_done(t, req, lat_ns);
		return;
	}
	hist_add(&t->hist, lat_ns);
	bench_pick(t, req);
	if (t->b->dev) {
		bench_submit(t, req, NULL, now, true);
		return;
	}
	tag = ibtrs_clt_get_tag(t->b->sess, IBTRS_IO_CON, IBTRS_TAG_NOWAIT);
	if (!tag) {
		bench_req_done(t, req, 0);
		return;
	}
	bench_submit(t, req, tag, now, true);
}

/**
 * bench_get_tag() - a tag for the next request of @t
 * @t: the thread
 *
 * Waits for a free tag without sleeping in the library: when requests are
 * stuck (a path that swallows everything) every tag can stay held until
 * the session is closed, and a thread asleep in ibtrs_clt_get_tag() would
 * never see the end of the run, nor could the session be closed under it.
 *
 * Return: the tag; NULL with errno ECANCELED once the run stops, or as
 * ibtrs_clt_get_tag().
 */
static struct ibtrs_tag *bench_get_tag(struct bench_thread *t)
{
	struct ibtrs_tag *tag;
	struct timespec ts;
	uint64_t until;

	for (;;) {
		tag = ibtrs_clt_get_tag(t->b->sess, IBTRS_IO_CON,
					IBTRS_TAG_NOWAIT);
		if (tag || errno != EAGAIN)
			return tag;
		if (bench_stopping(t->b)) {
			errno = ECANCELED;
			return NULL;
		}
		/* A completion of this thread wakes it earlier. */
		until = tool_now_ns() + BENCH_TAG_POLL_NS;
		ts.tv_sec = (time_t)(until / 1000000000ull);
		ts.tv_nsec = (long)(until % 1000000000ull);
		pthread_mutex_lock(&t->lock);
		t->waiting = true;
		if (!bench_stopping(t->b))
			pthread_cond_timedwait(&t->cond, &t->lock, &ts);
		t->waiting = false;
		pthread_mutex_unlock(&t->lock);
	}
}

/**
 * bench_worker() - a submitter thread
 * @arg: the struct bench_thread
 *
 * Keeps the thread's requests in flight. With --submit callback the
 * completions do that, and this thread only starts them and steps in for
 * requests that failed or found no tag.
 *
 * Return: NULL.
 */
static void *bench_worker(void *arg)
{
	struct bench_thread *t = arg;
	struct bench *b = t->b;
	struct bench_req *req;
	struct ibtrs_tag *tag;
	int ret;

	while ((req = bench_take_slot(t))) {
		if (b->dev) {
			if (bench_submit(t, req, NULL, 0, false))
				usleep(BENCH_RETRY_US);
			continue;
		}
		tag = bench_get_tag(t);
		if (!tag && errno == ECANCELED) {
			bench_req_done(t, req, 0);
			break;
		}
		if (!tag) {
			ret = errno;
			__atomic_fetch_add(&t->errors, 1, __ATOMIC_RELAXED);
			bench_report(b, "cannot get a tag: %s", strerror(ret));
			bench_req_done(t, req, 0);
			if (ret == ECONNABORTED)
				break;
			usleep(BENCH_RETRY_US);
			continue;
		}
		if (bench_submit(t, req, tag, 0, false))
			usleep(BENCH_RETRY_US);
	}
	bench_drain(t);
	return NULL;
}

static int bench_wait_signal(struct bench *b, uint64_t ns);

/* Longest wait for the server's CPU time: a slow answer is no figure. */
#define BENCH_SRV_CPU_NS (5000ull * 1000000ull)
/* The same after SIGINT or SIGTERM, within the 2 s the run has to end. */
#define BENCH_SIG_SRV_CPU_NS (200ull * 1000000ull)
/* Slices of that wait, between which SIGINT and SIGTERM are looked for. */
#define BENCH_SRV_CPU_SLICE_NS (50ull * 1000000ull)

/**
 * struct bench_sync - a TOOL_BLK_STATS request waited for by the caller
 * @lock: protects @done, @err and @abandoned
 * @cond: signalled when the request completed
 * @done: it completed
 * @err: with this status
 * @abandoned: the caller stopped waiting: the confirmation frees it all
 * @sess: the session, to put @tag back
 * @tag: the request's tag
 * @msg: the request
 * @st: where the answer lands
 *
 * On the heap: the caller may give up before the request completes (a
 * signal, a path that went silent), and the library writes @st and calls
 * the confirmation later.
 */
struct bench_sync {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int err;
	bool abandoned;
	struct ibtrs_clt *sess;
	struct ibtrs_tag *tag;
	struct tool_blk_msg msg;
	struct tool_blk_stats st;
};

static void bench_sync_free(struct bench_sync *s)
{
	ibtrs_clt_put_tag(s->sess, s->tag);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static void bench_sync_conf(void *priv, int err)
{
	struct bench_sync *s = priv;
	bool abandoned;

	pthread_mutex_lock(&s->lock);
	s->done = true;
	s->err = err;
	abandoned = s->abandoned;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (abandoned)
		bench_sync_free(s);
}

/**
 * bench_srv_cpu() - ask the server for its CPU time (TOOL_BLK_STATS)
 * @b: the benchmark
 * @user_us: user CPU time of the server process, microseconds
 * @sys_us: its kernel CPU time
 *
 * Waits at most BENCH_SRV_CPU_NS, and not past SIGINT or SIGTERM (then
 * recorded in @b->signal, which ends the run); after one, at most
 * BENCH_SIG_SRV_CPU_NS: a request caught on a path that went silent would
 * otherwise hold the bench until the failover timeout.
 *
 * Return: 0, -ETIMEDOUT or -EINTR when it gave up, or a negative errno (a
 * server that does not know the request answers -EOPNOTSUPP).
 */
static int bench_srv_cpu(struct bench *b, uint64_t *user_us, uint64_t *sys_us)
{
	int sig0 = __atomic_load_n(&b->signal, __ATOMIC_RELAXED);
	uint64_t end = tool_now_ns() +
		       (sig0 ? BENCH_SIG_SRV_CPU_NS : BENCH_SRV_CPU_NS);
	struct bench_sync *s;
	struct iovec vec, sg;
	struct timespec ts;
	int ret;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->sess = b->sess;
	s->tag = ibtrs_clt_get_tag(b->sess, IBTRS_IO_CON, IBTRS_TAG_WAIT);
	if (!s->tag) {
		ret = -errno;
		free(s);
		return ret;
	}
	pthread_mutex_init(&s->lock, NULL);
	bench_cond_init(&s->cond);
	s->msg.len = htole32(sizeof(s->st));
	s->msg.flags = htole32(TOOL_BLK_STATS);
	vec = (struct iovec){ &s->msg, sizeof(s->msg) };
	sg = (struct iovec){ &s->st, sizeof(s->st) };
	ret = ibtrs_clt_request(IBTRS_READ, bench_sync_conf, b->sess, s->tag, s,
				&vec, 1, sizeof(s->st), &sg, 1);
	if (ret) {
		bench_sync_free(s);
		return ret;
	}
	/* conf runs exactly once, at the latest when the session's failover
	 * timeout expires or the session closes. */
	pthread_mutex_lock(&s->lock);
	while (!s->done) {
		uint64_t now = tool_now_ns();

		if (now >= end ||
		    (!sig0 && __atomic_load_n(&b->signal, __ATOMIC_RELAXED))) {
			s->abandoned = true;
			pthread_mutex_unlock(&s->lock);
			return now >= end ? -ETIMEDOUT : -EINTR;
		}
		/* The answer wakes this at once; between slices a look for
		 * SIGINT or SIGTERM, which this thread takes by waiting. */
		ts = bench_ts(now + BENCH_SRV_CPU_SLICE_NS);
		if (pthread_cond_timedwait(&s->cond, &s->lock, &ts) ==
			    ETIMEDOUT &&
		    !s->done) {
			pthread_mutex_unlock(&s->lock);
			bench_wait_signal(b, 0);
			pthread_mutex_lock(&s->lock);
		}
	}
	pthread_mutex_unlock(&s->lock);
	ret = s->err;
	if (!ret) {
		*user_us = le64toh(s->st.user_us);
		*sys_us = le64toh(s->st.sys_us);
	}
	bench_sync_free(s);
	return ret;
}

/**
 * bench_link_ev() - connectivity changes of the session
 * @priv: the struct bench
 * @ev: the event
 */
static void bench_link_ev(void *priv, enum ibtrs_clt_link_ev ev)
{
	struct bench *b = priv;

	if (b->cfg->quiet || __atomic_load_n(&b->closing, __ATOMIC_ACQUIRE))
		return;
	if (ev == IBTRS_CLT_LINK_EV_DISCONNECTED)
		tool_err("warning: no path connected, reconnecting");
	else
		tool_err("warning: a path reconnected");
}

/**
 * bench_thread_init() - set up a submitter thread's state
 * @b: the benchmark
 * @t: the thread
 * @idx: index of the thread
 * @blks_per_thread: blocks every thread owns
 * @qd: requests the thread keeps in flight
 *
 * Return: 0 or -ENOMEM.
 */
static int bench_thread_init(struct bench *b, struct bench_thread *t,
			     unsigned int idx, uint64_t blks_per_thread,
			     unsigned int qd)
{
	unsigned int i;
	uint64_t rng;

	t->b = b;
	t->qd = qd;
	t->first_blk = idx * blks_per_thread;
	/* A session of several in a process: its own part of the target. */
	if (b->cfg->parts > 1 && !b->cfg->export_name)
		t->first_blk += (uint64_t)b->cfg->part *
				(TOOL_TARGET_SIZE / b->cfg->bs / b->cfg->parts);
	t->nblks = blks_per_thread;
	rng = mix64(tool_now_ns() ^ ((uint64_t)getpid() << 20) ^ idx) | 1;
	hist_init(&t->hist);
	hist_init(&t->tick_prev);
	pthread_mutex_init(&t->lock, NULL);
	bench_cond_init(&t->cond);

	t->reqs = calloc(qd, sizeof(*t->reqs));
	if (!t->reqs)
		return -ENOMEM;
	if (b->cfg->verify) {
		t->blk_seq = calloc(t->nblks, sizeof(*t->blk_seq));
		if (!t->blk_seq)
			return -ENOMEM;
		/* An export holds data this run did not write: its blocks
		 * are not checked until the run wrote them. */
		if (b->dev)
			for (i = 0; i < t->nblks; i++)
				t->blk_seq[i] = BLK_UNKNOWN;
	}
	/*
	 * One buffer for all the thread's requests, registered with the
	 * session so that a backend that needs registration (ofi) moves the
	 * data without a copy. The registration ends with the session.
	 */
	if (posix_memalign(&t->bufs, 4096, (size_t)qd * b->cfg->bs))
		return -ENOMEM;
	memset(t->bufs, 0, (size_t)qd * b->cfg->bs);
	if (!ibtrs_clt_mem_reg(b->sess, t->bufs, (size_t)qd * b->cfg->bs))
		bench_report(b, "cannot register the buffers: %s",
			     strerror(errno));
	for (i = 0; i < qd; i++) {
		struct bench_req *req = &t->reqs[i];

		req->buf = (unsigned char *)t->bufs + (size_t)i * b->cfg->bs;
		req->t = t;
		req->idx = i;
		/* qd <= nblks: every slot owns at least one block. */
		req->nblks = (t->nblks - i + qd - 1) / qd;
		req->rng = mix64(rng + i) | 1;
		req->next = t->free;
		t->free = req;
	}
	return 0;
}

/**
 * bench_thread_free() - free a submitter thread's state
 * @t: the thread
 */
static void bench_thread_free(struct bench_thread *t)
{
	if (!t->b)
		return;
	free(t->bufs);
	free(t->reqs);
	free(t->blk_seq);
	pthread_cond_destroy(&t->cond);
	pthread_mutex_destroy(&t->lock);
}

/**
 * bench_sum() - add up a counter of every thread
 * @b: the benchmark
 * @field: offset of the counter in struct bench_thread
 *
 * Return: the sum.
 */
static uint64_t bench_sum(struct bench *b, size_t field)
{
	uint64_t sum = 0;
	unsigned int i;

	for (i = 0; i < b->nthreads; i++)
		sum += __atomic_load_n(
			(uint64_t *)((char *)&b->threads[i] + field),
			__ATOMIC_RELAXED);
	return sum;
}

#define BENCH_SUM(b, f) bench_sum(b, offsetof(struct bench_thread, f))

/**
 * bench_parse_paths() - parse the path strings of a configuration
 * @cfg: the configuration
 * @paths: filled with the addresses
 * @src: storage of the source addresses
 * @dst: storage of the destination addresses
 *
 * Return: 0, or TOOL_EXIT_USAGE after reporting a malformed path.
 */
static int bench_parse_paths(const struct bench_cfg *cfg,
			     struct ibtrs_addr *paths,
			     struct sockaddr_storage *src,
			     struct sockaddr_storage *dst)
{
	size_t i;
	int ret;

	for (i = 0; i < cfg->path_cnt; i++) {
		paths[i].src = &src[i];
		paths[i].dst = &dst[i];
		char cause[IBTRS_ADDR_CAUSE_LEN];

		ret = ibtrs_addr_parse(cfg->paths[i], strlen(cfg->paths[i]),
				       cfg->port, &paths[i], cause,
				       sizeof(cause));
		if (ret) {
			tool_err(
				"invalid --path '%s': %s%s", cfg->paths[i],
				cause,
				ret == -EINVAL
					? " (expected ip:ADDR or ip:SRC,ip:DST)"
					: "");
			return TOOL_EXIT_USAGE;
		}
	}
	return 0;
}

/* The latency figures of @res from the histogram of its requests. */
void bench_res_lat(struct bench_res *res, const struct hist *all)
{
	res->lat_cnt = all->count;
	if (all->count) {
		res->min_us = (double)all->min / 1000;
		res->max_us = (double)all->max / 1000;
		res->mean_us = hist_mean(all) / 1000;
	}
	res->p50_us = hist_percentile(all, 50) / 1000;
	res->p90_us = hist_percentile(all, 90) / 1000;
	res->p99_us = hist_percentile(all, 99) / 1000;
	res->p999_us = hist_percentile(all, 99.9) / 1000;
	res->p9999_us = hist_percentile(all, 99.99) / 1000;
}

/**
 * bench_collect() - fill the result of a finished run
 * @b: the benchmark, its threads stopped and its session closed
 * @res: the result; time_s and the paths already filled
 */
static void bench_collect(struct bench *b, struct bench_res *res)
{
	struct hist *all;
	unsigned int i;

	res->read_ops = BENCH_SUM(b, read_ops);
	res->write_ops = BENCH_SUM(b, write_ops);
	res->ops = res->read_ops + res->write_ops;
	res->bytes = res->ops * b->cfg->bs;
	res->errors = BENCH_SUM(b, errors);
	res->aborted = BENCH_SUM(b, aborted);
	res->unknown_outcome = BENCH_SUM(b, unknown);
	res->signal = b->signal;
	res->verify_failures = BENCH_SUM(b, vfail);
	res->verified = BENCH_SUM(b, verified);
	res->cb_submits = BENCH_SUM(b, cb_submits);
	res->submitted = BENCH_SUM(b, submitted) + res->cb_submits;
	res->lost = res->submitted - BENCH_SUM(b, confs);
	res->max_gap_ms =
		(double)__atomic_load_n(&b->max_gap_ns, __ATOMIC_RELAXED) / 1e6;
	if (res->time_s > 0) {
		res->iops = (double)res->ops / res->time_s;
		res->mbps = (double)res->bytes / res->time_s / 1e6;
	}
	all = malloc(sizeof(*all));
	if (!all)
		return;
	hist_init(all);
	for (i = 0; i < b->nthreads; i++)
		hist_merge(all, &b->threads[i].hist);
	if (b->cfg->hist_out)
		hist_merge(b->cfg->hist_out, all);
	bench_res_lat(res, all);
	free(all);
}

/**
 * src_len() - length of a source address text without a ":0" port
 * @src: the text, "ADDR:PORT"
 * @size: size of the buffer holding @src
 *
 * Return: the number of bytes of @src to print.
 */
static size_t src_len(const char *src, size_t size)
{
	size_t n = strnlen(src, size - 1);

	if (n > 2 && !strcmp(src + n - 2, ":0"))
		n -= 2;
	return n;
}

/**
 * bench_session_stats() - read the session-wide at-most-once counters
 * @b: the benchmark
 * @res: the result to fill
 */
static void bench_session_stats(struct bench *b, struct bench_res *res)
{
	struct ibtrs_clt_stats st = { .size = sizeof(st) };

	if (ibtrs_clt_get_stats(b->sess, &st))
		return;
	res->session_losses = st.session_losses;
	res->replayed_after_loss = st.replayed_after_loss;
}

/**
 * bench_paths() - read the per-path counters of the session
 * @b: the benchmark
 * @res: the result to fill
 */
static void bench_paths(struct bench *b, struct bench_res *res)
{
	struct ibtrs_attrs attrs;
	unsigned int i, n;

	memset(&attrs, 0, sizeof(attrs));
	ibtrs_clt_query(b->sess, &attrs);
	n = attrs.path_cnt ? attrs.path_cnt : (unsigned int)b->cfg->path_cnt;
	if (n > IBTRS_MAX_PATHS)
		n = IBTRS_MAX_PATHS;
	res->path_cnt = 0;
	for (i = 0; i < n; i++) {
		struct bench_path_res *p = &res->paths[res->path_cnt];
		struct ibtrs_path_stats st;

		memset(&st, 0, sizeof(st));
		st.size = sizeof(st);
		if (ibtrs_clt_path_stats(b->sess, i, &st))
			continue;
		if (st.dst[0] && st.src[0])
			/* "SRC->DST", without the ":0" of a system chosen port
			 */
			snprintf(p->addr, sizeof(p->addr), "%.*s->%.*s",
				 (int)src_len(st.src, sizeof(st.src)), st.src,
				 (int)sizeof(st.dst) - 1, st.dst);
		else if (st.dst[0])
			snprintf(p->addr, sizeof(p->addr), "%.*s",
				 (int)sizeof(st.dst) - 1, st.dst);
		else if (i < b->cfg->path_cnt)
			snprintf(p->addr, sizeof(p->addr), "%s",
				 b->cfg->paths[i]);
		else
			snprintf(p->addr, sizeof(p->addr), "?");
		p->st = st;
		res->path_cnt++;
	}
	snprintf(res->policy, sizeof(res->policy), "%s",
		 ibtrs_mp_policy_str(ibtrs_clt_get_policy(b->sess)));
	if (b->cfg->events)
		res->event_cnt = ibtrs_clt_get_events(b->sess, res->events,
						      IBTRS_EVENT_LOG_LEN);
	bench_session_stats(b, res);
}

/**
 * bench_join() - wait for a submitter thread to finish
 * @t: the thread
 *
 * A thread drains for at most BENCH_DRAIN_NS, but it may be stuck waiting
 * for a tag that never comes back when the library loses requests; the
 * session cannot be closed under it, so give up on the whole process then.
 */
static void bench_join(struct bench_thread *t)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)((BENCH_DRAIN_NS + BENCH_JOIN_NS) / 1000000000ull);
	if (pthread_timedjoin_np(t->thread, NULL, &ts)) {
		tool_err("requests did not complete within %llu s, giving up",
			 (BENCH_DRAIN_NS + BENCH_JOIN_NS) / 1000000000ull);
		_exit(TOOL_EXIT_FAIL);
	}
}

/**
 * bench_tick_paths() - per-path part of a progress tick
 * @b: the benchmark
 * @tick: filled with the paths' states and their requests since the last
 *        tick
 * @last: per path, requests completed at the last tick; updated
 */
static void bench_tick_paths(struct bench *b, struct bench_tick *tick,
			     uint64_t *last)
{
	struct ibtrs_path_stats st;
	struct ibtrs_attrs attrs;
	unsigned int i, n;
	uint64_t ops;

	memset(&attrs, 0, sizeof(attrs));
	ibtrs_clt_query(b->sess, &attrs);
	n = attrs.path_cnt < IBTRS_MAX_PATHS ? attrs.path_cnt : IBTRS_MAX_PATHS;
	for (i = 0; i < n; i++) {
		memset(&st, 0, sizeof(st));
		st.size = sizeof(st);
		if (ibtrs_clt_path_stats(b->sess, i, &st)) {
			tick->path_state[i] = IBTRS_PATH_DEAD;
			tick->path_ops[i] = 0;
			continue;
		}
		ops = st.rd_ops + st.wr_ops;
		tick->path_state[i] = st.state;
		/* The counters may have been reset in between. */
		tick->path_ops[i] = ops >= last[i] ? ops - last[i] : ops;
		last[i] = ops;
	}
	tick->path_cnt = n;
}

/**
 * bench_tick_lat() - latency of the requests completed since the last tick
 * @b: the benchmark
 * @h: two scratch histograms
 * @max_us: set to the longest (the top of its bucket), 0 when none
 *
 * A request caught in a failover is one of thousands in its second: the
 * 99th percentile hides it, the maximum shows it.
 *
 * Return: the 99th percentile in microseconds, 0 when nothing completed.
 */
static double bench_tick_lat(struct bench *b, struct hist *h, double *max_us)
{
	unsigned int i;

	hist_init(&h[0]);
	for (i = 0; i < b->nthreads; i++) {
		struct bench_thread *t = &b->threads[i];

		hist_read(&h[1], &t->hist);
		hist_merge(&h[0], &h[1]);
		hist_sub(&h[0], &t->tick_prev);
		t->tick_prev = h[1];
	}
	*max_us = h[0].count ? hist_percentile(&h[0], 100) / 1000 : 0;
	return h[0].count ? hist_percentile(&h[0], 99) / 1000 : 0;
}

/**
 * struct bench_fv - the final read pass over the blocks an export run wrote
 * @b: the benchmark
 * @lock: protects @free, @inflight and the counters
 * @cond: signalled when a READ completes
 * @free: free READ slots
 * @inflight: READs in flight
 * @checked: blocks read and compared
 * @bad: of those, blocks with wrong data
 * @errors: READs that failed
 */
struct bench_fv {
	struct bench *b;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct bench_fv_req *free;
	unsigned int inflight;
	uint64_t checked;
	uint64_t bad;
	uint64_t errors;
};

/**
 * struct bench_fv_req - one READ of the final pass
 * @fv: the pass
 * @next: next free slot
 * @buf: bs bytes
 * @off: byte offset of the block
 * @seq: sequence number of its last WRITE
 */
struct bench_fv_req {
	struct bench_fv *fv;
	struct bench_fv_req *next;
	unsigned char *buf;
	uint64_t off;
	uint64_t seq;
};

static void bench_fv_done(void *priv, int err)
{
	struct bench_fv_req *r = priv;
	struct bench_fv *fv = r->fv;
	struct bench *b = fv->b;
	long bad = -1;

	if (!err)
		bad = pattern_check(r->buf, b->cfg->bs, r->off, r->seq);
	if (err)
		bench_report(b, "final READ at offset %llu failed: %s",
			     (unsigned long long)r->off, strerror(-err));
	else if (bad >= 0)
		bench_report(
			b,
			"verify failure: final READ at offset %llu differs at byte %ld from the last write",
			(unsigned long long)r->off, bad);
	pthread_mutex_lock(&fv->lock);
	if (err)
		fv->errors++;
	else if (bad >= 0)
		fv->bad++;
	else
		fv->checked++;
	r->next = fv->free;
	fv->free = r;
	fv->inflight--;
	pthread_cond_broadcast(&fv->cond);
	pthread_mutex_unlock(&fv->lock);
}

/**
 * bench_final_verify() - read back every block the run wrote (--export
 * --verify)
 * @b: the benchmark, its submitters joined
 * @res: gets the blocks checked; failures add to its counters later
 *       through the threads' (bench_collect())
 *
 * Whatever a WRITE stored and the export lost, or a failover wrote twice
 * over a later write, shows here: each block must hold the pattern of the
 * last WRITE that succeeded on it.
 */
static void bench_final_verify(struct bench *b, struct bench_res *res)
{
	uint32_t bs = b->cfg->bs, qd = b->cfg->qd;
	struct bench_fv_req *reqs;
	struct bench_fv fv = { .b = b };
	unsigned char *bufs;
	unsigned int i;
	uint64_t blk;

	reqs = calloc(qd, sizeof(*reqs));
	bufs = malloc((size_t)qd * bs);
	if (!reqs || !bufs) {
		free(reqs);
		free(bufs);
		tool_err("cannot allocate the final read pass: %s",
			 strerror(ENOMEM));
		__atomic_fetch_add(&b->threads[0].errors, 1, __ATOMIC_RELAXED);
		return;
	}
	pthread_mutex_init(&fv.lock, NULL);
	pthread_cond_init(&fv.cond, NULL);
	for (i = 0; i < qd; i++) {
		reqs[i].fv = &fv;
		reqs[i].buf = bufs + (size_t)i * bs;
		reqs[i].next = fv.free;
		fv.free = &reqs[i];
	}
	for (i = 0; i < b->nthreads; i++) {
		struct bench_thread *t = &b->threads[i];

		for (blk = 0; blk < t->nblks; blk++) {
			struct bench_fv_req *r;
			struct iovec sg;
			int ret;

			if (t->blk_seq[blk] == BLK_UNKNOWN)
				continue;
			pthread_mutex_lock(&fv.lock);
			while (!fv.free)
				pthread_cond_wait(&fv.cond, &fv.lock);
			r = fv.free;
			fv.free = r->next;
			fv.inflight++;
			pthread_mutex_unlock(&fv.lock);
			r->off = (t->first_blk + blk) * bs;
			r->seq = t->blk_seq[blk];
			memset(r->buf, 0xa5, bs);
			sg.iov_base = r->buf;
			sg.iov_len = bs;
			ret = ibnbd_submit(b->dev, IBNBD_OP_READ, 0, r->off, bs,
					   &sg, 1, bench_fv_done, r);
			if (ret)
				bench_fv_done(r, ret);
		}
	}
	pthread_mutex_lock(&fv.lock);
	while (fv.inflight)
		pthread_cond_wait(&fv.cond, &fv.lock);
	pthread_mutex_unlock(&fv.lock);
	res->final_verified = fv.checked + fv.bad;
	/* Counted with the run's: the exit status and the totals see them. */
	__atomic_fetch_add(&b->threads[0].vfail, fv.bad, __ATOMIC_RELAXED);
	__atomic_fetch_add(&b->threads[0].errors, fv.errors, __ATOMIC_RELAXED);
	pthread_cond_destroy(&fv.cond);
	pthread_mutex_destroy(&fv.lock);
	free(bufs);
	free(reqs);
}

/**
 * bench_open_export() - attach ibnbd to the session and open the export
 * @b: the benchmark, its session open
 * @res: gets the export's size and block size
 *
 * Return: 0, TOOL_EXIT_USAGE for a --bs the export cannot take, or
 * TOOL_EXIT_FAIL.
 */
static int bench_open_export(struct bench *b, struct bench_res *res)
{
	const struct bench_cfg *cfg = b->cfg;
	struct ibnbd_clt_opts o;
	int err;

	ibnbd_clt_opts_init(&o, sizeof(o));
	if (cfg->failover_timeout_ms)
		o.queue_timeout_ms = cfg->failover_timeout_ms;
	b->clt = ibnbd_clt_attach(b->sess, &o);
	if (!b->clt) {
		err = errno;
		tool_err("cannot start ibnbd on the session: %s%s",
			 strerror(err),
			 err == EPROTO || err == EOPNOTSUPP
				 ? " (does the server serve exports?)"
				 : "");
		return TOOL_EXIT_FAIL;
	}
	/* A pure read run can use a read-only export. */
	b->dev = ibnbd_dev_open(b->clt, cfg->export_name,
				bench_rw_reads_only(cfg->rw) ? IBNBD_ACCESS_RO
							     : IBNBD_ACCESS_RW,
				&b->geo);
	if (!b->dev) {
		err = errno;
		tool_err(
			"cannot open export '%s': %s", cfg->export_name,
			err == ENOENT ? "no such export on the server"
			: err == EACCES
				? "access denied: the server's --allow list does not let this client's identity open it"
				: strerror(err));
		return TOOL_EXIT_FAIL;
	}
	res->export_size = b->geo.size;
	res->export_lbs = b->geo.logical_block_size;
	if (cfg->bs % b->geo.logical_block_size ||
	    cfg->bs > b->geo.max_io_size) {
		tool_err(
			"--bs %u does not fit export '%s': a multiple of %u bytes up to %u is needed",
			cfg->bs, cfg->export_name, b->geo.logical_block_size,
			b->geo.max_io_size);
		return TOOL_EXIT_USAGE;
	}
	return 0;
}

/**
 * bench_close_export() - close the export and detach ibnbd, if open
 * @b: the benchmark
 */
static void bench_close_export(struct bench *b)
{
	int ret;

	if (b->dev) {
		ret = ibnbd_dev_close(b->dev);
		if (ret && !b->cfg->quiet)
			tool_err("warning: closing export '%s': %s",
				 b->cfg->export_name, strerror(-ret));
		b->dev = NULL;
	}
	if (b->clt) {
		ibnbd_clt_detach(b->clt);
		b->clt = NULL;
	}
}

/**
 * bench_wait_signal() - wait for SIGINT or SIGTERM, at most @ns
 * @b: the benchmark; @b->signal set when one came
 * @ns: longest wait
 *
 * Return: the signal, 0 when the time ran out.
 */
static int bench_wait_signal(struct bench *b, uint64_t ns)
{
	/* A session of a group: the group's thread takes the signals. */
	int sig = b->cfg->group
			  ? bench_group_wait(b->cfg->group, ns)
			  : tool_signal_wait((int)((ns + 999999) / 1000000),
					     NULL);

	if (sig)
		__atomic_store_n(&b->signal, sig, __ATOMIC_RELAXED);
	return sig;
}

/**
 * bench_geometry() - each submitter thread's share of the target
 * @cfg: the configuration
 * @nblks: blocks of the target
 * @per_thread: filled with the blocks of each thread (0: too few blocks)
 * @qd: filled with the requests each thread keeps in flight, at most one
 *      per block
 */
static void bench_geometry(const struct bench_cfg *cfg, uint64_t nblks,
			   uint64_t *per_thread, unsigned int *qd)
{
	if (cfg->parts > 1)
		nblks /= cfg->parts;
	*per_thread = nblks / cfg->threads;
	*qd = cfg->qd / cfg->threads;
	if (!*qd)
		*qd = 1;
	if (*qd > *per_thread)
		*qd = (unsigned int)*per_thread;
}

/**
 * struct bench_addrs - the parsed --path addresses, alive for the run
 * @src: source addresses
 * @dst: destination addresses
 * @paths: the pairs handed to the library
 */
struct bench_addrs {
	struct sockaddr_storage src[IBTRS_MAX_PATHS];
	struct sockaddr_storage dst[IBTRS_MAX_PATHS];
	struct ibtrs_addr paths[IBTRS_MAX_PATHS];
};

/**
 * bench_open() - open the session of a run
 * @b: the benchmark
 * @a: filled with the addresses of the paths
 *
 * Return: 0, or TOOL_EXIT_USAGE or TOOL_EXIT_FAIL after reporting why.
 */
static int bench_open(struct bench *b, struct bench_addrs *a)
{
	const struct bench_cfg *cfg = b->cfg;
	struct ibtrs_clt_opts opts;
	char sessname[NAME_MAX];
	int ret, err;

	ret = bench_parse_paths(cfg, a->paths, a->src, a->dst);
	if (ret)
		return ret;
	if (cfg->sessname)
		snprintf(sessname, sizeof(sessname), "%s", cfg->sessname);
	else
		snprintf(sessname, sizeof(sessname), "%s-bench-%d", TOOL_NAME,
			 (int)getpid());

	b->instance_id = (uint32_t)tool_random64();
	ibtrs_clt_opts_init(&opts, sizeof(opts));
	opts.priv = b;
	opts.link_ev = bench_link_ev;
	opts.sessname = sessname;
	opts.paths = a->paths;
	opts.path_cnt = cfg->path_cnt;
	opts.port = cfg->port;
	opts.reconnect_delay_sec = cfg->reconnect_delay_s;
	opts.max_reconnect_attempts = cfg->max_reconnects;
	opts.policy = cfg->policy;
	opts.backend = cfg->backend;
	if (cfg->hb_timeout_ms)
		opts.hb_timeout_ms = cfg->hb_timeout_ms;
	opts.failover_timeout_ms = cfg->failover_timeout_ms;
	if (cfg->io_cons)
		opts.io_cons = cfg->io_cons;
	opts.busy_poll_us = cfg->busy_poll_us;
	opts.busy_poll_adaptive = cfg->busy_poll_adaptive;
	opts.loop_threads = cfg->loop_threads;
	if (cfg->sec) {
		opts.tls = cfg->sec->tls;
		opts.tls_psk_file = cfg->sec->psk_file;
		opts.identity = cfg->sec->identity;
	}
	b->sess = ibtrs_clt_open_opts(&opts);
	if (b->sess)
		return 0;
	err = errno;
	if (err == EINVAL && cfg->backend)
		tool_err(
			"unknown or unavailable transport '%s' (tcp; ofi when built with libfabric)",
			cfg->backend);
	else if (cfg->path_cnt == 1)
		tool_err("cannot connect to %s (port %u): %s%s%s",
			 cfg->paths[0], cfg->port, strerror(err),
			 tool_sec_hint(cfg->sec, err, true),
			 tool_xprt_hint(cfg->backend, err));
	else
		tool_err(
			"cannot connect to any of %zu paths (%s, ...; port %u): %s%s%s",
			cfg->path_cnt, cfg->paths[0], cfg->port, strerror(err),
			tool_sec_hint(cfg->sec, err, true),
			tool_xprt_hint(cfg->backend, err));
	return TOOL_EXIT_FAIL;
}

/**
 * bench_target() - check the request size against the server and size
 * the run to the target
 * @b: the benchmark, its session open
 * @res: the result (the export's figures)
 * @per_thread: blocks per thread; updated for an export
 * @qd: requests in flight per thread; updated for an export
 *
 * Return: 0, or TOOL_EXIT_USAGE or TOOL_EXIT_FAIL after reporting why.
 */
static int bench_target(struct bench *b, struct bench_res *res,
			uint64_t *per_thread, unsigned int *qd)
{
	const struct bench_cfg *cfg = b->cfg;
	struct ibtrs_attrs attrs;
	int ret;

	memset(&attrs, 0, sizeof(attrs));
	ibtrs_clt_query(b->sess, &attrs);
	if (attrs.max_io_size && cfg->bs > attrs.max_io_size) {
		tool_err(
			"--bs %u exceeds the largest request of the server (%u bytes)",
			cfg->bs, attrs.max_io_size);
		return TOOL_EXIT_USAGE;
	}
	if (!cfg->export_name)
		return 0;
	ret = bench_open_export(b, res);
	if (ret)
		return ret;
	/* The export's size bounds the offsets. */
	bench_geometry(cfg, b->geo.size / cfg->bs, per_thread, qd);
	if (!*per_thread) {
		tool_err(
			"--bs %u too large for %u threads on export '%s' of %llu bytes",
			cfg->bs, cfg->threads, cfg->export_name,
			(unsigned long long)b->geo.size);
		return TOOL_EXIT_USAGE;
	}
	return 0;
}

/**
 * bench_alloc() - the state of the submitter threads
 * @b: the benchmark
 * @per_thread: blocks per thread
 * @qd: requests in flight per thread
 *
 * Return: 0, or TOOL_EXIT_FAIL after an error.
 */
static int bench_alloc(struct bench *b, uint64_t per_thread, unsigned int qd)
{
	unsigned int i;

	b->nthreads = b->cfg->threads;
	b->threads = calloc(b->nthreads, sizeof(*b->threads));
	for (i = 0; b->threads && i < b->nthreads; i++)
		if (bench_thread_init(b, &b->threads[i], i, per_thread, qd))
			break;
	if (!b->threads || i < b->nthreads) {
		tool_err("cannot allocate the benchmark: %s", strerror(ENOMEM));
		return TOOL_EXIT_FAIL;
	}
	return 0;
}

/**
 * bench_spawn() - start the submitter threads
 * @b: the benchmark, its threads allocated
 *
 * Return: the threads started, b->nthreads unless one could not be.
 */
static unsigned int bench_spawn(struct bench *b)
{
	unsigned int i;
	int err;

	for (i = 0; i < b->nthreads; i++) {
		err = pthread_create(&b->threads[i].thread, NULL, bench_worker,
				     &b->threads[i]);
		if (err) {
			tool_err("cannot start a thread: %s", strerror(err));
			break;
		}
	}
	return i;
}

/**
 * struct bench_ticker - what the once-a-second progress compares with
 * @start: start of the run, CLOCK_MONOTONIC nanoseconds
 * @last_ns: time of the last tick
 * @last_ops: requests completed at the last tick
 * @last_path_ops: per path, requests completed at the last tick
 * @hist: two scratch histograms (bench_tick_lat())
 */
struct bench_ticker {
	uint64_t start;
	uint64_t last_ns;
	uint64_t last_ops;
	uint64_t last_path_ops[IBTRS_MAX_PATHS];
	struct hist hist[2];
};

/**
 * bench_tick() - report the progress of the last second
 * @b: the benchmark
 * @tk: the previous tick; updated
 * @now: the time
 */
static void bench_tick(struct bench *b, struct bench_ticker *tk, uint64_t now)
{
	const struct bench_cfg *cfg = b->cfg;
	struct bench_tick tick;
	uint64_t ops = BENCH_SUM(b, read_ops) + BENCH_SUM(b, write_ops);
	double dt = (double)(now - tk->last_ns) / 1e9;

	struct timespec rt;

	memset(&tick, 0, sizeof(tick));
	clock_gettime(CLOCK_REALTIME, &rt);
	tick.real_ns =
		(uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec;
	tick.dt = dt;
	tick.elapsed = (double)(now - tk->start) / 1e9;
	tick.ops = ops;
	tick.iops = (double)(ops - tk->last_ops) / dt;
	tick.mbps = tick.iops * cfg->bs / 1e6;
	tick.p99_us = bench_tick_lat(b, tk->hist, &tick.max_us);
	tick.errors = BENCH_SUM(b, errors);
	tick.verify_failures = BENCH_SUM(b, vfail);
	tick.sess = b->sess;
	bench_tick_paths(b, &tick, tk->last_path_ops);
	if (cfg->progress)
		cfg->progress(cfg->progress_arg, &tick);
	tk->last_ops = ops;
	tk->last_ns = now;
}

/**
 * bench_wait() - let the run go for its time, ticking once a second
 * @b: the benchmark, its threads started
 * @tk: the ticker, its @start set
 *
 * Return: when the time is over or SIGINT or SIGTERM came.
 */
static void bench_wait(struct bench *b, struct bench_ticker *tk)
{
	uint64_t end = tk->start + (uint64_t)(b->cfg->time_s * 1e9);
	uint64_t next_tick = tk->start + 1000000000ull;

	tk->last_ns = tk->start;
	/* A signal taken while the server was asked for its CPU time. */
	if (__atomic_load_n(&b->signal, __ATOMIC_RELAXED))
		return;
	for (;;) {
		uint64_t now = tool_now_ns();
		uint64_t until = next_tick < end ? next_tick : end;

		if (now >= end) {
			/* A run of whole seconds has its last second, too. */
			if (next_tick <= end)
				bench_tick(b, tk, now);
			break;
		}
		if (now < until && bench_wait_signal(b, until - now))
			break;
		now = tool_now_ns();
		if (now >= next_tick && now < end) {
			bench_tick(b, tk, now);
			while (next_tick <= now)
				next_tick += 1000000000ull;
		}
	}
}

/**
 * bench_stop() - stop the submitters and wait for them
 * @b: the benchmark
 * @started: threads started
 */
static void bench_stop(struct bench *b, unsigned int started)
{
	unsigned int i;

	__atomic_store_n(&b->stop, 1, __ATOMIC_RELEASE);
	/* The time from the last completion to the end is a gap, too. */
	if (__atomic_load_n(&b->last_done_ns, __ATOMIC_RELAXED))
		bench_note_gap(b, tool_now_ns());
	for (i = 0; i < b->nthreads; i++) {
		pthread_mutex_lock(&b->threads[i].lock);
		pthread_cond_broadcast(&b->threads[i].cond);
		pthread_mutex_unlock(&b->threads[i].lock);
	}
	for (i = 0; i < started; i++)
		bench_join(&b->threads[i]);
}

/**
 * struct bench_cpu - CPU time at the start of a run, microseconds
 * @clt_user: this process, user
 * @clt_sys: this process, system
 * @srv_ok: the server reported its CPU time
 * @srv_user: the server, user
 * @srv_sys: the server, system
 */
struct bench_cpu {
	uint64_t clt_user, clt_sys;
	bool srv_ok;
	uint64_t srv_user, srv_sys;
};

/**
 * bench_cpu_start() - take the CPU times at the start of a run
 * @b: the benchmark
 * @c: filled with the times
 */
static void bench_cpu_start(struct bench *b, struct bench_cpu *c)
{
	memset(c, 0, sizeof(*c));
	c->srv_ok = !bench_srv_cpu(b, &c->srv_user, &c->srv_sys);
	tool_cpu_us(&c->clt_user, &c->clt_sys);
}

/**
 * bench_cpu_end() - the CPU time of this process during a run
 * @c: the times at the start
 * @res: the result
 */
static void bench_cpu_end(const struct bench_cpu *c, struct bench_res *res)
{
	uint64_t user, sys;

	tool_cpu_us(&user, &sys);
	res->clt_user_s = (double)(user - c->clt_user) / 1e6;
	res->clt_sys_s = (double)(sys - c->clt_sys) / 1e6;
}

/**
 * bench_srv_cpu_end() - the server's CPU time of a run
 * @b: the benchmark
 * @c: the times at the start
 * @res: the result, its paths filled (bench_paths())
 *
 * Asked only over a connected path, and not after a signal that left
 * requests in flight: the answer must not wait for a reconnect or a
 * failover timeout.
 */
static void bench_srv_cpu_end(struct bench *b, const struct bench_cpu *c,
			      struct bench_res *res)
{
	uint64_t user, sys, stuck = 0;
	unsigned int k;
	size_t i;

	/* Stopped by a signal with requests still unanswered: the server
	 * is not answering now, and the 2 s to end in are not for it. */
	if (__atomic_load_n(&b->signal, __ATOMIC_RELAXED)) {
		for (k = 0; b->threads && k < b->nthreads; k++) {
			pthread_mutex_lock(&b->threads[k].lock);
			stuck += b->threads[k].inflight;
			pthread_mutex_unlock(&b->threads[k].lock);
		}
		if (stuck)
			return;
	}

	for (i = 0; i < res->path_cnt && c->srv_ok; i++) {
		if (res->paths[i].st.state != IBTRS_PATH_CONNECTED)
			continue;
		if (!bench_srv_cpu(b, &user, &sys)) {
			res->srv_cpu = true;
			res->srv_user_s = (double)(user - c->srv_user) / 1e6;
			res->srv_sys_s = (double)(sys - c->srv_sys) / 1e6;
		}
		break;
	}
}

/**
 * bench_qd() - the requests that can really be in flight
 * @b: the benchmark, its session open
 * @res: res->qd is set
 * @qd: requests each thread keeps in flight
 *
 * Every request holds one of the session's tags (the server's chunks), so
 * the queue depth the server granted bounds what is in flight, whatever
 * was asked; so can the target's size. Said once, unless quiet, so that a
 * figure the run did not have is not reported.
 */
static void bench_qd(struct bench *b, struct bench_res *res, unsigned int qd)
{
	const struct bench_cfg *cfg = b->cfg;
	struct ibtrs_attrs attrs;
	uint64_t n = (uint64_t)qd * cfg->threads;

	memset(&attrs, 0, sizeof(attrs));
	if (!ibtrs_clt_query(b->sess, &attrs) && attrs.queue_depth &&
	    attrs.queue_depth < n)
		n = attrs.queue_depth;
	res->qd = (uint32_t)(n < cfg->qd ? n : cfg->qd);
	if (res->qd < cfg->qd && !cfg->quiet)
		tool_err(
			"warning: --iodepth %u: at most %u requests in flight (%s)",
			cfg->qd, res->qd,
			res->qd == attrs.queue_depth
				? "the session's queue depth, set by the server"
				: "the target's blocks per thread");
}

/**
 * bench_run() - run a benchmark
 * @cfg: what to run
 * @res: filled with the result
 *
 * Blocks for @cfg->time_s seconds, or until SIGINT or SIGTERM (which the
 * caller must have blocked, see tool_signals_init()).
 *
 * Return: 0 when the run took place (failed requests are counted in @res),
 * TOOL_EXIT_USAGE or TOOL_EXIT_FAIL after reporting why it could not.
 */
int bench_run(const struct bench_cfg *cfg, struct bench_res *res)
{
	struct bench b = { .cfg = cfg };
	struct bench_ticker *tk = NULL;
	struct bench_addrs addrs;
	struct bench_cpu cpu;
	unsigned int i, qd, started = 0;
	bool ready = false;
	uint64_t per_thread;
	int ret;

	memset(res, 0, sizeof(*res));
	if (!cfg->path_cnt || cfg->path_cnt > IBTRS_MAX_PATHS || !cfg->bs ||
	    !cfg->threads || !cfg->qd) {
		tool_err("invalid benchmark configuration");
		return TOOL_EXIT_USAGE;
	}
	bench_geometry(cfg, TOOL_TARGET_SIZE / cfg->bs, &per_thread, &qd);
	if (!per_thread && !cfg->export_name) {
		tool_err(
			"--bs %u too large for %u threads on a %llu MiB target",
			cfg->bs, cfg->threads, TOOL_TARGET_SIZE >> 20);
		return TOOL_EXIT_USAGE;
	}
	ret = bench_open(&b, &addrs);
	if (ret) {
		if (cfg->group)
			bench_group_ready(cfg->group);
		return ret;
	}
	ret = bench_target(&b, res, &per_thread, &qd);
	if (ret)
		goto out_close;
	bench_qd(&b, res, qd);

	ret = TOOL_EXIT_FAIL;
	tk = calloc(1, sizeof(*tk));
	if (!tk) {
		tool_err("cannot allocate the benchmark: %s", strerror(ENOMEM));
		goto out_close;
	}
	if (bench_alloc(&b, per_thread, qd))
		goto out_close;
	/* The sessions of a group start together, once all are open. */
	if (cfg->group) {
		bench_group_ready(cfg->group);
		ready = true;
	}
	bench_cpu_start(&b, &cpu);
	tk->start = tool_now_ns();
	started = bench_spawn(&b);
	if (started == b.nthreads)
		bench_wait(&b, tk);
	bench_stop(&b, started);
	res->time_s = (double)(tool_now_ns() - tk->start) / 1e9;
	if (b.dev && cfg->verify && started == b.nthreads)
		bench_final_verify(&b, res);
	bench_cpu_end(&cpu, res);
	bench_paths(&b, res);
	bench_srv_cpu_end(&b, &cpu, res);
	if (started == b.nthreads)
		ret = 0;

out_close:
	if (cfg->group && !ready)
		bench_group_ready(cfg->group);
	/* Aborts what did not drain; callbacks still see the threads. An
	 * export's close waits for its requests instead. */
	__atomic_store_n(&b.closing, 1, __ATOMIC_RELEASE);
	bench_close_export(&b);
	ibtrs_clt_close(b.sess);
	if (!ret)
		bench_collect(&b, res);
	for (i = 0; b.threads && i < b.nthreads; i++)
		bench_thread_free(&b.threads[i]);
	free(b.threads);
	free(tk);
	return ret;
}
