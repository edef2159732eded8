// SPDX-License-Identifier: MIT
/*
 * swmr.c - software memory registration: a peer's access is checked
 * against the key and the bounds of the region and resolved to where the
 * bytes go; and it stays right while the owner maps and unmaps the region
 * from another thread (accesses take no lock: they read the region under a
 * sequence count). Keys are not the same in two processes: they start at
 * random (a process of before issued the same keys as every other).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "swmr.h"
#include "test.h"

#define BIG 8192
#define NSMALL 64 /* layout B: NSMALL iovecs of SMALL bytes */
#define SMALL (BIG / NSMALL)

static char buf_a[BIG], buf_b[BIG];
static struct iovec lay_a[1], lay_b[NSMALL];

static void layouts_init(void)
{
	unsigned int i;

	lay_a[0].iov_base = buf_a;
	lay_a[0].iov_len = BIG;
	for (i = 0; i < NSMALL; i++) {
		lay_b[i].iov_base = buf_b + i * SMALL;
		lay_b[i].iov_len = SMALL;
	}
}

/*
 * Whether @n iovecs in @dst are what an access of @len bytes at @raddr of
 * the layout @b (false: A) resolves to.
 */
static bool resolved_right(bool b, uint64_t raddr, size_t len,
			   const struct iovec *dst, int n)
{
	char *at = (b ? buf_b : buf_a) + raddr;
	size_t done = 0;
	int i;

	if (n <= 0)
		return false;
	for (i = 0; i < n; i++) {
		if ((char *)dst[i].iov_base != at + done || !dst[i].iov_len)
			return false;
		/* Layout B's pieces end at SMALL boundaries. */
		if (b && i + 1 < n &&
		    (raddr + done + dst[i].iov_len) % SMALL != 0)
			return false;
		if (!b && n != 1)
			return false;
		done += dst[i].iov_len;
	}
	return done == len;
}

static void check_basic(void)
{
	struct ibtrs_xprt_pd *pd;
	struct ibtrs_xprt_mr *mr, *mr2;
	struct iovec dst[NSMALL];
	uint32_t key;

	CHECK_EQ(swmr_pd_alloc(&pd, 4), 0);
	CHECK_EQ(swmr_mr_alloc(pd, NSMALL, &mr), 0);
	CHECK_EQ(swmr_mr_alloc(pd, 1, &mr2), 0);
	CHECK_EQ(swmr_mr_map(mr2, lay_b, 2), -EINVAL); /* over max_sge */

	CHECK_EQ(swmr_mr_map(mr, lay_b, NSMALL), 0);
	key = mr->key;
	CHECK_EQ(mr->addr, 0);
	/* Across piece boundaries, from an odd offset. */
	CHECK(resolved_right(true, SMALL - 3, 3 * SMALL, dst,
			     swmr_resolve(pd, key, SMALL - 3, 3 * SMALL, dst,
					  NSMALL)));
	CHECK(resolved_right(true, 0, BIG, dst,
			     swmr_resolve(pd, key, 0, BIG, dst, NSMALL)));
	/* Zero bytes at the end are in bounds; one more is not. */
	CHECK_EQ(swmr_resolve(pd, key, BIG, 0, dst, NSMALL), 0);
	CHECK_EQ(swmr_resolve(pd, key, BIG - 1, 2, dst, NSMALL), -EPROTO);
	CHECK_EQ(swmr_resolve(pd, key, BIG + 1, 0, dst, NSMALL), -EPROTO);
	CHECK_EQ(swmr_resolve(pd, key, UINT64_MAX, 1, dst, NSMALL), -EPROTO);
	/* More pieces than the caller has room for. */
	CHECK_EQ(swmr_resolve(pd, key, 0, 3 * SMALL, dst, 2), -EPROTO);
	/* Wrong generation, wrong slot, slot out of range. */
	CHECK_EQ(swmr_resolve(pd, key ^ 0x10000, 0, 1, dst, 1), -EPROTO);
	CHECK_EQ(swmr_resolve(pd, mr2->key, 0, 1, dst, 1), -EPROTO);
	CHECK_EQ(swmr_resolve(pd, (key & ~0xffffu) | 3, 0, 1, dst, 1), -EPROTO);
	CHECK_EQ(swmr_resolve(pd, (key & ~0xffffu) | 9, 0, 1, dst, 1), -EPROTO);

	/* Unmapped: the key is dead; mapped again: a new key, the old one
	 * stays dead. */
	swmr_mr_unmap(mr);
	CHECK_EQ(swmr_resolve(pd, key, 0, 1, dst, 1), -EPROTO);
	CHECK_EQ(swmr_mr_map(mr, lay_a, 1), 0);
	CHECK(mr->key != key);
	CHECK_EQ(swmr_resolve(pd, key, 0, 1, dst, 1), -EPROTO);
	CHECK(resolved_right(false, 100, 4000, dst,
			     swmr_resolve(pd, mr->key, 100, 4000, dst, 1)));

	swmr_mr_free(mr2);
	swmr_mr_free(mr);
	swmr_pd_free(pd);
}

