/* SPDX-License-Identifier: MIT */
/*
 * core.h - helpers shared by the client and the server.
 */
#ifndef IBTRS_CORE_H
#define IBTRS_CORE_H

#include <stdint.h>

#include "ibtrs.h"
#include "proto.h"
#include "util.h"

_Static_assert(IBTRS_UUID_LEN == IBTRS_UUID_BYTES, "one UUID size");

/* Chunk size for @max_io_size: data, header room, 4 KiB aligned. */
static inline uint32_t ibtrs_chunk_size(uint32_t max_io_size)
{
	return (max_io_size + IBTRS_HDR_ROOM + 4095u) & ~4095u;
}

#endif /* IBTRS_CORE_H */
