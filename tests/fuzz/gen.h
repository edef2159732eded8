/* SPDX-License-Identifier: MIT */
/*
 * gen.h - the seed corpus generator's parts (fuzz_gen.c and the gen_*()
 * of the stateful targets' helpers).
 */
#ifndef IBTRS_FUZZ_GEN_H
#define IBTRS_FUZZ_GEN_H

#include <stddef.h>
#include <stdint.h>

void gen_tcp(void);
void gen_ctl(void);
void gen_srv(void);
void gen_clt(void);
void gen_write(const char *target, const char *name, const void *buf,
	       size_t len);

/**
 * gen_le16() - store a little-endian 16-bit value
 * @p: where
 * @v: the value
 *
 * Return: 2, the bytes stored.
 */
static inline size_t gen_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	return 2;
}

/**
 * gen_le32() - store a little-endian 32-bit value
 * @p: where
 * @v: the value
 *
 * Return: 4, the bytes stored.
 */
static inline size_t gen_le32(uint8_t *p, uint32_t v)
{
	gen_le16(p, (uint16_t)v);
	gen_le16(p + 2, (uint16_t)(v >> 16));
	return 4;
}

/**
 * gen_le64() - store a little-endian 64-bit value
 * @p: where
 * @v: the value
 *
 * Return: 8, the bytes stored.
 */
static inline size_t gen_le64(uint8_t *p, uint64_t v)
{
	gen_le32(p, (uint32_t)v);
	gen_le32(p + 4, (uint32_t)(v >> 32));
	return 8;
}

#endif /* IBTRS_FUZZ_GEN_H */
