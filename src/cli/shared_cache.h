/*
 * Whether others than the user can write the cache: then what the local
 * index, memos or blobs say is no more trusted than a remote's word, and a
 * local hit restores only beneath the step's output roots.
 */
#ifndef CACHET_CLI_SHARED_CACHE_H
#define CACHET_CLI_SHARED_CACHE_H

/* 1 when the cache directory, its index (index.db) or its memo directory
 * is writable by its group or by others, or owned by another user than the
 * effective one: anyone who can write there can make the index or a memo
 * name any path. An entry that cannot be examined counts as writable. */
int cache_others_can_write(const char *cache_dir);

#endif
