/* SPDX-License-Identifier: MIT */
/*
 * status.h - the renderers of "ibtrs status", one per --format.
 */
#ifndef IBTRS_TOOL_STATUS_H
#define IBTRS_TOOL_STATUS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ctlclient.h"

void st_print_prom(FILE *f, const struct st_set *set);

#endif /* IBTRS_TOOL_STATUS_H */
