// SPDX-License-Identifier: MIT
/*
 * memreg.c - ibtrs_clt_mem_reg(): requests from and into registered
 * memory move the right data on every backend, and on the ofi backend
 * they go out without the bounce copy that unregistered memory takes.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "test.h"
#include "xprt.h"
#ifdef IBTRS_HAVE_OFI
#include "ofi/ofi.h"
#endif

#define REG_LEN (1u << 20)
#define IO_LEN (64u << 10)

struct counts {
	uint64_t tx_direct, tx_bounce, mr_bounce;
};

static void counts(struct counts *c, const char *backend)
{
	memset(c, 0, sizeof(*c));
#ifdef IBTRS_HAVE_OFI
	if (!strcmp(backend, "ofi")) {
		struct ofi_stats s;

		ofi_stats_get(&s);
		c->tx_direct = s.tx_direct;
		c->tx_bounce = s.tx_bounce;
		c->mr_bounce = s.mr_bounce;
	}
#else
	(void)backend;
#endif
}

static int read_vec(struct ibtrs_clt *sess, struct ibtrs_tag *tag,
		    struct iovec *sg, unsigned int cnt, uint64_t off)
{
	unsigned char usr[sizeof(struct h_usr_hdr) + 16];

	h_usr_build(usr, sizeof(usr), off, 7, 0);
	return h_req_sync(sess, tag, IBTRS_READ, usr, sizeof(usr), sg, cnt);
}

static void run(const char *backend)
{
	static struct h_srv srv;
	struct counts c0, c1;
	struct ibtrs_clt *sess;
	struct ibtrs_tag *tag;
	struct ibtrs_mem *mem, *extra[IBTRS_MAX_MEM_REGS];
	struct iovec sg[2];
	char *reg, *plain;
	bool ofi = !strcmp(backend, "ofi");
	unsigned int i, n;

	setenv("IBTRS_BACKEND", backend, 1);
	h_srv_start(&srv, NULL, 0, 0);
	sess = h_clt_open("memreg", srv.port, 1, 0, NULL, NULL);
	tag = ibtrs_clt_get_tag(sess, IBTRS_IO_CON, IBTRS_TAG_WAIT);
	CHECK(tag);
	reg = aligned_alloc(4096, REG_LEN);
	plain = aligned_alloc(4096, 2 * IO_LEN);
	CHECK(reg && plain);

	/* Bad arguments. */
	CHECK(!ibtrs_clt_mem_reg(sess, NULL, 10) && errno == EINVAL);
	CHECK(!ibtrs_clt_mem_reg(sess, reg, 0) && errno == EINVAL);
	CHECK(!ibtrs_clt_mem_reg(NULL, reg, 10) && errno == EINVAL);
	ibtrs_clt_mem_dereg(sess, NULL);

	mem = ibtrs_clt_mem_reg(sess, reg, REG_LEN);
	CHECK(mem);

	/* WRITE from registered memory: no bounce copy on ofi. */
	h_fill(reg + 4096, IO_LEN, 1);
	counts(&c0, backend);
	CHECK_EQ(h_io(sess, tag, IBTRS_WRITE, reg + 4096, IO_LEN, 0, 1), 0);
	counts(&c1, backend);
	if (ofi) {
		CHECK(c1.tx_direct > c0.tx_direct);
		CHECK_EQ(c1.tx_bounce, c0.tx_bounce);
	}

	/* READ into registered memory (one iovec): no per-request bounce. */
	memset(reg + 2 * IO_LEN, 0, IO_LEN);
	counts(&c0, backend);
	CHECK_EQ(h_io(sess, tag, IBTRS_READ, reg + 2 * IO_LEN, IO_LEN, 0, 2),
		 0);
	counts(&c1, backend);
	CHECK(!memcmp(reg + 2 * IO_LEN, reg + 4096, IO_LEN));
	if (ofi)
		CHECK_EQ(c1.mr_bounce, c0.mr_bounce);

	/* READ into two pieces of registered memory: mapped per request. */
	memset(reg + 4 * IO_LEN, 0, IO_LEN);
	sg[0].iov_base = reg + 4 * IO_LEN + IO_LEN / 2;
	sg[0].iov_len = IO_LEN / 2;
	sg[1].iov_base = reg + 4 * IO_LEN;
	sg[1].iov_len = IO_LEN / 2;
	CHECK_EQ(read_vec(sess, tag, sg, 2, 0), 0);
	CHECK(!memcmp(reg + 4 * IO_LEN + IO_LEN / 2, reg + 4096, IO_LEN / 2));
	CHECK(!memcmp(reg + 4 * IO_LEN, reg + 4096 + IO_LEN / 2, IO_LEN / 2));

	/* Unregistered memory still works, through the bounce buffers. */
	h_fill(plain, IO_LEN, 3);
	counts(&c0, backend);
	CHECK_EQ(h_io(sess, tag, IBTRS_WRITE, plain, IO_LEN, IO_LEN, 3), 0);
	counts(&c1, backend);
	if (ofi)
		CHECK(c1.tx_bounce > c0.tx_bounce);
	memset(plain + IO_LEN, 0, IO_LEN);
	CHECK_EQ(h_io(sess, tag, IBTRS_READ, plain + IO_LEN, IO_LEN, IO_LEN, 4),
		 0);
	CHECK(!memcmp(plain, plain + IO_LEN, IO_LEN));

	/* A READ straddling the end of the region is not taken for it. */
	memset(reg + REG_LEN - 4096, 0, 4096);
	CHECK_EQ(h_io(sess, tag, IBTRS_READ, reg + REG_LEN - 4096, 4096, 0, 5),
		 0);
	CHECK(!memcmp(reg + REG_LEN - 4096, reg + 4096, 4096));

	/* At most IBTRS_MAX_MEM_REGS regions. */
	for (n = 0; n < IBTRS_MAX_MEM_REGS - 1; n++) {
		extra[n] = ibtrs_clt_mem_reg(sess, plain + n, 1);
		CHECK(extra[n]);
	}
	CHECK(!ibtrs_clt_mem_reg(sess, plain, 1) && errno == ENOSPC);

	/*
	 * Deregistering the first region while the others stay: it is
	 * ordinary memory again (a READ into it would fail if its freed key
	 * were still looked up), and the others are still found.
	 */
	ibtrs_clt_mem_dereg(sess, mem);
	memset(reg + 2 * IO_LEN, 0, IO_LEN);
	CHECK_EQ(h_io(sess, tag, IBTRS_READ, reg + 2 * IO_LEN, IO_LEN, 0, 6),
		 0);
	CHECK(!memcmp(reg + 2 * IO_LEN, reg + 4096, IO_LEN));
	for (i = 0; i < n; i += 31) {
		plain[i] = 0;
		sg[0].iov_base = plain + i;
		sg[0].iov_len = 1;
		counts(&c0, backend);
		CHECK_EQ(read_vec(sess, tag, sg, 1, 0), 0);
		counts(&c1, backend);
		CHECK_EQ(plain[i], reg[4096]);
		if (ofi)
			CHECK_EQ(c1.mr_bounce, c0.mr_bounce);
	}
	for (i = 0; i < n; i++)
		ibtrs_clt_mem_dereg(sess, extra[i]);

	/* After deregistration the memory is ordinary memory again. */
	CHECK_EQ(h_io(sess, tag, IBTRS_WRITE, reg + 4096, IO_LEN, 0, 7), 0);
	ibtrs_clt_put_tag(sess, tag);
	ibtrs_clt_close(sess);
	h_srv_stop(&srv);
	free(reg);
	free(plain);
	printf("memreg: %s ok\n", backend);
}

int main(void)
{
	t_watchdog(120);
	run("tcp");
#ifdef IBTRS_HAVE_OFI
	{
		char prov[32];

		if (ofi_provider_probe(prov, sizeof(prov)) == 0)
			run("ofi");
		else
			printf("memreg: ofi: no usable provider, not run\n");
	}
#endif
	return 0;
}
