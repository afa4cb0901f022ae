/*
 * cachet's settings: every key, its type, default and documentation, and
 * where each value came from. Sources, later ones winning:
 *   1. the default
 *   2. $CACHET_DIR/cachet.conf          (the cache's own: shared caches)
 *   3. ${XDG_CONFIG_HOME:-~/.config}/cachet/cachet.conf   (the user's)
 *   4. the environment: CACHET_<KEY in upper case>
 * Files hold `key = value` lines; '#' starts a comment line. An unknown key
 * or a bad value is an error naming the file and line (or the variable).
 */
#ifndef CACHET_CLI_SETTINGS_H
#define CACHET_CLI_SETTINGS_H

#include <stddef.h>
#include <stdint.h>
#include "cachet/error.h"

enum setting_type {
	SETTING_STRING,
	SETTING_BOOL,     /* true/false, yes/no, on/off, 1/0 */
	SETTING_SIZE,     /* bytes, with an optional K, M, G or T suffix (powers of 1024) */
	SETTING_INT,      /* within [min, max] */
	SETTING_RATE,     /* a number from 0 to 1 */
	SETTING_LIST,     /* comma-separated words */
	SETTING_DURATION, /* seconds, with an optional s, m, h or d suffix */
	SETTING_UMASK,    /* octal, e.g. 002 */
};

struct setting_def {
	const char *key;
	enum setting_type type;
	const char *default_value; /* as text; NULL = unset */
	int64_t min, max;          /* SETTING_INT */
	const char *help;          /* one line */
};

/* Every setting, terminated by an entry with key NULL. */
extern const struct setting_def setting_defs[];

struct setting_value {
	char *text;   /* NULL when unset */
	char *origin; /* "default", "/path/file:12", "environment (CACHET_X)" */
};

struct settings {
	struct setting_value *values; /* parallel to setting_defs */
	size_t n;
};

/* Loads every source. Returns -1 with a message naming the file and line
 * (or variable) on the first unknown key or bad value. */
int settings_load(struct settings *s, struct error *e);
void settings_free(struct settings *s);
/* The defaults overlaid with the lines of one configuration file's text
 * (len bytes, not NUL-terminated), without reading any file or the
 * environment; name stands for the file in messages. For tests and fuzzing.
 * Free s with settings_free whatever the result. */
int settings_parse(struct settings *s, const char *text, size_t len, const char *name,
                   struct error *e);

/* Index of key in setting_defs, or -1. */
int setting_index(const char *key);
/* Checks a value for a key (for `cachet config KEY VALUE`). 0 or -1 with e. */
int setting_validate(const char *key, const char *value, struct error *e);

/* Typed accessors; key must be a known key (else abort: a programming error). */
const char *settings_str(const struct settings *s, const char *key); /* NULL when unset */
int settings_bool(const struct settings *s, const char *key);
uint64_t settings_size(const struct settings *s, const char *key);
int64_t settings_int(const struct settings *s, const char *key);
double settings_rate(const struct settings *s, const char *key);
int64_t settings_duration(const struct settings *s, const char *key); /* seconds; 0 unset */
int settings_umask(const struct settings *s, const char *key);        /* -1 when unset */
/* A NULL-terminated, malloc'd array of malloc'd words (free with
 * settings_list_free); never NULL. */
char **settings_list(const struct settings *s, const char *key);
void settings_list_free(char **list);

/* ${XDG_CACHE_HOME:-$HOME/.cache}/cachet (malloc'd): where the cache lives
 * unless dir or CACHET_DIR says otherwise. */
char *settings_default_dir(void);

/* The user's configuration file path (malloc'd), where `cachet config KEY
 * VALUE` writes. */
char *settings_user_file(void);
/* Sets key = value in file, replacing an existing line for key or
 * appending; atomic (temporary file + rename). */
int settings_write(const char *file, const char *key, const char *value, struct error *e);

#endif
