/*
 * BUG(why): the code reached a state it rules out ("cannot happen").
 *
 * It writes "cachet: BUG at file:line: why" to stderr and aborts, from any
 * layer: the one message printed outside cli/. Such a state cannot travel
 * up as an error value, because the caller would go on with what broke it
 * (a key from a hash that was never started, a seccomp filter with a jump
 * that does not fit), and a bare abort() leaves the user a core dump and
 * nothing to report. Not for what the world can do (bad input, a full
 * disk, a missing library): those are errors, and out of memory is
 * xalloc_failed (buf.h).
 */
#ifndef CACHET_BUG_H
#define CACHET_BUG_H

#define BUG(why) bug_at(__FILE__, __LINE__, (why))

void bug_at(const char *file, int line, const char *why) __attribute__((noreturn, cold));

#endif