/* The slot of @mr in its pd: the low bits of its key, once mapped. */
static unsigned int slot_of(struct ibtrs_xprt_mr *mr)
{
	CHECK_EQ(swmr_mr_map(mr, lay_a, 1), 0);
	return mr->key & 0xffff;
}

/*
 * A registration takes the lowest free slot (the pd keeps a hint of it,
 * so that a session's queue depth of registrations is not quadratic):
 * the slots freed below the hint are found again, a full table says so.
 */
static void check_slots(void)
{
	struct ibtrs_xprt_pd *pd;
	struct ibtrs_xprt_mr *mr[4], *extra;
	unsigned int i;

	CHECK_EQ(swmr_pd_alloc(&pd, 4), 0);
	for (i = 0; i < 4; i++) {
		CHECK_EQ(swmr_mr_alloc(pd, 1, &mr[i]), 0);
		CHECK_EQ(slot_of(mr[i]), i);
	}
	CHECK_EQ(swmr_mr_alloc(pd, 1, &extra), -ENOSPC);
	swmr_mr_free(mr[2]);
	swmr_mr_free(mr[1]);
	CHECK_EQ(swmr_mr_alloc(pd, 1, &mr[1]), 0);
	CHECK_EQ(slot_of(mr[1]), 1);
	CHECK_EQ(swmr_mr_alloc(pd, 1, &mr[2]), 0);
	CHECK_EQ(slot_of(mr[2]), 2);
	CHECK_EQ(swmr_mr_alloc(pd, 1, &extra), -ENOSPC);
	swmr_mr_free(mr[0]);
	swmr_mr_free(mr[3]);
	CHECK_EQ(swmr_mr_alloc(pd, 1, &mr[0]), 0);
	CHECK_EQ(slot_of(mr[0]), 0);
	CHECK_EQ(swmr_mr_alloc(pd, 1, &mr[3]), 0);
	CHECK_EQ(slot_of(mr[3]), 3);
	for (i = 0; i < 4; i++)
		swmr_mr_free(mr[i]);
	swmr_pd_free(pd);
}

/*
 * The layout of a mapping follows from its key: B for an odd generation
 * (key >> 16), A for an even one. Generations go up by one per map, 0
 * skipped, so the owner knows which one the next map gets.
 */
static bool layout_of(uint32_t key)
{
	return (key >> 16) & 1;
}

static _Atomic uint32_t published; /* the key of the last map */
static atomic_bool done;
static struct ibtrs_xprt_mr *race_mr;
static unsigned long maps;

