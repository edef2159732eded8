/* SPDX-License-Identifier: MIT */
/*
 * addr.h - socket address helpers: parsing with the cause of a failure,
 * printing and sizing of the addresses that ibtrs_addr_to_sockaddr() parses.
 */
#ifndef IBTRS_ADDR_H
#define IBTRS_ADDR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Longest text ibtrs_sockaddr_to_str() produces, with the NUL. */
#define IBTRS_SOCKADDR_STR_LEN 72

struct ibtrs_addr;

/* Longest cause ibtrs_addr_parse() writes, with the NUL. */
#define IBTRS_ADDR_CAUSE_LEN 320

int ibtrs_addr_parse(const char *str, size_t len, uint16_t port,
		     struct ibtrs_addr *addr, char *cause, size_t cause_len);
int ibtrs_sockaddr_to_str(const struct sockaddr *sa, char *buf, size_t len);
socklen_t ibtrs_sockaddr_len(const struct sockaddr *sa);

#endif /* IBTRS_ADDR_H */
