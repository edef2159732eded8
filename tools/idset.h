/* SPDX-License-Identifier: MIT */
/*
 * idset.h - the set of request ids a server has seen, to count the
 * requests that ran twice.
 *
 * A request id holds a client instance in its high 32 bits and a sequence
 * number counting from 1 in its low 32 bits (struct tool_blk_msg), so the
 * ids a client sends come in runs of consecutive numbers. The set keeps
 * them as bitmaps of IDSET_CHUNK_IDS consecutive ids each, in a hash table
 * keyed by the id's other bits: a client's ids cost a bit and a fraction
 * each, and a look-up mostly finds the chunk of the id before it. Ids of
 * any other shape work as well, at a chunk per id at worst.
 */
#ifndef IBTRS_TOOL_IDSET_H
#define IBTRS_TOOL_IDSET_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IDSET_CHUNK_SHIFT 9 /* ids per chunk: 512 */
#define IDSET_CHUNK_IDS (1u << IDSET_CHUNK_SHIFT)
/* Memory the set may take; an id that would need more finds it full. */
#define IDSET_MAX_BYTES ((size_t)256 << 20)

struct idset_chunk;

/**
 * struct idset - a set of request ids
 * @lock: protects the other fields
 * @chunks: the chunks, open addressing on the id without its low
 *          IDSET_CHUNK_SHIFT bits
 * @mask: slots of @chunks minus one; 0 before the first id
 * @nchunks: chunks in use
 * @last: the chunk of the last id looked up, or NULL
 * @count: ids in the set
 * @full: an id could not be added within IDSET_MAX_BYTES (or memory ran
 *        out): no more are added, those in the set are still found
 */
struct idset {
	pthread_mutex_t lock;
	struct idset_chunk *chunks;
	size_t mask;
	size_t nchunks;
	struct idset_chunk *last;
	uint64_t count;
	bool full;
};

void idset_init(struct idset *set);
bool idset_seen(struct idset *set, uint64_t id, bool *now_full);
void idset_stats(struct idset *set, uint64_t *count, bool *full);
void idset_free(struct idset *set);

#endif /* IBTRS_TOOL_IDSET_H */
