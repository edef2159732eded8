/* SPDX-License-Identifier: MIT */
/*
 * ctl.h - the per-process control socket (ctl.c) and what client sessions
 * and server contexts provide to it.
 */
#ifndef IBTRS_CTL_H
#define IBTRS_CTL_H

#include <stdbool.h>
#include <stddef.h>

#include "ibtrs.h"
#include "json.h"

enum { CTL_CLT, CTL_SRV };

/* Embedded in each session and server context. */
struct ctl_node {
	struct ctl_node *next;
	int kind;
	void *obj;
	bool registered;
};

/* Publish @obj on the control socket; opens it with the first object. */
void ibtrs_ctl_register(struct ctl_node *node, int kind, void *obj);
/* Withdraw it; waits for a request using it; closes the socket last. */
void ibtrs_ctl_unregister(struct ctl_node *node);
/* The directory holding the control sockets. */
int ibtrs_ctl_runtime_dir(char *buf, size_t len);

/* clt.c */
const char *clt_ctl_name(struct ibtrs_clt *sess);
void clt_ctl_status(struct ibtrs_clt *sess, struct json *j);
int clt_ctl_add_path(struct ibtrs_clt *sess, const char *addr);

/* srv.c */
void srv_ctl_status(struct ibtrs_srv_ctx *ctx, struct json *j);

#endif /* IBTRS_CTL_H */
