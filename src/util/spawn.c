#include "cachet/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

int spawn_wait(const char *path, char *const argv[], char *const envp[], int out_fd, int err_fd,
               int *exec_errno)
{
	/* execve's errno comes back through a close-on-exec pipe: a successful
	 * exec closes it unwritten. */
	int errpipe[2];
	if (pipe2(errpipe, O_CLOEXEC) < 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0) {
		int err = errno;
		close(errpipe[0]);
		close(errpipe[1]);
		errno = err;
		return -1;
	}
	if (pid == 0) {
		if (out_fd >= 0)
			dup2(out_fd, 1);
		if (err_fd >= 0)
			dup2(err_fd, 2);
		execve(path, argv, envp ? envp : environ);
		int err = errno;
		ssize_t w = write(errpipe[1], &err, sizeof err);
		(void)w;
		_exit(127);
	}
	close(errpipe[1]);
	int err = 0;
	if (read(errpipe[0], &err, sizeof err) == sizeof err && exec_errno)
		*exec_errno = err;
	close(errpipe[0]);
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return status;
}
