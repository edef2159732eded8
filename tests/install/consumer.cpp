// SPDX-License-Identifier: MIT
/*
 * consumer.cpp - the installed <ibtrs.h> compiles as C++ (g++
 * -fsyntax-only); nothing is called.
 */
#include <ibtrs.h>

static_assert(sizeof(struct ibtrs_addr) == 2 * sizeof(void *),
	      "struct ibtrs_addr holds two pointers");
static_assert(IBTRS_READ == 0 && IBTRS_WRITE == 1, "directions");

int main()
{
	struct ibtrs_attrs attr = {};
	ibtrs_conf_fn *conf = nullptr;
	rdma_ev_fn *rdma_ev = nullptr;
	link_ev_fn *link_ev = nullptr;
	link_clt_ev_fn *link_clt_ev = nullptr;

	(void)conf;
	(void)rdma_ev;
	(void)link_ev;
	(void)link_clt_ev;
	return (int)attr.queue_depth;
}
