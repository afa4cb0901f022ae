/*
 * The Ed25519 plugin (libcachet-ed25519.so): OpenSSL's EVP layer, which
 * remote signatures need and nothing else does. Linked into cachet, its
 * provider tables alone (360 KB of relocated pointers) cost every process
 * 90 page faults at start, a tenth of a hit; loaded on demand, only runs
 * that sign or check a signature pay for it.
 *
 * The plugin links nothing of cachet's: errors come back as text in why.
 */
#ifndef CACHET_REMOTE_ED25519_H
#define CACHET_REMOTE_ED25519_H

#include <stddef.h>

#define ED25519_PUBKEY_LEN    32
#define ED25519_SIG_LEN       64
#define ED25519_PLUGIN        "libcachet-ed25519.so"
#define ED25519_PLUGIN_SYMBOL "cachet_ed25519_ops"

struct ed25519_ops {
	/* Writes a new private key (mode 0600) to path and its public key
	 * (0644) to pub_path, both PEM, neither overwritten. 0 or -1. */
	int (*keygen)(const char *path, const char *pub_path, unsigned char *pub, char *why,
	              size_t cap);
	/* A PEM private key; NULL with why set. */
	void *(*load_private)(const char *path, unsigned char *pub, char *why, size_t cap);
	/* A PEM public key into pub: 0 or -1. */
	int (*load_public)(const char *path, unsigned char *pub);
	void (*free_key)(void *key);
	int (*sign)(void *key, const unsigned char *msg, size_t len, unsigned char *sig);
	/* 1 when sig is pub's signature of msg. */
	int (*verify)(const unsigned char *pub, const unsigned char *msg, size_t len,
	              const unsigned char *sig);
};

typedef const struct ed25519_ops *(*ed25519_plugin_fn)(void);

#endif
