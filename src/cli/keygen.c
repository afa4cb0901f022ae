/*
 * cachet keygen: an Ed25519 key pair for signing uploaded entries. The
 * private key (mode 0600) goes where sign_key points on the machines that
 * write (CI); the public key, as a file or inline, into trusted_keys on the
 * machines that read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/buf.h"
#include "cachet/path.h"
#include "cachet/remote.h"
#include "cli/cli.h"

static char *default_key_path(void)
{
	const char *xdg = getenv("XDG_CONFIG_HOME");
	if (xdg && *xdg)
		return xasprintf("%s/cachet/signing.key", xdg);
	const char *home = getenv("HOME");
	return xasprintf("%s/.config/cachet/signing.key", home && *home ? home : ".");
}

int cmd_keygen(int argc, char **argv)
{
	const char *path = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(cli_help_text("keygen"), stdout);
			return 0;
		}
		int got = cli_option_value(argc, argv, &i, "keygen", "-f", &path);
		if (got < 0)
			return EXIT_USAGE;
		if (!got) {
			cli_error("usage: cachet keygen [-f FILE]");
			return EXIT_USAGE;
		}
	}
	char *owned = path ? NULL : default_key_path();
	if (!path) {
		path = owned;
		char *dir = path_dirname(path);
		path_mkdirs(dir, 0700);
		free(dir);
	}
	char hex[2 * REMOTE_PUBKEY_LEN + 1];
	struct error e = { 0 };
	int rc = sign_keygen(path, hex, &e);
	if (rc < 0) {
		cli_error("keygen: %s", e.msg);
	} else {
		printf("private key: %s (keep it secret; sign_key = %s)\n", path, path);
		printf("public key:  %s.pub\n", path);
		printf("trusted_keys = %s\n", hex);
	}
	free(owned);
	return rc < 0 ? 1 : 0;
}
