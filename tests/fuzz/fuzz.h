/* SPDX-License-Identifier: MIT */
/*
 * fuzz.h - what every libFuzzer target of tests/fuzz shares: the entry
 * points, a check that aborts (libFuzzer then keeps the input), and a
 * reader that takes fields off the front of the input.
 */
#ifndef IBTRS_FUZZ_H
#define IBTRS_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A property of the code under test that does not hold: a finding. */
#define FUZZ_CHECK(cond)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
			abort();                                               \
		}                                                              \
	} while (0)

/**
 * struct fuzz_in - the unread rest of an input
 * @p: next byte
 * @n: bytes left
 */
struct fuzz_in {
	const uint8_t *p;
	size_t n;
};

/**
 * fuzz_u8() - take one byte off the input
 * @in: the input
 *
 * Return: the byte, 0 once the input is used up.
 */
static inline uint8_t fuzz_u8(struct fuzz_in *in)
{
	uint8_t v = 0;

	if (in->n) {
		v = *in->p++;
		in->n--;
	}
	return v;
}

/**
 * fuzz_u16() - take a little-endian 16-bit value off the input
 * @in: the input
 *
 * Return: the value; missing bytes read as 0.
 */
static inline uint16_t fuzz_u16(struct fuzz_in *in)
{
	uint16_t lo = fuzz_u8(in);

	return (uint16_t)(lo | (uint16_t)fuzz_u8(in) << 8);
}

/**
 * fuzz_u32() - take a little-endian 32-bit value off the input
 * @in: the input
 *
 * Return: the value; missing bytes read as 0.
 */
static inline uint32_t fuzz_u32(struct fuzz_in *in)
{
	uint32_t lo = fuzz_u16(in);

	return lo | (uint32_t)fuzz_u16(in) << 16;
}

/**
 * fuzz_bytes() - take up to @max bytes off the input
 * @in: the input
 * @max: most bytes wanted
 * @len: set to the bytes taken
 *
 * Return: where they are (inside the input).
 */
static inline const uint8_t *fuzz_bytes(struct fuzz_in *in, size_t max,
					size_t *len)
{
	const uint8_t *p = in->p;

	*len = in->n < max ? in->n : max;
	in->p += *len;
	in->n -= *len;
	return p;
}

/* Whether the @len bytes at @p are all zero. */
static inline bool fuzz_zero(const uint8_t *p, size_t len)
{
	while (len--)
		if (*p++)
			return false;
	return true;
}

#endif /* IBTRS_FUZZ_H */
