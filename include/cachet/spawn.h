/*
 * Running a program to its end: fork, exec, wait.
 *
 * For the children cachet waits for (the untraced step, --check's command).
 * Not for the traced step (trace/tracer.c seizes it between fork and exec)
 * nor for the detached drainer, which must outlive cachet.
 */
#ifndef CACHET_SPAWN_H
#define CACHET_SPAWN_H

/* Runs path with argv and envp (NULL: this process's environment), its
 * stdout and stderr on out_fd and err_fd (-1: this process's own), every
 * other descriptor as it is, and waits for it through EINTR. The wait
 * status; -1 with errno set when it could not be started. A program that
 * cannot be executed exits 127, and *exec_errno (when not NULL) gets
 * execve's errno, so that the caller can say why. */
int spawn_wait(const char *path, char *const argv[], char *const envp[], int out_fd, int err_fd,
               int *exec_errno);

#endif
