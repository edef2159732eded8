/* SPDX-License-Identifier: MIT */
/*
 * ibtrs_fault.h - fault injection into client paths, for testing.
 *
 * A test interface, versioned apart from the stable API of <ibtrs.h>:
 * IBTRS_FAULT_VERSION changes whenever anything below does, and the
 * symbols are in their own version node (IBTRS_FAULT_1). Programs that
 * must build on every release check the version before use.
 *
 * Compatibility: up to libibtrs 0.1 these declarations were in <ibtrs.h>
 * and ibtrs_clt_inject_fault was in the IBTRS_0.1 node. The name and the
 * signature are unchanged; sources include this header instead, and
 * binaries linked against IBTRS_0.1 keep finding the symbol there.
 */
#ifndef IBTRS_FAULT_H
#define IBTRS_FAULT_H

#include <ibtrs.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(IBTRS_BUILD) && defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* The version of this interface (not of the library). */
#define IBTRS_FAULT_VERSION 1

/**
 * enum ibtrs_fault_type - faults ibtrs_clt_inject_fault() can inject
 * @IBTRS_FAULT_NONE: clear the path's fault
 * @IBTRS_FAULT_DROP: the path silently loses everything it sends and
 *                    receives, as a cut cable would (heartbeats included)
 * @IBTRS_FAULT_DELAY: every response on the path is held @arg milliseconds
 * @IBTRS_FAULT_CLOSE: the path's connections are closed now, as if the
 *                     peer had reset them
 */
enum ibtrs_fault_type {
	IBTRS_FAULT_NONE,
	IBTRS_FAULT_DROP,
	IBTRS_FAULT_DELAY,
	IBTRS_FAULT_CLOSE,
};

/**
 * ibtrs_clt_inject_fault() - inject a fault into one path
 * @sess: the session
 * @idx: path index
 * @type: the fault
 * @arg: milliseconds for IBTRS_FAULT_DELAY, else 0
 *
 * Faults can also come from the environment at open: IBTRS_FAULT is a
 * list of IDX:TYPE[=ARG][@AFTER_MS] separated by commas, e.g.
 * "1:drop@3000" drops path 1 three seconds after the session opened and
 * "0:delay=20" delays path 0's responses by 20 ms.
 *
 * Return: 0, -ENOENT for a bad @idx, -EINVAL for a bad @type.
 *
 * Context: any.
 */
int ibtrs_clt_inject_fault(struct ibtrs_clt *sess, unsigned int idx,
			   enum ibtrs_fault_type type, unsigned int arg);

#if defined(IBTRS_BUILD) && defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif /* IBTRS_FAULT_H */
