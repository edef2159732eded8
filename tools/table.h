/* SPDX-License-Identifier: MIT */
/*
 * table.h - human units and text tables with aligned columns, for the
 * tables of "ibtrs status".
 */
#ifndef IBTRS_TOOL_TABLE_H
#define IBTRS_TOOL_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Table geometry. */
#define ST_COLS 24
#define ST_CELL 160

/**
 * struct st_table - a table of text cells printed with aligned columns
 * @ncols: number of columns
 * @head: column headings
 * @right: per column, align to the right (numbers)
 * @rows: the cells, @nrows rows
 * @nrows: number of rows
 */
struct st_table {
	unsigned int ncols;
	const char *const *head;
	const bool *right;
	char (*rows)[ST_COLS][ST_CELL];
	size_t nrows;
};

void st_human_count(char *buf, size_t size, uint64_t v);
void st_human_bytes(char *buf, size_t size, uint64_t v);
void st_human_us(char *buf, size_t size, uint64_t us);
char (*st_row(struct st_table *t))[ST_CELL];
void st_table_print(FILE *f, struct st_table *t, const char *indent);

#endif /* IBTRS_TOOL_TABLE_H */
