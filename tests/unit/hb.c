// SPDX-License-Identifier: MIT
/*
 * hb.c - unit tests of the heartbeat rule both sides share.
 */
#include <stdint.h>

#include "hb.h"
#include "test.h"

#define MS 1000000ull

static void test_init(void)
{
	struct ibtrs_hb hb;

	ibtrs_hb_init(&hb, 1000);
	CHECK_EQ(hb.timeout_ns, 1000 * MS);
	CHECK_EQ(hb.interval_ns, 250 * MS);
	CHECK_EQ(hb.tick_ns, 100 * MS);
}

static void test_tick(void)
{
	struct ibtrs_hb hb;
	uint64_t t0 = 5000 * MS, tx = t0;
	char why[64] = "";

	ibtrs_hb_init(&hb, 1000);
	/* Just heard from, just sent: nothing to do. */
	CHECK_EQ(ibtrs_hb_tick(&hb, t0 + 10 * MS, t0, &tx, true, why,
			       sizeof(why)),
		 IBTRS_HB_NONE);
	CHECK_EQ(tx, t0);
	/* An interval later: send, and the send is recorded. */
	CHECK_EQ(ibtrs_hb_tick(&hb, t0 + 250 * MS, t0, &tx, true, why,
			       sizeof(why)),
		 IBTRS_HB_SEND);
	CHECK_EQ(tx, t0 + 250 * MS);
	CHECK_EQ(ibtrs_hb_tick(&hb, t0 + 260 * MS, t0, &tx, true, why,
			       sizeof(why)),
		 IBTRS_HB_NONE);
	/* Not allowed to send: nothing, and no send recorded. */
	CHECK_EQ(ibtrs_hb_tick(&hb, t0 + 600 * MS, t0, &tx, false, why,
			       sizeof(why)),
		 IBTRS_HB_NONE);
	CHECK_EQ(tx, t0 + 250 * MS);
	/* Silent for exactly timeout - tick: still alive. */
	CHECK(ibtrs_hb_tick(&hb, t0 + 900 * MS, t0, &tx, true, why,
			    sizeof(why)) != IBTRS_HB_DEAD);
	CHECK(!why[0]);
	/* One nanosecond more: the next tick would come too late. */
	CHECK_EQ(ibtrs_hb_tick(&hb, t0 + 900 * MS + 1, t0, &tx, true, why,
			       sizeof(why)),
		 IBTRS_HB_DEAD);
	CHECK(!strcmp(why, "heartbeat timeout: nothing received for 900 ms"));
	/* Dead wins over a heartbeat that is due, and over may_send. */
	tx = 0;
	CHECK_EQ(ibtrs_hb_tick(&hb, t0 + 2000 * MS, t0, &tx, false, why,
			       sizeof(why)),
		 IBTRS_HB_DEAD);
	CHECK(!strcmp(why, "heartbeat timeout: nothing received for 2000 ms"));
	CHECK_EQ(tx, 0);
}

int main(void)
{
	test_init();
	test_tick();
	return 0;
}
