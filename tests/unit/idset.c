// SPDX-License-Identifier: MIT
/*
 * idset.c - the server's set of request ids: every id it was given is
 * found again, no id it was not given is, whatever the shape of the ids;
 * at its memory limit it stops adding, says so once, and still finds the
 * ids it holds.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "idset.h"
#include "test.h"

static bool seen(struct idset *s, uint64_t id)
{
	bool now_full = false, r = idset_seen(s, id, &now_full);

	CHECK(!now_full);
	return r;
}

static uint64_t count_of(struct idset *s)
{
	uint64_t n;
	bool full;

	idset_stats(s, &n, &full);
	CHECK(!full);
	return n;
}

/* Two client instances, their sequence numbers in order and interleaved. */
static void check_dense(struct idset *s)
{
	const uint64_t a = (uint64_t)0xdeadbeef << 32, b = (uint64_t)7 << 32;
	uint64_t i;

	for (i = 1; i <= 200000; i++)
		CHECK(!seen(s, a | i));
	for (i = 1; i <= 200000; i++) {
		CHECK(seen(s, a | i));
		CHECK(!seen(s, b | i)); /* same low half, other instance */
	}
	for (i = 1; i <= 200000; i++)
		CHECK(seen(s, b | i));
	CHECK(!seen(s, a | 200001));
	CHECK_EQ(count_of(s), 400001);
}

/* Low halves at chunk edges and the ends of their range. */
static void check_edges(struct idset *s)
{
	static const uint32_t lo[] = { 0,
				       1,
				       63,
				       64,
				       IDSET_CHUNK_IDS - 1,
				       IDSET_CHUNK_IDS,
				       IDSET_CHUNK_IDS + 1,
				       0x7fffffff,
				       0xfffffffe,
				       0xffffffff };
	const uint64_t hi = (uint64_t)0x55aa << 32;
	unsigned int i, j;

	for (i = 0; i < sizeof(lo) / sizeof(lo[0]); i++) {
		CHECK(!seen(s, hi | lo[i]));
		for (j = 0; j <= i; j++)
			CHECK(seen(s, hi | lo[j]));
	}
	/* Neighbours of the ids stay unseen. */
	CHECK(!seen(s, hi | 2));
	CHECK(!seen(s, hi | 62));
	CHECK(!seen(s, (uint64_t)0xffffffff << 32));
	CHECK(!seen(s, UINT64_MAX - 2));
}

/* Ids of no particular shape: random 64-bit values. */
static void check_random(struct idset *s)
{
	const unsigned long long seed = 0x1234567887654321ull;
	unsigned long long rs = seed;
	uint64_t before = count_of(s);
	unsigned int i;

	for (i = 0; i < 5000; i++)
		CHECK(!seen(s, t_rand(&rs) | 1));
	rs = seed; /* the same ids again */
	for (i = 0; i < 5000; i++)
		CHECK(seen(s, t_rand(&rs) | 1));
	CHECK_EQ(count_of(s), before + 5000);
}

/*
 * Ids far apart cost a chunk each (IDSET_CHUNK_IDS bits and a key): the
 * limit comes after a million or so. The id that finds the set full says
 * so, once; it and later new ids are not remembered, those before it are
 * still found.
 */
static void check_full(struct idset *s)
{
	uint64_t hi, n, first = (uint64_t)1 << 32;
	bool now_full = false, full;
	unsigned int reports = 0;

	for (hi = 1; hi < (1u << 24) && !reports; hi++) {
		CHECK(!idset_seen(s, hi << 32 | 5, &now_full));
		reports += now_full;
	}
	CHECK_EQ(reports, 1);
	printf("full after %llu instances\n", (unsigned long long)hi - 1);
	/* At least a quarter of the limit holds chunks. */
	CHECK(hi - 1 >= IDSET_MAX_BYTES / 4 / (IDSET_CHUNK_IDS / 8 + 8));
	idset_stats(s, &n, &full);
	CHECK(full);
	CHECK_EQ(n, hi - 2); /* the last one was not added */
	now_full = false;
	CHECK(!idset_seen(s, (hi - 1) << 32 | 5, &now_full));
	CHECK(!now_full); /* said once only */
	CHECK(idset_seen(s, first | 5, &now_full));
	CHECK(idset_seen(s, (hi - 2) << 32 | 5, &now_full));
	CHECK(!idset_seen(s, first | 6, &now_full));
	CHECK(!idset_seen(s, first | 6, &now_full)); /* not remembered */
	idset_stats(s, &n, &full);
	CHECK_EQ(n, hi - 2);
	CHECK(!now_full);
}

int main(void)
{
	struct idset s;

	t_watchdog(120);
	idset_init(&s);
	check_dense(&s);
	check_edges(&s);
	check_random(&s);

	/* Emptied, it holds nothing and works again. */
	idset_free(&s);
	CHECK_EQ(count_of(&s), 0);
	CHECK(!seen(&s, (uint64_t)0xdeadbeef << 32 | 1));
	CHECK(seen(&s, (uint64_t)0xdeadbeef << 32 | 1));
	idset_free(&s);

	check_full(&s);
	idset_free(&s);
	CHECK_EQ(count_of(&s), 0);
	printf("idset: ok\n");
	return 0;
}
