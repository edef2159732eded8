// SPDX-License-Identifier: MIT
/*
 * jparse.c - a small strict JSON (RFC 8259) parser: recursive descent over
 * a text of known length, nesting limited to JPARSE_MAX_DEPTH, strings
 * decoded to UTF-8 (surrogate pairs joined), numbers checked against the
 * grammar. Anything else, trailing garbage included, is an error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jparse.h"

/**
 * struct jp - state of a parse
 * @s: the text
 * @len: its length
 * @pos: next character
 * @depth: arrays and objects open
 * @err: where the message goes
 * @errlen: size of @err
 */
struct jp {
	const char *s;
	size_t len;
	size_t pos;
	unsigned int depth;
	char *err;
	size_t errlen;
};

static int jp_value(struct jp *p, struct jval *v);

/**
 * jp_fail() - record why the parse failed
 * @p: the parse
 * @what: the reason
 *
 * Return: -EINVAL.
 */
static int jp_fail(struct jp *p, const char *what)
{
	if (p->err && p->errlen)
		snprintf(p->err, p->errlen, "%s at offset %zu", what, p->pos);
	return -EINVAL;
}

static void jp_ws(struct jp *p)
{
	while (p->pos < p->len &&
	       (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
		p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
		p->pos++;
}

static bool jp_is_digit(struct jp *p)
{
	return p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9';
}

/**
 * jp_lit() - match a literal (true, false, null)
 * @p: the parse
 * @lit: the literal
 *
 * Return: true when it is there (and consumed).
 */
static bool jp_lit(struct jp *p, const char *lit)
{
	size_t n = strlen(lit);

	if (p->len - p->pos < n || memcmp(p->s + p->pos, lit, n))
		return false;
	p->pos += n;
	return true;
}

static int jp_number(struct jp *p, struct jval *v)
{
	size_t start = p->pos;
	bool integer = true, neg = false;
	char buf[64];
	size_t n;

	if (p->s[p->pos] == '-') {
		neg = true;
		p->pos++;
	}
	if (!jp_is_digit(p))
		return jp_fail(p, "bad number");
	if (p->s[p->pos] == '0') {
		p->pos++;
	} else {
		while (jp_is_digit(p))
			p->pos++;
	}
	if (p->pos < p->len && p->s[p->pos] == '.') {
		integer = false;
		p->pos++;
		if (!jp_is_digit(p))
			return jp_fail(p, "bad number");
		while (jp_is_digit(p))
			p->pos++;
	}
	if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
		integer = false;
		p->pos++;
		if (p->pos < p->len &&
		    (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
			p->pos++;
		if (!jp_is_digit(p))
			return jp_fail(p, "bad number");
		while (jp_is_digit(p))
			p->pos++;
	}
	n = p->pos - start;
	if (n >= sizeof(buf))
		return jp_fail(p, "number too long");
	memcpy(buf, p->s + start, n);
	buf[n] = '\0';
	v->type = JT_NUM;
	v->num = strtod(buf, NULL);
	if (integer && !neg) {
		errno = 0;
		v->u64 = strtoull(buf, NULL, 10);
		v->is_u64 = errno != ERANGE;
	}
	return 0;
}

static int jp_hex4(struct jp *p, unsigned int *out)
{
	unsigned int i, c = 0;

	if (p->len - p->pos < 4)
		return jp_fail(p, "bad \\u escape");
	for (i = 0; i < 4; i++) {
		char h = p->s[p->pos++];

		c <<= 4;
		if (h >= '0' && h <= '9')
			c |= (unsigned int)(h - '0');
		else if (h >= 'a' && h <= 'f')
			c |= (unsigned int)(h - 'a' + 10);
		else if (h >= 'A' && h <= 'F')
			c |= (unsigned int)(h - 'A' + 10);
		else
			return jp_fail(p, "bad \\u escape");
	}
	*out = c;
	return 0;
}

/* Append the UTF-8 form of @c; @out has room for 4 more bytes. */
static size_t jp_utf8(char *out, unsigned int c)
{
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xc0 | (c >> 6));
		out[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		out[0] = (char)(0xe0 | (c >> 12));
		out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		out[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (c >> 18));
	out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	out[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

/* The escape after a backslash; appends to @out, advances @n. */
static int jp_escape(struct jp *p, char *out, size_t *n)
{
	unsigned int c, lo;
	char e;

	if (p->pos >= p->len)
		return jp_fail(p, "unterminated string");
	e = p->s[p->pos++];
	switch (e) {
	case '"':
	case '\\':
	case '/':
		out[(*n)++] = e;
		return 0;
	case 'b':
		out[(*n)++] = '\b';
		return 0;
	case 'f':
		out[(*n)++] = '\f';
		return 0;
	case 'n':
		out[(*n)++] = '\n';
		return 0;
	case 'r':
		out[(*n)++] = '\r';
		return 0;
	case 't':
		out[(*n)++] = '\t';
		return 0;
	case 'u':
		break;
	default:
		return jp_fail(p, "bad escape");
	}
	if (jp_hex4(p, &c))
		return -EINVAL;
	if (c >= 0xdc00 && c <= 0xdfff)
		return jp_fail(p, "lone low surrogate");
	if (c >= 0xd800 && c <= 0xdbff) {
		if (!jp_lit(p, "\\u") || jp_hex4(p, &lo) || lo < 0xdc00 ||
		    lo > 0xdfff)
			return jp_fail(p, "lone high surrogate");
		c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
	}
	*n += jp_utf8(out + *n, c);
	return 0;
}

/**
 * jp_string() - parse a string, the opening quote being next
 * @p: the parse
 * @out: set to the decoded, NUL-terminated string (malloc'd)
 *
 * The decoded form is never longer than the text (an escape of 6 or 12
 * characters gives at most 4 bytes), so one allocation of the text's
 * length suffices.
 *
 * Return: 0 or a negative errno.
 */
static int jp_string(struct jp *p, char **out)
{
	size_t start = ++p->pos, n = 0;
	char *buf;

	/* Find the end first, to size the buffer. */
	while (p->pos < p->len && p->s[p->pos] != '"') {
		if (p->s[p->pos] == '\\')
			p->pos++;
		p->pos++;
	}
	if (p->pos >= p->len)
		return jp_fail(p, "unterminated string");
	buf = malloc(p->pos - start + 1);
	if (!buf)
		return -ENOMEM;
	p->pos = start;
	while (p->s[p->pos] != '"') {
		unsigned char c = (unsigned char)p->s[p->pos];

		if (c < 0x20) {
			free(buf);
			return jp_fail(p, "control character in string");
		}
		p->pos++;
		if (c != '\\') {
			buf[n++] = (char)c;
			continue;
		}
		if (jp_escape(p, buf, &n)) {
			free(buf);
			return -EINVAL;
		}
	}
	p->pos++;
	buf[n] = '\0';
	*out = buf;
	return 0;
}

/* Room for one more element of an array or object. */
static int jp_grow(struct jval *v, size_t *cap, bool keys)
{
	struct jval *items;
	char **k;
	size_t ncap;

	if (v->n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 8;
	items = realloc(v->items, ncap * sizeof(*items));
	if (!items)
		return -ENOMEM;
	v->items = items;
	if (keys) {
		k = realloc(v->keys, ncap * sizeof(*k));
		if (!k)
			return -ENOMEM;
		v->keys = k;
	}
	*cap = ncap;
	return 0;
}

/* An array or object, its opening bracket being next. */
static int jp_container(struct jp *p, struct jval *v, bool obj)
{
	char close = obj ? '}' : ']';
	size_t cap = 0;
	int ret;

	if (++p->depth > JPARSE_MAX_DEPTH)
		return jp_fail(p, "nested too deep");
	v->type = obj ? JT_OBJ : JT_ARR;
	p->pos++;
	jp_ws(p);
	if (p->pos < p->len && p->s[p->pos] == close) {
		p->pos++;
		p->depth--;
		return 0;
	}
	for (;;) {
		ret = jp_grow(v, &cap, obj);
		if (ret)
			return ret;
		memset(&v->items[v->n], 0, sizeof(v->items[v->n]));
		if (obj) {
			v->keys[v->n] = NULL;
			jp_ws(p);
			if (p->pos >= p->len || p->s[p->pos] != '"')
				return jp_fail(p, "expected a key");
			ret = jp_string(p, &v->keys[v->n]);
			if (ret)
				return ret;
			jp_ws(p);
			if (p->pos >= p->len || p->s[p->pos] != ':') {
				v->n++;
				return jp_fail(p, "expected ':'");
			}
			p->pos++;
		}
		ret = jp_value(p, &v->items[v->n]);
		v->n++;
		if (ret)
			return ret;
		jp_ws(p);
		if (p->pos < p->len && p->s[p->pos] == ',') {
			p->pos++;
			continue;
		}
		if (p->pos < p->len && p->s[p->pos] == close) {
			p->pos++;
			p->depth--;
			return 0;
		}
		return jp_fail(p, obj ? "expected ',' or '}'"
				      : "expected ',' or ']'");
	}
}

static int jp_value(struct jp *p, struct jval *v)
{
	jp_ws(p);
	if (p->pos >= p->len)
		return jp_fail(p, "unexpected end");
	switch (p->s[p->pos]) {
	case '{':
		return jp_container(p, v, true);
	case '[':
		return jp_container(p, v, false);
	case '"':
		v->type = JT_STR;
		return jp_string(p, &v->str);
	case 't':
	case 'f':
		v->type = JT_BOOL;
		v->b = p->s[p->pos] == 't';
		if (jp_lit(p, v->b ? "true" : "false"))
			return 0;
		break;
	case 'n':
		v->type = JT_NULL;
		if (jp_lit(p, "null"))
			return 0;
		break;
	default:
		if (p->s[p->pos] == '-' || jp_is_digit(p))
			return jp_number(p, v);
	}
	return jp_fail(p, "unexpected character");
}

static void jval_clear(struct jval *v)
{
	size_t i;

	for (i = 0; i < v->n; i++) {
		jval_clear(&v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->str);
}

/**
 * jparse() - parse a JSON text
 * @text: the text, not necessarily NUL-terminated
 * @len: its length
 * @err: filled with the reason on failure (may be NULL)
 * @errlen: size of @err
 *
 * The text must be exactly one value, with optional white space around.
 *
 * Return: the value (free with jparse_free()), or NULL on a syntax error
 * or when out of memory.
 */
struct jval *jparse(const char *text, size_t len, char *err, size_t errlen)
{
	struct jp p = { .s = text, .len = len, .err = err, .errlen = errlen };
	struct jval *v = calloc(1, sizeof(*v));
	int ret;

	if (!v) {
		if (err && errlen)
			snprintf(err, errlen, "out of memory");
		return NULL;
	}
	ret = jp_value(&p, v);
	if (!ret) {
		jp_ws(&p);
		if (p.pos != p.len)
			ret = jp_fail(&p, "trailing characters");
	}
	if (ret == -ENOMEM && err && errlen)
		snprintf(err, errlen, "out of memory");
	if (ret) {
		jparse_free(v);
		return NULL;
	}
	return v;
}

/**
 * jparse_free() - free a value returned by jparse()
 * @v: the value, or NULL
 */
void jparse_free(struct jval *v)
{
	if (!v)
		return;
	jval_clear(v);
	free(v);
}

/**
 * jget() - a member of an object
 * @obj: the object (anything else, or NULL, has no members)
 * @key: the member's name
 *
 * Return: the first member named @key, or NULL.
 */
const struct jval *jget(const struct jval *obj, const char *key)
{
	size_t i;

	if (!obj || obj->type != JT_OBJ)
		return NULL;
	for (i = 0; i < obj->n; i++)
		if (!strcmp(obj->keys[i], key))
			return &obj->items[i];
	return NULL;
}

/**
 * jget_str() - a string member of an object
 * @obj: the object
 * @key: the member's name
 * @dflt: returned when there is no such string member
 *
 * Return: the string or @dflt.
 */
const char *jget_str(const struct jval *obj, const char *key, const char *dflt)
{
	const struct jval *v = jget(obj, key);

	return v && v->type == JT_STR ? v->str : dflt;
}

/**
 * jget_u64() - a non-negative integer member of an object
 * @obj: the object
 * @key: the member's name
 * @dflt: returned when there is no such member
 *
 * Return: the number or @dflt.
 */
uint64_t jget_u64(const struct jval *obj, const char *key, uint64_t dflt)
{
	const struct jval *v = jget(obj, key);

	return v && v->type == JT_NUM && v->is_u64 ? v->u64 : dflt;
}

/**
 * jget_num() - a number member of an object
 * @obj: the object
 * @key: the member's name
 * @dflt: returned when there is no such member
 *
 * Return: the number or @dflt.
 */
double jget_num(const struct jval *obj, const char *key, double dflt)
{
	const struct jval *v = jget(obj, key);

	return v && v->type == JT_NUM ? v->num : dflt;
}

/**
 * jget_has() - whether an object has a member
 * @obj: the object
 * @key: the member's name
 *
 * Return: true when it has.
 */
bool jget_has(const struct jval *obj, const char *key)
{
	return jget(obj, key) != NULL;
}
