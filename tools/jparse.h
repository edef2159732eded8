/* SPDX-License-Identifier: MIT */
/*
 * jparse.h - a small strict JSON (RFC 8259) parser for the answers of the
 * control sockets: the whole text becomes a tree of struct jval.
 */
#ifndef IBTRS_TOOL_JPARSE_H
#define IBTRS_TOOL_JPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Deepest nesting of arrays and objects accepted. */
#define JPARSE_MAX_DEPTH 64

enum jtype {
	JT_NULL,
	JT_BOOL,
	JT_NUM,
	JT_STR,
	JT_ARR,
	JT_OBJ,
};

/**
 * struct jval - a JSON value
 * @type: what it is
 * @b: JT_BOOL: the value
 * @num: JT_NUM: the value as a double
 * @u64: JT_NUM: the exact value when @is_u64
 * @is_u64: JT_NUM: the number is a non-negative integer that fits 64 bits
 * @str: JT_STR: the decoded string (UTF-8, NUL-terminated; an escaped NUL
 *       ends it early)
 * @n: JT_ARR, JT_OBJ: number of @items
 * @keys: JT_OBJ: the decoded keys, @n of them
 * @items: JT_ARR, JT_OBJ: the elements or member values, @n of them
 */
struct jval {
	enum jtype type;
	bool b;
	bool is_u64;
	double num;
	uint64_t u64;
	char *str;
	size_t n;
	char **keys;
	struct jval *items;
};

struct jval *jparse(const char *text, size_t len, char *err, size_t errlen);
void jparse_free(struct jval *v);
const struct jval *jget(const struct jval *obj, const char *key);
const char *jget_str(const struct jval *obj, const char *key, const char *dflt);
uint64_t jget_u64(const struct jval *obj, const char *key, uint64_t dflt);
double jget_num(const struct jval *obj, const char *key, double dflt);
bool jget_has(const struct jval *obj, const char *key);

#endif /* IBTRS_TOOL_JPARSE_H */
