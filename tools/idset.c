// SPDX-License-Identifier: MIT
/*
 * idset.c - the set of request ids a server has seen.
 */
#include <stdlib.h>
#include <string.h>

#include "idset.h"

#define IDSET_MIN_SLOTS 64
#define IDSET_WORDS (IDSET_CHUNK_IDS / 64)

/**
 * struct idset_chunk - IDSET_CHUNK_IDS consecutive ids
 * @key: the ids' high bits (id >> IDSET_CHUNK_SHIFT) plus one; 0 marks a
 *       free slot
 * @bits: bit i stands for the id (@key - 1) << IDSET_CHUNK_SHIFT | i
 */
struct idset_chunk {
	uint64_t key;
	uint64_t bits[IDSET_WORDS];
};

/**
 * idset_init() - make an empty set
 * @set: the set
 */
void idset_init(struct idset *set)
{
	memset(set, 0, sizeof(*set));
	pthread_mutex_init(&set->lock, NULL);
}

/* The first slot to probe for @key (the splitmix64 finalizer). */
static size_t chunk_slot(uint64_t key, size_t mask)
{
	key ^= key >> 30;
	key *= 0xbf58476d1ce4e5b9ull;
	key ^= key >> 27;
	key *= 0x94d049bb133111ebull;
	return (size_t)(key ^ (key >> 31)) & mask;
}

/* The chunk of @key, or the free slot where it goes; table not empty. */
static struct idset_chunk *chunk_find(struct idset_chunk *chunks, size_t mask,
				      uint64_t key)
{
	size_t i = chunk_slot(key, mask);

	while (chunks[i].key && chunks[i].key != key)
		i = (i + 1) & mask;
	return &chunks[i];
}

/**
 * chunks_grow() - double the slots of the table (or make the first ones)
 * @set: the set, locked
 *
 * Return: true, or false when IDSET_MAX_BYTES or memory does not allow it.
 */
static bool chunks_grow(struct idset *set)
{
	size_t n = set->chunks ? (set->mask + 1) * 2 : IDSET_MIN_SLOTS, i;
	struct idset_chunk *chunks;

	if (n > IDSET_MAX_BYTES / sizeof(*chunks))
		return false;
	chunks = calloc(n, sizeof(*chunks));
	if (!chunks)
		return false;
	for (i = 0; set->chunks && i <= set->mask; i++)
		if (set->chunks[i].key)
			*chunk_find(chunks, n - 1, set->chunks[i].key) =
				set->chunks[i];
	free(set->chunks);
	set->chunks = chunks;
	set->mask = n - 1;
	set->last = NULL;
	return true;
}

/**
 * idset_seen() - look an id up and remember it
 * @set: the set
 * @id: the id
 * @now_full: set to true when this id found the set full for the first
 *            time (it is not remembered), else left alone
 *
 * Return: true when @id was in the set already.
 */
bool idset_seen(struct idset *set, uint64_t id, bool *now_full)
{
	uint64_t key = (id >> IDSET_CHUNK_SHIFT) + 1;
	unsigned int i = id % IDSET_CHUNK_IDS;
	uint64_t bit = 1ull << (i % 64);
	struct idset_chunk *c = NULL;
	bool seen = false;

	pthread_mutex_lock(&set->lock);
	if (set->last && set->last->key == key)
		c = set->last;
	else if (set->chunks)
		c = chunk_find(set->chunks, set->mask, key);
	if (c && c->key == key)
		seen = c->bits[i / 64] & bit;
	if (!seen && !set->full) {
		if (!c ||
		    (!c->key && (set->nchunks + 1) * 4 > (set->mask + 1) * 3)) {
			c = chunks_grow(set)
				    ? chunk_find(set->chunks, set->mask, key)
				    : NULL;
		}
		if (c) {
			if (!c->key) {
				c->key = key;
				set->nchunks++;
			}
			c->bits[i / 64] |= bit;
			set->count++;
		} else {
			set->full = *now_full = true;
		}
	}
	if (c && c->key == key)
		set->last = c;
	pthread_mutex_unlock(&set->lock);
	return seen;
}

/**
 * idset_stats() - what the set holds
 * @set: the set
 * @count: set to the number of ids in it
 * @full: set to whether it is full
 */
void idset_stats(struct idset *set, uint64_t *count, bool *full)
{
	pthread_mutex_lock(&set->lock);
	*count = set->count;
	*full = set->full;
	pthread_mutex_unlock(&set->lock);
}

/**
 * idset_free() - empty the set, which stays usable
 * @set: the set
 */
void idset_free(struct idset *set)
{
	pthread_mutex_lock(&set->lock);
	free(set->chunks);
	set->chunks = NULL;
	set->mask = 0;
	set->nchunks = 0;
	set->last = NULL;
	set->count = 0;
	set->full = false;
	pthread_mutex_unlock(&set->lock);
}
