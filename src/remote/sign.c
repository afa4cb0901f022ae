/*
 * Ed25519 signatures over remote entries (OpenSSL libcrypto, which cachet
 * links anyway for SHA-256: signing adds no library). A server can be made
 * to return any bytes, so with trusted keys configured an entry counts only
 * when one of them signed exactly these keys and this result.
 */
#include "cachet/remote.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct remote_signer {
	EVP_PKEY *key;
	unsigned char pub[REMOTE_PUBKEY_LEN];
};

static int raw_public(EVP_PKEY *k, unsigned char out[REMOTE_PUBKEY_LEN])
{
	size_t n = REMOTE_PUBKEY_LEN;
	return EVP_PKEY_get_raw_public_key(k, out, &n) == 1 && n == REMOTE_PUBKEY_LEN ? 0 : -1;
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

/* Creates path exclusively with mode and writes k to it as PEM. */
static int write_pem(const char *path, mode_t mode, EVP_PKEY *k, int private_key, struct error *e)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return error_errno(e, "cannot create %s", path);
	FILE *f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(path);
		return error_errno(e, "cannot write %s", path);
	}
	int ok = private_key ? PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL)
			     : PEM_write_PUBKEY(f, k);
	if (fclose(f) != 0 || ok != 1) {
		unlink(path);
		return error_set(e, "cannot write %s", path);
	}
	return 0;
}

int sign_keygen(const char *path, char *hex_out, struct error *e)
{
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	if (!k)
		return error_set(e, "cannot generate an Ed25519 key");
	char *pub_path = xasprintf("%s.pub", path);
	unsigned char pub[REMOTE_PUBKEY_LEN];
	int rc = raw_public(k, pub) < 0 ? error_set(e, "cannot read the public key") : 0;
	if (rc == 0 && access(pub_path, F_OK) == 0)
		rc = error_set(e, "%s already exists", pub_path);
	if (rc == 0)
		rc = write_pem(path, 0600, k, 1, e);
	if (rc == 0 && write_pem(pub_path, 0644, k, 0, e) < 0) {
		unlink(path);
		rc = -1;
	}
	if (rc == 0)
		to_hex(pub, REMOTE_PUBKEY_LEN, hex_out);
	free(pub_path);
	EVP_PKEY_free(k);
	return rc;
}

struct remote_signer *sign_load(const char *path, struct error *e)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		error_errno(e, "cannot read the signing key %s", path);
		return NULL;
	}
	EVP_PKEY *k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	if (!k || EVP_PKEY_get_id(k) != EVP_PKEY_ED25519) {
		EVP_PKEY_free(k);
		error_set(e, "%s is not an Ed25519 private key (cachet keygen makes one)", path);
		return NULL;
	}
	struct remote_signer *s = xcalloc(1, sizeof *s);
	s->key = k;
	if (raw_public(k, s->pub) < 0) {
		sign_free(s);
		error_set(e, "%s: cannot derive the public key", path);
		return NULL;
	}
	return s;
}

void sign_free(struct remote_signer *s)
{
	if (!s)
		return;
	EVP_PKEY_free(s->key);
	free(s);
}

static int sign_digest(struct remote_signer *s, const struct digest *msg,
		       unsigned char pub[REMOTE_PUBKEY_LEN], unsigned char sig[REMOTE_SIG_LEN],
		       struct error *e)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	size_t siglen = REMOTE_SIG_LEN;
	int ok = ctx && EVP_DigestSignInit(ctx, NULL, NULL, NULL, s->key) == 1 &&
		 EVP_DigestSign(ctx, sig, &siglen, msg->b, DIGEST_LEN) == 1 &&
		 siglen == REMOTE_SIG_LEN;
	EVP_MD_CTX_free(ctx);
	if (!ok)
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
		FILE *f = fopen(item, "re");
		if (!f) {
			trusted_keys_free(out);
			return error_errno(e, "trusted key %s", item);
		}
		EVP_PKEY *k = PEM_read_PUBKEY(f, NULL, NULL, NULL);
		fclose(f);
		if (!k || EVP_PKEY_get_id(k) != EVP_PKEY_ED25519 || raw_public(k, out->keys[out->n]) < 0) {
			EVP_PKEY_free(k);
			trusted_keys_free(out);
			return error_set(e, "trusted key %s: not an Ed25519 public key", item);
		}
		EVP_PKEY_free(k);
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
	EVP_PKEY *k = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, pub, REMOTE_PUBKEY_LEN);
	if (!k)
		return 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int ok = ctx && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, k) == 1 &&
		 EVP_DigestVerify(ctx, sig, REMOTE_SIG_LEN, msg->b, DIGEST_LEN) == 1;
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(k);
	return ok;
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
