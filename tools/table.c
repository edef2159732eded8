// SPDX-License-Identifier: MIT
/*
 * table.c - human units and text tables (see table.h).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"

/**
 * st_scaled() - a number with three significant digits and a unit
 * @buf: output, at least 16 bytes
 * @size: size of @buf
 * @v: the value in units of @units[0]
 * @base: factor between units
 * @units: unit names, NULL-terminated
 */
static void st_scaled(char *buf, size_t size, double v, double base,
		      const char *const *units)
{
	size_t u = 0;

	while (units[u + 1] && v >= base - 0.5)
		v /= base, u++;
	/* 9.996 rounds to "10.00": keep three digits. */
	if (v < 9.995)
		snprintf(buf, size, "%.2f%s", v, units[u]);
	else if (v < 99.95)
		snprintf(buf, size, "%.1f%s", v, units[u]);
	else
		snprintf(buf, size, "%.0f%s", v, units[u]);
}

/* Requests: 987, 57.3k, 1.20M. */
void st_human_count(char *buf, size_t size, uint64_t v)
{
	static const char *const units[] = { "", "k", "M", "G", "T", "P", NULL };

	if (v < 1000)
		snprintf(buf, size, "%llu", (unsigned long long)v);
	else
		st_scaled(buf, size, (double)v, 1000, units);
}

/* Bytes: 512B, 4.00KiB, 224MiB. */
void st_human_bytes(char *buf, size_t size, uint64_t v)
{
	static const char *const units[] = { "B",   "KiB", "MiB", "GiB",
					     "TiB", "PiB", NULL };

	if (v < 1024)
		snprintf(buf, size, "%lluB", (unsigned long long)v);
	else
		st_scaled(buf, size, (double)v, 1024, units);
}

/* Microseconds: 58us, 3.01ms, 1.20s; "-" for 0 (nothing measured). */
void st_human_us(char *buf, size_t size, uint64_t us)
{
	static const char *const units[] = { "us", "ms", "s", NULL };

	if (!us)
		snprintf(buf, size, "-");
	else if (us < 1000)
		snprintf(buf, size, "%lluus", (unsigned long long)us);
	else
		st_scaled(buf, size, (double)us, 1000, units);
}

/**
 * st_row() - append a row
 * @t: the table
 *
 * Return: the row's cells (empty), or NULL when out of memory.
 */
char (*st_row(struct st_table *t))[ST_CELL]
{
	char(*nr)[ST_COLS][ST_CELL];

	nr = realloc(t->rows, (t->nrows + 1) * sizeof(*nr));
	if (!nr)
		return NULL;
	t->rows = nr;
	memset(nr[t->nrows], 0, sizeof(nr[t->nrows]));
	return nr[t->nrows++];
}

/**
 * st_table_print() - print a table and free its rows
 * @f: output stream
 * @t: the table
 * @indent: printed before every line
 */
void st_table_print(FILE *f, struct st_table *t, const char *indent)
{
	size_t w[ST_COLS], i, r;

	for (i = 0; i < t->ncols; i++) {
		w[i] = strlen(t->head[i]);
		for (r = 0; r < t->nrows; r++)
			if (strlen(t->rows[r][i]) > w[i])
				w[i] = strlen(t->rows[r][i]);
	}
	for (r = 0; r <= t->nrows; r++) {
		fputs(indent, f);
		for (i = 0; i < t->ncols; i++) {
			const char *c = r ? t->rows[r - 1][i] : t->head[i];
			bool last = i + 1 == t->ncols;

			if (i)
				fputs("  ", f);
			if (t->right[i])
				fprintf(f, "%*s", (int)w[i], c);
			else
				fprintf(f, "%-*s", last ? 0 : (int)w[i], c);
		}
		fputc('\n', f);
	}
	free(t->rows);
	t->rows = NULL;
	t->nrows = 0;
}
