// SPDX-License-Identifier: MIT
/*
 * json.c - the JSON writer shared by the library and the tool: exact
 * output for escapes, nesting, commas and numbers, and every document it
 * writes read back by the tool's strict parser.
 */
#include <math.h>
#include <stdint.h>

#include "jparse.h"
#include "json.h"
#include "test.h"

/* Parses @j's text strictly; the caller frees the tree. */
static struct jval *reparse(const struct json *j)
{
	char err[128] = "";
	struct jval *v;

	CHECK(!j->oom);
	v = jparse(j->buf, j->len, err, sizeof(err));
	if (!v)
		fprintf(stderr, "json: %s in %s\n", err, j->buf);
	CHECK(v != NULL);
	return v;
}

static void test_escapes(void)
{
	struct json j;
	struct jval *v;

	json_init(&j);
	json_obj_begin(&j, NULL);
	json_str(&j, "q\"k", "a\"b\\c\n\t\x01 \xe9/");
	json_str(&j, "null", NULL);
	json_obj_end(&j);
	CHECK(!strcmp(j.buf, "{\"q\\\"k\":\"a\\\"b\\\\c\\u000a\\u0009"
			     "\\u0001 \\u00e9/\",\"null\":\"\"}"));
	v = reparse(&j);
	CHECK(!strcmp(jget_str(v, "q\"k", ""), "a\"b\\c\n\t\x01 \xc3\xa9/"));
	CHECK(!strcmp(jget_str(v, "null", "x"), ""));
	jparse_free(v);
	json_free(&j);
}

static void test_nesting(void)
{
	struct json j;
	struct jval *v;
	const struct jval *a;
	int i;

	json_init(&j);
	json_obj_begin(&j, NULL);
	json_arr_begin(&j, "a");
	json_u64(&j, NULL, 1);
	json_obj_begin(&j, NULL);
	json_arr_begin(&j, "empty");
	json_arr_end(&j);
	json_obj_end(&j);
	json_obj_begin(&j, NULL);
	json_obj_end(&j);
	json_arr_end(&j);
	json_bool(&j, "t", true);
	json_bool(&j, "f", false);
	json_null(&j, "n");
	json_obj_end(&j);
	CHECK(!strcmp(j.buf, "{\"a\":[1,{\"empty\":[]},{}],\"t\":true,"
			     "\"f\":false,\"n\":null}"));
	v = reparse(&j);
	a = jget(v, "a");
	CHECK(a && a->type == JT_ARR && a->n == 3);
	CHECK(jget(v, "n")->type == JT_NULL);
	CHECK(jget(v, "f")->type == JT_BOOL && !jget(v, "f")->b);
	jparse_free(v);
	json_free(&j);

	/* Deeper than JSON_MAX_DEPTH: still balanced and well formed. */
	json_init(&j);
	for (i = 0; i < JSON_MAX_DEPTH + 4; i++)
		json_arr_begin(&j, NULL);
	json_u64(&j, NULL, 7);
	json_u64(&j, NULL, 8);
	for (i = 0; i < JSON_MAX_DEPTH + 4; i++)
		json_arr_end(&j);
	v = reparse(&j);
	jparse_free(v);
	json_free(&j);
}

static void test_numbers(void)
{
	struct json j;
	struct jval *v;

	json_init(&j);
	json_obj_begin(&j, NULL);
	json_u64(&j, "max", UINT64_MAX);
	json_i64(&j, "min", INT64_MIN);
	json_f64(&j, "f", 0.1);
	json_f64(&j, "inf", INFINITY);
	json_f64(&j, "nan", NAN);
	json_fixed(&j, "x1", 2.25, 1);
	json_fixed(&j, "x3", -1.0, 3);
	json_fixed(&j, "x0", 41.6, 0);
	json_fixed(&j, "xinf", -INFINITY, 3);
	json_obj_end(&j);
	CHECK(!strcmp(j.buf, "{\"max\":18446744073709551615,"
			     "\"min\":-9223372036854775808,\"f\":0.1,"
			     "\"inf\":null,\"nan\":null,\"x1\":2.2,"
			     "\"x3\":-1.000,\"x0\":42,\"xinf\":null}"));
	v = reparse(&j);
	CHECK(jget(v, "max")->is_u64 && jget(v, "max")->u64 == UINT64_MAX);
	CHECK(jget_num(v, "min", 0) == (double)INT64_MIN);
	CHECK(jget_num(v, "f", 0) == 0.1);
	jparse_free(v);
	json_free(&j);

	/* The longest number is written whole, not cut (the parser
	 * refuses numbers that long, so it is checked as text). */
	json_init(&j);
	json_fixed(&j, NULL, -1.7976931348623157e308, 9);
	CHECK(j.len == 1 + 309 + 1 + 9);
	CHECK(!strncmp(j.buf, "-17976931348623157", 18));
	CHECK(!strcmp(j.buf + j.len - 10, ".000000000"));
	json_free(&j);
}

static void test_growth(void)
{
	struct json j;
	struct jval *v;
	unsigned int i;

	/* Past the first buffer several times over. */
	json_init(&j);
	json_arr_begin(&j, NULL);
	for (i = 0; i < 10000; i++)
		json_u64(&j, NULL, i);
	json_arr_end(&j);
	v = reparse(&j);
	CHECK(v->type == JT_ARR && v->n == 10000);
	CHECK(v->items[9999].u64 == 9999);
	jparse_free(v);
	json_free(&j);
	CHECK(j.buf == NULL && j.len == 0);
}

int main(void)
{
	test_escapes();
	test_nesting();
	test_numbers();
	test_growth();
	printf("json: ok\n");
	return 0;
}
