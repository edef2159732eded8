// SPDX-License-Identifier: MIT
/*
 * fuzz_info_req.c - ibtrs_info_req_decode() on any bytes: the session name
 * a client sends on connection 0 of each path.
 *
 * A name that decodes is NUL-terminated inside the buffer, not empty and
 * free of '/', and encodes back to the same name.
 */
#include <errno.h>

#include "fuzz.h"
#include "proto.h"

/**
 * LLVMFuzzerTestOneInput() - decode one INFO_REQ
 * @data: the received message
 * @size: its length
 *
 * Return: 0.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[IBTRS_SESSNAME_LEN], again[IBTRS_SESSNAME_LEN];
	struct ibtrs_msg_info_req m;
	size_t n;
	int ret;

	memset(name, 0x5a, sizeof(name));
	ret = ibtrs_info_req_decode(data, size, name);
	FUZZ_CHECK(!ret || ret == -EPROTO);
	if (ret)
		return 0;
	n = strnlen(name, sizeof(name));
	FUZZ_CHECK(n && n < sizeof(name));
	FUZZ_CHECK(!memchr(name, '/', n));

	ibtrs_info_req_encode(&m, name);
	FUZZ_CHECK(!ibtrs_info_req_decode(&m, sizeof(m), again));
	FUZZ_CHECK(!strcmp(name, again));
	return 0;
}
