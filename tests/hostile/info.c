// SPDX-License-Identifier: MIT
/*
 * info.c - attacks on the session setup (INFO).
 *
 * A session's first SEND must be its INFO_REQ on connection 0 once all its
 * connections are there, once: junk, empty, badly named, early, repeated
 * or misplaced INFO requests, requests before INFO, and a second path
 * naming its session differently must each be closed alone.
 */
#include "hostile.h"

static void case_send_without_info(void)
{
	unsigned char junk[sizeof(struct ibtrs_msg_info_req)];
	struct atk a;

	/* Not an INFO_REQ in the INFO receive. */
	atk_open(&a, "", 1, false);
	rnd_bytes(junk, sizeof(junk));
	send_frame(a.fd[0], TCP_OP_SEND, 0, 0, 0, sizeof(junk), 0, 0, junk,
		   sizeof(junk));
	atk_expect_closed(&a);

	/* An empty SEND for the INFO receive. */
	atk_open(&a, "", 1, false);
	send_frame(a.fd[0], TCP_OP_SEND, 0, 0, 0, 0, 0, 0, NULL, 0);
	atk_expect_closed(&a);

	/* An INFO_REQ with a bad name ('/'). */
	atk_open(&a, "", 1, false);
	atk_send_info(&a, 0, "a/b");
	atk_expect_closed(&a);

	/* INFO_REQ before all connections of the path are there. */
	atk_init(&a);
	a.fd[0] = atk_con(&a, 0, 2, true);
	CHECK(a.fd[0] >= 0);
	atk_send_info(&a, 0, "atk-early");
	atk_expect_closed(&a);

	/* A SEND on a connection with no INFO receive: whole path closed. */
	atk_open(&a, "", 2, false);
	send_frame(a.fd[1], TCP_OP_SEND, 0, 0, 0, 0, 0, 0, NULL, 0);
	atk_expect_closed(&a);
	atk_open(&a, "", 2, false);
	atk_send_info(&a, 1, "atk-info-on-1");
	atk_expect_closed(&a);

	/* The same after INFO, on con 0 and con 1. */
	atk_open(&a, "atk-after", 2, true);
	atk_ping(&a, 1, 0);
	send_frame(a.fd[0], TCP_OP_SEND, 0, 0, 0, 0, 0, 0, NULL, 0);
	atk_expect_closed(&a);
	atk_open(&a, "atk-after", 2, true);
	atk_ping(&a, 0, 0);
	atk_send_info(&a, 1, "atk-after");
	atk_expect_closed(&a);
}

static void case_req_before_info(void)
{
	struct atk a;

	atk_open(&a, "", 1, false);
	send_frame(a.fd[0], TCP_OP_WRITE_IMM, 0, 0,
		   ibtrs_imm_req(0, 0, a.off_bits), 0, 0, 0, NULL, 0);
	atk_expect_closed(&a);

	/* On an I/O connection of a path whose INFO has not come yet. */
	atk_open(&a, "", 2, false);
	send_frame(a.fd[1], TCP_OP_WRITE_IMM, 0, 0,
		   ibtrs_imm_req(1, 0, a.off_bits), 0, 0, 0, NULL, 0);
	atk_expect_closed(&a);

	/* A WRITE into a region before INFO, with a guessed key. */
	atk_open(&a, "", 1, false);
	send_frame(a.fd[0], TCP_OP_WRITE, 0, 0, 0, 8, 0x10000, 0, "guessed!",
		   8);
	atk_expect_closed(&a);
}

static void case_dup_info(void)
{
	struct atk a;

	atk_open(&a, "", 1, false);
	atk_send_info(&a, 0, "atk-dupinfo");
	atk_send_info(&a, 0, "atk-dupinfo");
	atk_expect_closed(&a); /* the INFO_RSP may come first */

	/* INFO_REQ again later. */
	atk_open(&a, "atk-dupinfo2", 1, true);
	atk_ping(&a, 0, 0);
	atk_send_info(&a, 0, "atk-dupinfo2");
	atk_expect_closed(&a);
}

/* A second path naming the session differently is closed alone. */
static void case_name_mismatch(void)
{
	struct atk a, b;

	atk_open(&a, "atk-name-a", 1, true);
	atk_init(&b);
	memcpy(b.sess_uuid, a.sess_uuid, IBTRS_UUID_LEN);
	memcpy(b.secret, a.secret, sizeof(b.secret));
	b.has_secret = true;
	b.fd[0] = atk_con(&b, 0, 1, true);
	CHECK(b.fd[0] >= 0);
	atk_send_info(&b, 0, "atk-name-b");
	atk_expect_closed(&b);
	atk_ping(&a, 0, 4);
	atk_close(&a);
}

static const struct hcase cases[] = {
	{ "send-without-info", case_send_without_info },
	{ "request-before-info", case_req_before_info },
	{ "duplicate-info", case_dup_info },
	{ "name-mismatch", case_name_mismatch },
};

int main(void)
{
	hostile_setup();
	hostile_run(cases, sizeof(cases) / sizeof(cases[0]));
	return hostile_finish("hostile/info");
}
