/* SPDX-License-Identifier: MIT */
/*
 * log.h - library logging: silent by default, a user callback or stderr,
 * level from ibtrs_set_log_level() or IBTRS_LOG_LEVEL.
 */
#ifndef IBTRS_LOG_H
#define IBTRS_LOG_H

#include <stdbool.h>

#include "ibtrs.h"

bool ibtrs_log_enabled(enum ibtrs_log_level level);
void ibtrs_log_msg(enum ibtrs_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define ibtrs_log(level, ...)                              \
	do {                                               \
		if (ibtrs_log_enabled(level))              \
			ibtrs_log_msg(level, __VA_ARGS__); \
	} while (0)

/*
 * Rate-limited variant for the data path: at most a burst of messages per
 * second from one call site.
 */
#define ibtrs_log_rl(level, ...)                              \
	do {                                                  \
		static _Atomic unsigned long ibtrs_rl_state_; \
		if (ibtrs_log_enabled(level) &&               \
		    ibtrs_log_ratelimit(&ibtrs_rl_state_))    \
			ibtrs_log_msg(level, __VA_ARGS__);    \
	} while (0)

bool ibtrs_log_ratelimit(_Atomic unsigned long *state);

#endif /* IBTRS_LOG_H */
