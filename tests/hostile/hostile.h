/* SPDX-License-Identifier: MIT */
/*
 * hostile.h - what the hostile tests share: a real server with a memory
 * target, a good client session doing verified I/O in the background,
 * and raw sockets speaking the tcp backend's protocol by hand.
 *
 * Each tests/hostile/NAME.c is one program for one kind of attack. It calls
 * hostile_setup(), runs its cases with hostile_run() (each case must leave
 * the good session unhurt), and returns hostile_finish(): every attacker
 * session the server saw must be gone and the good session must have
 * verified all its I/O without an error.
 */
#ifndef IBTRS_TESTS_HOSTILE_H
#define IBTRS_TESTS_HOSTILE_H

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ibtrs.h"
#include "core.h"
#include "proto.h"
#include "rawauth.h"
#include "rawtcp.h"
#include "tcp/tcp_proto.h"
#include "test.h"

#define SRV_QD 16
#define SRV_MAX_IO (64u * 1024)

#define CLOSE_TIMEOUT_MS 5000 /* an attacked connection must close by then */
#define IO_TIMEOUT_MS 5000    /* frames we expect from a live peer */

/* The in-process server and what it saw, by kind of session. */
struct hostile_srv {
	struct ibtrs_srv_ctx *ctx;
	uint16_t port;
	unsigned char *store;
	atomic_int good_conn, good_disc;
	atomic_int atk_conn, atk_disc;
	atomic_int hold_conn, hold_disc;
	atomic_int atk_reqs;
	atomic_int bad_good_reqs;
	pthread_mutex_t lock;
	struct ibtrs_srv_op *held[8]; /* requests of "hold*" sessions */
	atomic_int nr_held;
};

extern struct hostile_srv srv;

/* The case running, named in failure messages. */
extern const char *cur_case;

/* One attack; it exits 1 (or calls soft_fail()) when the server fails. */
struct hcase {
	const char *name;
	void (*fn)(void);
};

/* Start the server and the good session; the good session must run. */
void hostile_setup(void);
/* The good session made progress since @before ops, with no error. */
void check_good(const char *what, unsigned long long before);
/* The good session's verified operations so far. */
unsigned long long good_ops(void);
/* The good client's session (the attacks on the same session need it). */
struct ibtrs_clt *good_session(void);
/* Run @n cases in order, each followed by check_good(). */
void hostile_run(const struct hcase *cases, size_t n);
/* The closing checks; @name is the program's. Return: its exit status. */
int hostile_finish(const char *name);

/* A failed check that does not stop the test; the exit status is 1. */
void soft_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void rnd_bytes(void *buf, size_t len);

int raw_connect(void);
/* The server must close @fd in bounded time; @fd is closed here. */
long expect_closed(int fd);
void send_hello(int fd, const char *magic, uint32_t status, const void *priv);
/* A conn_req of a client that authenticates, with a fresh nonce. */
void conn_req(struct ibtrs_msg_conn_req *m, uint16_t version, uint16_t cid,
	      uint16_t cid_num, bool first, const uint8_t *sess_uuid,
	      const uint8_t *path_uuid);
/*
 * Read the server's hello answer. Return: 0 and @rsp on accept, the
 * positive errno of a reject, -1 if no valid answer came.
 */
int read_answer(int fd, struct ibtrs_conn_rsp *rsp);
int send_frame(int fd, uint8_t op, uint8_t flags, uint16_t reserved,
	       uint32_t imm, uint32_t len, uint32_t rkey, uint64_t raddr,
	       const void *payload, size_t plen);

/* An attacking client, speaking the protocol by hand. */
struct atk {
	int fd[IBTRS_MAX_CONS_PER_PATH];
	unsigned int nr;
	uint8_t sess_uuid[IBTRS_UUID_LEN];
	uint8_t path_uuid[IBTRS_UUID_LEN];
	struct ibtrs_conn_rsp rsp;
	unsigned int off_bits;
	struct ibtrs_desc pool;
	uint32_t gen;
	/* the handshake: the key it proves (NULL: none), the secret of its
	 * session once a connection made it */
	const struct ibtrs_psk *psk;
	bool has_secret;
	uint8_t secret[IBTRS_AUTH_KEY_LEN];
	uint64_t incarnation;
	bool no_auth;	   /* conn_req without IBTRS_CAP_AUTH */
	struct ra_hs last; /* the last connection's handshake */
	struct ibtrs_msg_conn_req last_req; /* and what it sent */
	struct ibtrs_msg_auth_req last_auth_req;
};

/*
 * Connect connection @cid of @a's path, the handshake included (with
 * @a's key and secret); return the fd, or -errno of the refusal (at the
 * connection request or in AUTH_RSP; the server closed the socket).
 */
int atk_con(struct atk *a, uint16_t cid, uint16_t cid_num, bool first);
/*
 * The same up to the server's conn_rsp only: the fd, the server's nonce
 * in @ns; or -errno of a reject.
 */
int atk_con_hello(struct atk *a, uint16_t cid, uint16_t cid_num, bool first,
		  uint8_t *ns);
/*
 * The rest of the handshake on @fd: AUTH_REQ for @ns, AUTH_RSP. Return:
 * 0, the server's -errno (@fd then closed by the server and here), or
 * -EBADMSG if the server's proof is wrong.
 */
int atk_auth(struct atk *a, int fd, const uint8_t *ns);
void atk_init(struct atk *a);
void atk_send_info(struct atk *a, unsigned int con, const char *name);
void atk_recv_info(struct atk *a, unsigned int con);
/* A fresh session with one path of @cid_num connections, INFO done. */
void atk_open(struct atk *a, const char *name, unsigned int cid_num, bool info);
void atk_close(struct atk *a);
uint64_t chunk_addr(const struct atk *a, uint32_t chunk);
/*
 * A well-formed request on @chunk: WRITE of @data_len bytes, or READ of
 * @data_len bytes into the (fake) region @desc. Its header (host order)
 * into @f; returns its payload, to be freed.
 */
unsigned char *atk_req_frame(struct atk *a, uint32_t chunk, int dir,
			     uint32_t data_len, uint16_t usr_len,
			     const struct ibtrs_desc *desc,
			     struct tcp_frame *f);
/* The same, sent on connection @con. */
int atk_req(struct atk *a, unsigned int con, uint32_t chunk, int dir,
	    uint32_t data_len, uint16_t usr_len, const struct ibtrs_desc *desc);
/* The response to a request on @chunk, with @len bytes of READ data. */
void atk_expect_rsp(struct atk *a, unsigned int con, uint32_t chunk,
		    const struct ibtrs_desc *desc);
/* An error answer @err to a request on @chunk. */
void atk_expect_err(struct atk *a, unsigned int con, uint32_t chunk, int err);
/* Positive control: the connection works before it is attacked. */
void atk_ping(struct atk *a, unsigned int con, uint32_t chunk);
/* Every connection of @a must be closed by the server. */
void atk_expect_closed(struct atk *a);
/* A fresh session, checked with a ping, then one bad frame: closed. */
void frame_case(uint8_t op, uint8_t flags, uint16_t reserved, uint32_t imm,
		uint32_t len, bool good_key, uint32_t rkey_xor, uint64_t raddr,
		size_t plen);

#endif
