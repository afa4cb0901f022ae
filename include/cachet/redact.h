/*
 * Environment values and argv can hold secrets (tokens, -DAPI_KEY=...).
 * They stay in the local index (mode 0600); everything cachet shows or logs
 * goes through these first.
 */
#ifndef CACHET_REDACT_H
#define CACHET_REDACT_H

#include <stddef.h>

/* 1 when a variable, option or header name looks like it names a secret:
 * it contains KEY, TOKEN, SECRET, PASS (PASSWORD, PASSWD, DB_PASS),
 * CREDENTIAL, AUTH, COOKIE or SESSION (any case). */
int redact_is_secret_name(const char *name, size_t len);

/* A malloc'd copy of one argv element or NAME=VALUE string with the value
 * replaced by "***" when the name looks secret ("-DAPI_KEY=x" ->
 * "-DAPI_KEY=***", "--token=x" -> "--token=***"). prev is the element
 * before it (or NULL): after a bare "--password" or "--token" the whole
 * element is hidden. */
char *redact_arg(const char *arg, const char *prev);

/* The same for argv[i], which also hides what only the command line as a
 * whole shows: "-pPASSWORD" of mysql and its kin (argv[0]), the password of
 * "-u user:password" (curl), "user:password@" in URLs, "Authorization:" and
 * other secret-named headers, "Bearer TOKEN". */
char *redact_argv(char *const *argv, size_t i);

#endif
