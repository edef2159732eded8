/* SPDX-License-Identifier: MIT */
/*
 * json.h - a small JSON writer for status output.
 */
#ifndef IBTRS_JSON_H
#define IBTRS_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSON_MAX_DEPTH 16

struct json {
	char *buf;
	size_t len, cap;
	bool oom;
	int depth;
	bool first[JSON_MAX_DEPTH];
};

void json_init(struct json *j);
void json_free(struct json *j);
/* @key is NULL inside arrays and at the top level. */
void json_obj_begin(struct json *j, const char *key);
void json_obj_end(struct json *j);
void json_arr_begin(struct json *j, const char *key);
void json_arr_end(struct json *j);
void json_str(struct json *j, const char *key, const char *val);
void json_u64(struct json *j, const char *key, uint64_t val);
void json_i64(struct json *j, const char *key, int64_t val);
void json_f64(struct json *j, const char *key, double val);
void json_bool(struct json *j, const char *key, bool val);
/* @val with @decimals digits after the point (printf "%.*f"); null when
 * not finite. For figures whose precision the reader expects fixed. */
void json_fixed(struct json *j, const char *key, double val, int decimals);
void json_null(struct json *j, const char *key);

#endif /* IBTRS_JSON_H */
