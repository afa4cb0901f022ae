/* The Ed25519 plugin: see ed25519.h. */
#include "remote/ed25519.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void say(char *why, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, cap, fmt, ap);
	va_end(ap);
}

static int raw_public(EVP_PKEY *k, unsigned char *out)
{
	size_t n = ED25519_PUBKEY_LEN;
	return EVP_PKEY_get_raw_public_key(k, out, &n) == 1 && n == ED25519_PUBKEY_LEN ? 0 : -1;
}

/* Creates path exclusively with mode and writes k to it as PEM. */
static int write_pem(const char *path, mode_t mode, EVP_PKEY *k, int private_key, char *why,
                     size_t cap)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0) {
		say(why, cap, "cannot create %s: %m", path);
		return -1;
	}
	FILE *f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(path);
		say(why, cap, "cannot write %s: %m", path);
		return -1;
	}
	int ok = private_key ? PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL)
	                     : PEM_write_PUBKEY(f, k);
	if (fclose(f) != 0 || ok != 1) {
		unlink(path);
		say(why, cap, "cannot write %s", path);
		return -1;
	}
	return 0;
}

static int keygen(const char *path, const char *pub_path, unsigned char *pub, char *why, size_t cap)
{
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	if (!k) {
		say(why, cap, "cannot generate an Ed25519 key");
		return -1;
	}
	int rc = 0;
	if (raw_public(k, pub) < 0) {
		say(why, cap, "cannot read the public key");
		rc = -1;
	} else if (access(pub_path, F_OK) == 0) {
		say(why, cap, "%s already exists", pub_path);
		rc = -1;
	} else if (write_pem(path, 0600, k, 1, why, cap) < 0) {
		rc = -1;
	} else if (write_pem(pub_path, 0644, k, 0, why, cap) < 0) {
		unlink(path);
		rc = -1;
	}
	EVP_PKEY_free(k);
	return rc;
}

static void *load_private(const char *path, unsigned char *pub, char *why, size_t cap)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		say(why, cap, "cannot read the signing key %s: %m", path);
		return NULL;
	}
	EVP_PKEY *k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	if (!k || EVP_PKEY_get_id(k) != EVP_PKEY_ED25519 || raw_public(k, pub) < 0) {
		EVP_PKEY_free(k);
		say(why, cap, "%s is not an Ed25519 private key (cachet keygen makes one)", path);
		return NULL;
	}
	return k;
}

static int load_public(const char *path, unsigned char *pub)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	EVP_PKEY *k = PEM_read_PUBKEY(f, NULL, NULL, NULL);
	fclose(f);
	int rc = k && EVP_PKEY_get_id(k) == EVP_PKEY_ED25519 && raw_public(k, pub) == 0 ? 0 : -1;
	EVP_PKEY_free(k);
	return rc;
}

static void free_key(void *key)
{
	EVP_PKEY_free(key);
}

static int sign(void *key, const unsigned char *msg, size_t len, unsigned char *sig)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	size_t siglen = ED25519_SIG_LEN;
	int ok = ctx && EVP_DigestSignInit(ctx, NULL, NULL, NULL, key) == 1 &&
	         EVP_DigestSign(ctx, sig, &siglen, msg, len) == 1 && siglen == ED25519_SIG_LEN;
	EVP_MD_CTX_free(ctx);
	return ok ? 0 : -1;
}

static int verify(const unsigned char *pub, const unsigned char *msg, size_t len,
                  const unsigned char *sig)
{
	EVP_PKEY *k = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, pub, ED25519_PUBKEY_LEN);
	if (!k)
		return 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int ok = ctx && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, k) == 1 &&
	         EVP_DigestVerify(ctx, sig, ED25519_SIG_LEN, msg, len) == 1;
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(k);
	return ok;
}

static const struct ed25519_ops ops = {
    keygen, load_private, load_public, free_key, sign, verify,
};

__attribute__((visibility("default"))) const struct ed25519_ops *cachet_ed25519_ops(void);

const struct ed25519_ops *cachet_ed25519_ops(void)
{
	return &ops;
}
