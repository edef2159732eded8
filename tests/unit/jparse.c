// SPDX-License-Identifier: MIT
/*
 * jparse.c - the tool's strict JSON parser: values, escapes and surrogate
 * pairs, numbers against the grammar, the depth limit, every kind of
 * malformed text refused, and the member lookups.
 */
#include <stdint.h>

#include "jparse.h"
#include "test.h"

static struct jval *parse(const char *s)
{
	char err[128];

	return jparse(s, strlen(s), err, sizeof(err));
}

static bool refused(const char *s)
{
	char err[128] = "";
	struct jval *v = jparse(s, strlen(s), err, sizeof(err));

	if (v) {
		fprintf(stderr, "jparse: accepted %s\n", s);
		jparse_free(v);
		return false;
	}
	CHECK(err[0] != '\0');
	return true;
}

/* Texts a strict parser must refuse, each for its own reason. */
static const char *const bad_texts[] = {
	/* strings */
	"\"\\ud83d\"", /* lone high surrogate */
	"\"\\ude00\"", /* lone low surrogate */
	"\"\\x41\"",   /* no such escape */
	"\"\\u12G4\"", /* not hex */
	"\"a\nb\"",    /* raw control character */
	"\"abc",       /* unterminated */
	"{\"k\" 1}",   /* no colon */
	"{1:2}",       /* key not a string */
	/* numbers off the grammar */
	"01",
	"+1",
	"1.",
	".5",
	"1e",
	"-",
	"0x10",
	"NaN",
	"Infinity",
	/* structure */
	"",
	"   ",
	"{} x", /* trailing garbage */
	"[1,]", /* trailing comma */
	"{\"a\":1,}",
	"[1 2]",
	"[1",
	"{\"a\":1",
	"tru",
	"nul",
	"falsey",
};

static void test_values(void)
{
	struct jval *v;
	const struct jval *a;

	v = parse(" {\"s\":\"x\",\"n\":-1.5e2,\"u\":18446744073709551615,"
		  "\"b\":true,\"z\":null,\"a\":[1,[],{}]}\r\n");
	CHECK(v && v->type == JT_OBJ && v->n == 6);
	CHECK(!strcmp(jget_str(v, "s", ""), "x"));
	CHECK(jget_num(v, "n", 0) == -150);
	CHECK(!jget(v, "n")->is_u64);
	CHECK(jget_u64(v, "n", 7) == 7);
	CHECK(jget_u64(v, "u", 0) == UINT64_MAX);
	CHECK(jget(v, "b")->type == JT_BOOL && jget(v, "b")->b);
	CHECK(jget(v, "z")->type == JT_NULL);
	CHECK(jget_has(v, "z") && !jget_has(v, "missing"));
	CHECK(!strcmp(jget_str(v, "n", "dflt"), "dflt"));
	a = jget(v, "a");
	CHECK(a->type == JT_ARR && a->n == 3);
	CHECK(a->items[0].is_u64 && a->items[0].u64 == 1);
	CHECK(a->items[1].type == JT_ARR && a->items[1].n == 0);
	CHECK(a->items[2].type == JT_OBJ && a->items[2].n == 0);
	/* Lookups on what is not an object find nothing. */
	CHECK(jget(a, "x") == NULL && jget(NULL, "x") == NULL);
	jparse_free(v);

	/* The first of two members of one name. */
	v = parse("{\"k\":1,\"k\":2}");
	CHECK(jget_u64(v, "k", 0) == 1);
	jparse_free(v);

	/* A bare scalar is a document. */
	v = parse("0");
	CHECK(v && v->type == JT_NUM && v->is_u64 && v->u64 == 0);
	jparse_free(v);
	jparse_free(NULL);
}

static void test_strings(void)
{
	struct jval *v;

	v = parse("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\u20ac\\ud83d\\ude00\"");
	CHECK(v && v->type == JT_STR);
	CHECK(!strcmp(v->str, "\"\\/\b\f\n\r\t\xc3\xa9\xe2\x82\xac"
			      "\xf0\x9f\x98\x80"));
	jparse_free(v);
}

static void test_numbers(void)
{
	struct jval *v;

	v = parse("[0,-0,1e3,1E+2,2.5e-1,18446744073709551616]");
	CHECK(v && v->n == 6);
	CHECK(v->items[2].num == 1000 && v->items[3].num == 100);
	CHECK(v->items[4].num == 0.25);
	/* One past UINT64_MAX: a number, but not an exact u64. */
	CHECK(!v->items[5].is_u64 && v->items[5].num > 1.8e19);
	jparse_free(v);
}

static void test_malformed(void)
{
	char deep[2 * JPARSE_MAX_DEPTH + 8];
	struct jval *v;
	size_t i;

	for (i = 0; i < sizeof(bad_texts) / sizeof(bad_texts[0]); i++)
		CHECK(refused(bad_texts[i]));

	/* The length bounds the text: what follows it is not read. */
	v = jparse("[1]]", 3, NULL, 0);
	CHECK(v && v->n == 1);
	jparse_free(v);
	CHECK(jparse("[1]", 2, NULL, 0) == NULL);

	/* JPARSE_MAX_DEPTH levels are accepted, one more is not. */
	for (i = 0; i < JPARSE_MAX_DEPTH; i++) {
		deep[i] = '[';
		deep[JPARSE_MAX_DEPTH + i] = ']';
	}
	deep[2 * JPARSE_MAX_DEPTH] = '\0';
	v = parse(deep);
	CHECK(v != NULL);
	jparse_free(v);
	for (i = 0; i <= JPARSE_MAX_DEPTH; i++) {
		deep[i] = '[';
		deep[JPARSE_MAX_DEPTH + 1 + i] = ']';
	}
	deep[2 * JPARSE_MAX_DEPTH + 2] = '\0';
	CHECK(refused(deep)); /* one level too deep */
}

int main(void)
{
	test_values();
	test_strings();
	test_numbers();
	test_malformed();
	printf("jparse: ok\n");
	return 0;
}
