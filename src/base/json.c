// SPDX-License-Identifier: MIT
/*
 * json.c - a small JSON writer: appends to a growing buffer, escapes
 * strings, remembers where commas go. Out of memory makes it stop writing
 * and set @oom.
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

void json_init(struct json *j)
{
	memset(j, 0, sizeof(*j));
	j->first[0] = true;
}

void json_free(struct json *j)
{
	free(j->buf);
	j->buf = NULL;
	j->len = j->cap = 0;
}

static void put(struct json *j, const char *s, size_t n)
{
	if (j->oom)
		return;
	if (j->len + n + 1 > j->cap) {
		size_t cap = j->cap ? j->cap * 2 : 1024;
		char *b;

		while (cap < j->len + n + 1)
			cap *= 2;
		b = realloc(j->buf, cap);
		if (!b) {
			j->oom = true;
			return;
		}
		j->buf = b;
		j->cap = cap;
	}
	memcpy(j->buf + j->len, s, n);
	j->len += n;
	j->buf[j->len] = '\0';
}

static void putf(struct json *j, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void putf(struct json *j, const char *fmt, ...)
{
	/* Room for the longest number written: DBL_MAX with 9 decimals. */
	char tmp[DBL_MAX_10_EXP + 16];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		put(j, tmp,
		    (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

static void put_string(struct json *j, const char *s)
{
	put(j, "\"", 1);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			put(j, "\\", 1);
			put(j, s, 1);
		} else if (c < 0x20 || c >= 0x80) {
			/* Bytes above ASCII as Latin-1: valid JSON whatever
			 * the encoding of the text. */
			putf(j, "\\u%04x", c);
		} else {
			put(j, s, 1);
		}
	}
	put(j, "\"", 1);
}

/* Comma and key before a value. */
static void lead(struct json *j, const char *key)
{
	if (!j->first[j->depth])
		put(j, ",", 1);
	j->first[j->depth] = false;
	if (key) {
		put_string(j, key);
		put(j, ":", 1);
	}
}

static void open_(struct json *j, const char *key, const char *c)
{
	lead(j, key);
	put(j, c, 1);
	if (j->depth + 1 < JSON_MAX_DEPTH)
		j->depth++;
	j->first[j->depth] = true;
}

static void close_(struct json *j, const char *c)
{
	put(j, c, 1);
	if (j->depth > 0)
		j->depth--;
}

void json_obj_begin(struct json *j, const char *key)
{
	open_(j, key, "{");
}

void json_obj_end(struct json *j)
{
	close_(j, "}");
}

void json_arr_begin(struct json *j, const char *key)
{
	open_(j, key, "[");
}

void json_arr_end(struct json *j)
{
	close_(j, "]");
}

void json_str(struct json *j, const char *key, const char *val)
{
	lead(j, key);
	put_string(j, val);
}

void json_u64(struct json *j, const char *key, uint64_t val)
{
	lead(j, key);
	putf(j, "%" PRIu64, val);
}

void json_i64(struct json *j, const char *key, int64_t val)
{
	lead(j, key);
	putf(j, "%" PRId64, val);
}

void json_f64(struct json *j, const char *key, double val)
{
	lead(j, key);
	if (isfinite(val))
		putf(j, "%.15g", val);
	else
		put(j, "null", 4);
}

void json_bool(struct json *j, const char *key, bool val)
{
	lead(j, key);
	put(j, val ? "true" : "false", val ? 4 : 5);
}

void json_fixed(struct json *j, const char *key, double val, int decimals)
{
	lead(j, key);
	if (isfinite(val) && decimals >= 0 && decimals <= 9)
		putf(j, "%.*f", decimals, val);
	else
		put(j, "null", 4);
}

void json_null(struct json *j, const char *key)
{
	lead(j, key);
	put(j, "null", 4);
}
