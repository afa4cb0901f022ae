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
#include "cli/options.h"

static char *default_key_path(void)
{
	const char *xdg = getenv("XDG_CONFIG_HOME");
	if (xdg && *xdg)
		return xasprintf("%s/cachet/signing.key", xdg);
	const char *home = getenv("HOME");
	return xasprintf("%s/.config/cachet/signing.key", home && *home ? home : ".");
}

enum { OPT_FILE = 1 };

static const struct cli_option keygen_options[] = {
    {OPT_FILE, 'f', NULL, "FILE", "the private key's file (default ~/.config/cachet/signing.key)"},
    {0},
};

const struct cli_command cli_cmd_keygen = {
    .name = "keygen",
    .options = keygen_options,
    .description = "Makes an Ed25519 key pair: FILE (default ~/.config/cachet/signing.key, mode\n"
                   "0600) and FILE.pub. Set sign_key = FILE where entries are uploaded (CI), and\n"
                   "trusted_keys = FILE.pub (or the printed hex key) where they are used: remote\n"
                   "entries not signed by a trusted key are then ignored.\n",
};

int cmd_keygen(int argc, char **argv)
{
	const char *path = NULL;
	struct cli_args args;
	cli_args_init(&args, &cli_cmd_keygen, argc, argv);
	for (int id; (id = cli_args_next(&args)) != CLI_ARG_END;) {
		if (id == CLI_ARG_EXIT)
			return args.exit;
		path = args.value;
	}
	char *owned = path ? NULL : default_key_path();
	if (!path) {
		path = owned;
		char *dir = path_dirname(path);
		path_mkdirs(dir, 0700);
		free(dir);
	}
	char hex[2 * REMOTE_PUBKEY_LEN + 1];
	struct error e = {0};
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
