/*
 * The background drainer of the upload spool: `cachet remote drain`,
 * started twice forked so that it belongs to no one who waits.
 */
#include "cli/drainer.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cachet/remote.h"
#include "cachet/strv.h"
#include "cli/cli.h"
#include "cli/hermetic_env.h"

extern char **environ;

/* Starts `cachet remote drain` in the background unless one runs. The
 * drainer is a new session with no descriptor of ours beyond /dev/null, so
 * make, ctest or a pipe never wait for it. */
void drainer_start(const char *state_dir, const char *cache_dir)
{
	int lock = spool_lock(state_dir, 0);
	if (lock < 0)
		return; /* a drainer holds the lock and will see our job */
	spool_unlock(lock);
	char *self = cli_self_exe();
	if (!self)
		return;
	char **base = hermetic_env_caller() ? hermetic_env_caller() : environ;
	size_t n = strv_len(base);
	char **env = xmalloc((n + 2) * sizeof *env);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (strncmp(base[i], "CACHET_DIR=", 11) != 0)
			env[k++] = base[i];
	char *dir = xasprintf("CACHET_DIR=%s", cache_dir);
	env[k++] = dir;
	env[k] = NULL;
	char *argv[] = {"cachet", "remote", "drain", NULL};
	pid_t pid = fork();
	if (pid == 0) {
		setsid();
		if (fork() != 0)
			_exit(0);
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
		}
		close_range(3, ~0U, 0);
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = SIG_DFL;
		for (int sig = 1; sig < NSIG; sig++)
			sigaction(sig, &sa, NULL);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execve(self, argv, env);
		_exit(127);
	}
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	free(dir);
	free(env);
	free(self);
}
