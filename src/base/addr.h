/* SPDX-License-Identifier: MIT */
/*
 * addr.h - socket address helpers: printing and sizing of the addresses that
 * ibtrs_addr_to_sockaddr() parses.
 */
#ifndef IBTRS_ADDR_H
#define IBTRS_ADDR_H

#include <stddef.h>
#include <sys/socket.h>

/* Longest text ibtrs_sockaddr_to_str() produces, with the NUL. */
#define IBTRS_SOCKADDR_STR_LEN 72

int ibtrs_sockaddr_to_str(const struct sockaddr *sa, char *buf, size_t len);
socklen_t ibtrs_sockaddr_len(const struct sockaddr *sa);

#endif /* IBTRS_ADDR_H */
