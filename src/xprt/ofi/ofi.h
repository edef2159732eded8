/* SPDX-License-Identifier: MIT */
/*
 * ofi.h - internals of the libfabric backend that tests may inspect.
 *
 * Nothing here includes libfabric: a test built without the backend
 * declares these weak and skips when they are absent.
 */
#ifndef IBTRS_OFI_H
#define IBTRS_OFI_H

#include <stddef.h>
#include <stdint.h>

/**
 * struct ofi_stats - process-wide counters of the ofi backend
 * @writes: RMA writes issued without remote CQ data
 * @writes_imm: RMA writes issued with FI_REMOTE_CQ_DATA (write with imm)
 * @sends: two-sided sends issued
 * @recv_imm: remote CQ data completions (immediates) received
 * @recv_send: receive completions of the peer's sends
 * @tx_direct: work requests posted straight from registered memory
 * @tx_bounce: work requests copied into a registered bounce buffer
 * @mr_direct: mr_map() calls that registered the caller's memory
 * @mr_bounce: mr_map() calls that registered a bounce buffer instead
 * @mr_sync_copies: mr_sync() calls that copied a bounce buffer out
 * @backlog: work requests held back because the provider queue was full
 * @conn_failures: connections that reported err()
 */
struct ofi_stats {
	uint64_t writes;
	uint64_t writes_imm;
	uint64_t sends;
	uint64_t recv_imm;
	uint64_t recv_send;
	uint64_t tx_direct;
	uint64_t tx_bounce;
	uint64_t mr_direct;
	uint64_t mr_bounce;
	uint64_t mr_sync_copies;
	uint64_t backlog;
	uint64_t conn_failures;
};

/* A snapshot of the counters. */
void ofi_stats_get(struct ofi_stats *stats);

/*
 * Probe for a usable provider (IBTRS_OFI_PROVIDER or the default choice).
 * Returns 0 and its name in @name, or a negative errno.
 */
int ofi_provider_probe(char *name, size_t len);

#endif /* IBTRS_OFI_H */