static void *owner(void *arg)
{
	(void)arg;
	while (!atomic_load(&done)) {
		uint16_t gen = (uint16_t)((race_mr->key >> 16) + 1);
		bool b = layout_of((uint32_t)(gen ? gen : 1) << 16);

		swmr_mr_unmap(race_mr);
		if (swmr_mr_map(race_mr, b ? lay_b : lay_a, b ? NSMALL : 1))
			break;
		CHECK_EQ(layout_of(race_mr->key), b);
		atomic_store(&published, race_mr->key);
		maps++;
	}
	return NULL;
}

/*
 * A peer accesses the region while its owner maps it, one layout then the
 * other, as fast as it can: every access that succeeds must resolve as the
 * layout of the key it used, never a mix of two mappings.
 */
static void check_race(void)
{
	struct ibtrs_xprt_pd *pd;
	struct iovec dst[NSMALL];
	unsigned long ok = 0, refused = 0, n;
	double end = t_now() + 1.5;
	pthread_t th;
	uint32_t key;

	CHECK_EQ(swmr_pd_alloc(&pd, 1), 0);
	CHECK_EQ(swmr_mr_alloc(pd, NSMALL, &race_mr), 0);
	CHECK_EQ(swmr_mr_map(race_mr, layout_of(race_mr->key) ? lay_b : lay_a,
			     layout_of(race_mr->key) ? NSMALL : 1),
		 0);
	atomic_store(&published, race_mr->key);
	CHECK_EQ(pthread_create(&th, NULL, owner, NULL), 0);
	for (n = 0; !(n & 1023) ? t_now() < end : true; n++) {
		uint64_t raddr = (n * 131) % (BIG - 4096);
		int r;

		key = atomic_load(&published);
		r = swmr_resolve(pd, key, raddr, 4096, dst, NSMALL);
		if (r == -EPROTO) {
			refused++;
			continue;
		}
		if (!resolved_right(layout_of(key), raddr, 4096, dst, r)) {
			fprintf(stderr,
				"access %lu with key %#x resolved to a mix of mappings (%d iovecs)\n",
				n, key, r);
			exit(1);
		}
		ok++;
	}
	atomic_store(&done, true);
	pthread_join(th, NULL);
	printf("race: %lu maps, %lu accesses resolved, %lu refused (key gone)\n",
	       maps, ok, refused);
	/* The owner stopped: its last mapping stays. */
	key = race_mr->key;
	CHECK(resolved_right(layout_of(key), 5, 4096, dst,
			     swmr_resolve(pd, key, 5, 4096, dst, NSMALL)));
	CHECK(maps > 0);
	swmr_mr_free(race_mr);
	swmr_pd_free(pd);
}

/* The key of the first region mapped in a fresh process. */
static uint32_t first_key_of_child(void)
{
	struct ibtrs_xprt_pd *pd;
	struct ibtrs_xprt_mr *mr;
	uint32_t key = 0;
	int p[2], st;
	pid_t pid;

	CHECK(!pipe(p));
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		close(p[0]);
		if (swmr_pd_alloc(&pd, 4) || swmr_mr_alloc(pd, 1, &mr) ||
		    swmr_mr_map(mr, lay_a, 1))
			_exit(1);
		_exit(write(p[1], &mr->key, sizeof(mr->key)) == sizeof(mr->key)
			      ? 0
			      : 1);
	}
	close(p[1]);
	CHECK(read(p[0], &key, sizeof(key)) == sizeof(key));
	close(p[0]);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st));
	return key;
}

/* Eight processes: with random starts, not all the same key (the chance
 * that they are is 2^-112). */
static void check_random_keys(void)
{
	uint32_t k0 = first_key_of_child();
	bool differ = false;
	int i;

	for (i = 0; i < 7; i++)
		differ |= first_key_of_child() != k0;
	CHECK(differ);
}

int main(void)
{
	t_watchdog(60);
	layouts_init();
	check_basic();
	check_slots();
	check_race();
	check_random_keys();
	printf("swmr: ok\n");
	return 0;
}
