/*
 * cachet's entry point: subcommands, the launcher form (`cachet gcc ...`)
 * and masquerading (a symlink named gcc that points to cachet).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachet/buf.h"
#include "cachet/path.h"
#include "cachet/plugin.h"
#include "cli/cli.h"

struct subcommand {
	const char *name;
	int (*fn)(int argc, char **argv);
};

static const struct subcommand subcommands[] = {
    {"run", cmd_run},         {"stats", cmd_stats},   {"clear", cmd_clear},
    {"gc", cmd_gc},           {"help", cmd_help},     {"diff", cmd_diff},
    {"explain", cmd_explain}, {"show", cmd_show},     {"log", cmd_log},
    {"config", cmd_config},   {"report", cmd_report}, {"repro", cmd_repro},
    {"remote", cmd_remote},   {"keygen", cmd_keygen}, {NULL, NULL},
};

static const struct subcommand *find_subcommand(const char *name)
{
	for (const struct subcommand *c = subcommands; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

/* `cachet ARGS` → `cachet run ARGS`: argv with "run" in front. */
static int launch(int argc, char **argv, int first, int masquerade)
{
	char **v = xmalloc((size_t)(argc - first + 3) * sizeof *v);
	int n = 0;
	v[n++] = "run";
	v[n++] = "--";
	for (int i = first; i < argc; i++)
		v[n++] = argv[i];
	v[n] = NULL;
	return masquerade ? cmd_run_masquerade(n, v) : cmd_run(n, v);
}

int main(int argc, char **argv)
{
	const char *me = argc > 0 ? path_basename(argv[0]) : "cachet";
	if (cli_static_exe())
		plugin_forbid();
	/* Masquerading: invoked through a symlink named after the compiler. */
	if (strcmp(me, "cachet") != 0 && strncmp(me, "cachet-", 7) != 0 &&
	    strncmp(me, "lt-cachet", 9) != 0) {
		argv[0] = (char *)me;
		return launch(argc, argv, 0, 1);
	}
	if (argc < 2) {
		fputs(cli_help_text(), stderr);
		return EXIT_USAGE;
	}
	const char *a = argv[1];
	if (!strcmp(a, "--version") || !strcmp(a, "-V")) {
		printf("cachet %s\n", CACHET_VERSION);
		return 0;
	}
	if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
		fputs(cli_help_text(), stdout);
		return 0;
	}
	if (a[0] == '-' && strcmp(a, "--") != 0) {
		/* Options before a launched command belong to run: `cachet -v gcc`. */
		return cmd_run(argc, argv);
	}
	if (!strcmp(a, "--"))
		return launch(argc, argv, 2, 0);
	/* Subcommand names win; anything containing '/' is a command. */
	const struct subcommand *c = strchr(a, '/') ? NULL : find_subcommand(a);
	/* Only run and help are sure to need no plugin: the statically linked
	 * cachet hands the others to its twin (a few hundred microseconds
	 * more, for commands a person types). */
	if (c && cli_static_exe() && c->fn != cmd_run && c->fn != cmd_help) {
		struct error e = {0};
		cli_exec_dynamic(argv, &e);
		cli_error("%s", e.msg);
		return EXIT_FAILURE;
	}
	if (c)
		return c->fn(argc - 1, argv + 1);
	return launch(argc, argv, 1, 0);
}
