/*
 * The statically linked cachet's hand-over to its dynamic twin (cli.h).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cachet/path.h"
#include "cli/cli.h"

#define DYNAMIC_TWIN "cachet-dynamic"

int cli_static_exe(void)
{
#ifdef CACHET_STATIC_EXE
	return 1;
#else
	return 0;
#endif
}

int cli_exec_dynamic(char **argv, struct error *e)
{
	/* Where the plugins are (remote_plugin_dir): beside this binary in a
	 * build tree, in ../lib/cachet/ once installed. */
	char *self = cli_self_exe();
	if (!self)
		return error_errno(e, "cannot find this cachet (/proc/self/exe)");
	char *dir = path_dirname(self);
	free(self);
	char *candidates[] = {xasprintf("%s/%s", dir, DYNAMIC_TWIN),
	                      xasprintf("%s/../lib/cachet/%s", dir, DYNAMIC_TWIN)};
	free(dir);
	for (size_t i = 0; i < 2; i++)
		if (access(candidates[i], X_OK) == 0)
			execv(candidates[i], argv);
	error_errno(e,
	            "cannot run %s (beside cachet or in ../lib/cachet/), which this statically "
	            "linked cachet needs for plugins",
	            DYNAMIC_TWIN);
	free(candidates[0]);
	free(candidates[1]);
	return -1;
}
