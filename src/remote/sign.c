/*
 * Ed25519 signatures over remote entries. A server can be made to return
 * any bytes, so with trusted keys configured an entry counts only when one
 * of them signed exactly these keys and this result. The cryptography is
 * OpenSSL's, in a plugin loaded on first use (ed25519.h).
 */
#include "cachet/remote.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cachet/plugin.h"
#include "remote/ed25519.h"

_Static_assert(REMOTE_PUBKEY_LEN == ED25519_PUBKEY_LEN, "key sizes");
_Static_assert(REMOTE_SIG_LEN == ED25519_SIG_LEN, "signature sizes");

struct remote_signer {
	void *key;
	unsigned char pub[REMOTE_PUBKEY_LEN];
};

static char *plugin_dir;
static const struct ed25519_ops *loaded;

void sign_set_plugin_dir(const char *dir)
{
	free(plugin_dir);
	plugin_dir = dir ? xstrdup(dir) : NULL;
}

/* The plugin, loaded once; NULL with e set when it cannot be. */
static const struct ed25519_ops *ed25519(struct error *e)
{
	if (loaded)
		return loaded;
	char *dir = plugin_dir ? xstrdup(plugin_dir) : NULL;
	if (!dir) {
		char self[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
		if (n > 0) {
			self[n] = '\0';
			dir = remote_plugin_dir(self);
		}
	}
	if (!dir) {
		error_set(e, "the signature plugin %s is not installed", ED25519_PLUGIN);
		return NULL;
	}
	char *path = xasprintf("%s/%s", dir, ED25519_PLUGIN);
	ed25519_plugin_fn fn = (ed25519_plugin_fn)plugin_symbol(path, ED25519_PLUGIN_SYMBOL, e);
	if (fn)
		loaded = fn();
	free(path);
	free(dir);
	return loaded;
}

static void to_hex(const unsigned char *b, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	out[2 * n] = '\0';
}

int sign_keygen(const char *path, char *hex_out, struct error *e)
{
	const struct ed25519_ops *ops = ed25519(e);
	if (!ops)
		return -1;
	char *pub_path = xasprintf("%s.pub", path);
	unsigned char pub[REMOTE_PUBKEY_LEN];
	char why[512] = "";
	int rc = ops->keygen(path, pub_path, pub, why, sizeof why);
	if (rc < 0)
		error_set(e, "%s", why);
	else
		to_hex(pub, REMOTE_PUBKEY_LEN, hex_out);
	free(pub_path);
	return rc;
}

struct remote_signer *sign_load(const char *path, struct error *e)
{
	const struct ed25519_ops *ops = ed25519(e);
	if (!ops)
		return NULL;
	struct remote_signer *s = xcalloc(1, sizeof *s);
	char why[512] = "";
	s->key = ops->load_private(path, s->pub, why, sizeof why);
	if (!s->key) {
		free(s);
		error_set(e, "%s", why);
		return NULL;
	}
	return s;
}

void sign_free(struct remote_signer *s)
{
	if (!s)
		return;
	if (s->key && loaded)
		loaded->free_key(s->key);
	free(s);
}

static int sign_digest(struct remote_signer *s, const struct digest *msg,
                       unsigned char pub[REMOTE_PUBKEY_LEN], unsigned char sig[REMOTE_SIG_LEN],
                       struct error *e)
{
	/* A signer exists only once the plugin is loaded. */
	if (loaded->sign(s->key, msg->b, DIGEST_LEN, sig) < 0)
		return error_set(e, "cannot sign");
	memcpy(pub, s->pub, REMOTE_PUBKEY_LEN);
	return 0;
}

int sign_entry(struct remote_signer *s, struct remote_entry *en, struct error *e)
{
	struct digest msg;
	remote_entry_message(en, &msg);
	if (sign_digest(s, &msg, en->pubkey, en->sig, e) < 0)
		return -1;
	en->is_signed = 1;
	return 0;
}

int sign_pathset(struct remote_signer *s, const struct digest *weak, struct remote_pathset *set,
                 struct error *e)
{
	struct digest msg;
	remote_pathset_message(weak, set, &msg);
	if (sign_digest(s, &msg, set->pubkey, set->sig, e) < 0)
		return -1;
	set->is_signed = 1;
	return 0;
}

static int parse_hex_key(const char *s, unsigned char out[REMOTE_PUBKEY_LEN])
{
	if (strlen(s) != 2 * REMOTE_PUBKEY_LEN)
		return -1;
	for (size_t i = 0; i < REMOTE_PUBKEY_LEN; i++) {
		unsigned v;
		if (!isxdigit((unsigned char)s[2 * i]) || !isxdigit((unsigned char)s[2 * i + 1]) ||
		    sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (unsigned char)v;
	}
	return 0;
}

int trusted_keys_load(char *const *items, struct trusted_keys *out, struct error *e)
{
	memset(out, 0, sizeof *out);
	size_t n = 0;
	while (items && items[n])
		n++;
	out->keys = xcalloc(n ? n : 1, sizeof *out->keys);
	for (size_t i = 0; i < n; i++) {
		const char *item = items[i];
		if (parse_hex_key(item, out->keys[out->n]) == 0) {
			out->n++;
			continue;
		}
		if (access(item, R_OK) < 0) {
			trusted_keys_free(out);
			return error_errno(e, "trusted key %s", item);
		}
		const struct ed25519_ops *ops = ed25519(e);
		if (!ops) {
			trusted_keys_free(out);
			return -1;
		}
		if (ops->load_public(item, out->keys[out->n]) < 0) {
			trusted_keys_free(out);
			return error_set(e, "trusted key %s: not an Ed25519 public key", item);
		}
		out->n++;
	}
	return 0;
}

void trusted_keys_free(struct trusted_keys *t)
{
	free(t->keys);
	memset(t, 0, sizeof *t);
}

static int verify_digest(const struct trusted_keys *t, const struct digest *msg,
                         const unsigned char pub[REMOTE_PUBKEY_LEN],
                         const unsigned char sig[REMOTE_SIG_LEN])
{
	int trusted = 0;
	for (size_t i = 0; i < t->n && !trusted; i++)
		trusted = !memcmp(t->keys[i], pub, REMOTE_PUBKEY_LEN);
	if (!trusted)
		return 0;
	/* Without the plugin nothing can be verified: nothing is trusted. */
	const struct ed25519_ops *ops = ed25519(NULL);
	return ops && ops->verify(pub, msg->b, DIGEST_LEN, sig) == 1;
}

int trusted_keys_verify(const struct trusted_keys *t, const struct remote_entry *en)
{
	if (!en->is_signed)
		return 0;
	struct digest msg;
	remote_entry_message(en, &msg);
	return verify_digest(t, &msg, en->pubkey, en->sig);
}

int trusted_keys_verify_pathset(const struct trusted_keys *t, const struct digest *weak,
                                const struct remote_pathset *set)
{
	if (!set->is_signed)
		return 0;
	struct digest msg;
	remote_pathset_message(weak, set, &msg);
	return verify_digest(t, &msg, set->pubkey, set->sig);
}
