#include "cli/settings.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachet/array.h"
#include "cachet/buf.h"
#include "cachet/bug.h"
#include "cachet/fdio.h"
#include "cachet/path.h"
#include "cachet/remote.h"
#include "cli/cli.h"

const struct setting_def setting_defs[] = {
    {"dir", SETTING_STRING, NULL, 0, 0,
     "cache directory (default ${XDG_CACHE_HOME:-~/.cache}/cachet)"},
    {"max_size", SETTING_SIZE, "5G", 0, 0,
     "evict least recently used entries to stay under this size"},
    {"max_age", SETTING_DURATION, NULL, 0, 0,
     "evict entries not used for this long (e.g. 30d); unset: no limit"},
    {"namespace", SETTING_STRING, NULL, 0, 0,
     "a string mixed into every key: separate caches sharing one directory"},
    {"env_ignore", SETTING_LIST, NULL, 0, 0,
     "extra environment variables left out of the key (NAME or PREFIX*)"},
    {"env_per_run", SETTING_LIST, NULL, 0, 0,
     "extra environment variables keyed only where a step's output, stdout or stderr "
     "holds the value (NAME or PREFIX*): per-session and per-run identifiers"},
    {"base_dir", SETTING_STRING, NULL, 0, 0,
     "a checkout's root: paths under it are keyed relative to it, so checkouts at "
     "different paths share hits (outputs naming it are keyed on its real path)"},
    {"compression_level", SETTING_INT, "1", 1, 19, "zstd level for stored blobs"},
    {"verify_rate", SETTING_RATE, "0", 0, 0,
     "fraction of hits that also run the step and compare its outputs"},
    {"nondeterministic", SETTING_STRING, "warn", 0, 0,
     "a step found nondeterministic: warn (keep hitting, with a warning) or rerun "
     "(no longer served from the cache)"},
    {"remote", SETTING_LIST, NULL, 0, 0,
     "remote caches: URL [read-only] [timeout=MS] [op-timeout=MS], comma-separated"},
    {"sign_key", SETTING_STRING, NULL, 0, 0, "Ed25519 private key file: sign uploaded entries"},
    {"trusted_keys", SETTING_LIST, NULL, 0, 0,
     "Ed25519 public key files: remote entries must carry a valid signature by one"},
    {"hermetic_env", SETTING_LIST, NULL, 0, 0,
     "run steps with only these variables (keyed), for sharing across users and machines"},
    {"read_only", SETTING_BOOL, "false", 0, 0, "use hits, never store"},
    {"ignore_paths", SETTING_LIST, NULL, 0, 0,
     "paths (and everything below them) that are neither inputs nor outputs"},
    {"uncacheable_commands", SETTING_LIST, NULL, 0, 0,
     "shell patterns: a command whose program name or path matches runs uncached"},
    {"stats_log", SETTING_STRING, NULL, 0, 0,
     "also count this build's steps in this file (counters of concurrent builds do not mix)"},
    {"umask", SETTING_UMASK, NULL, 0, 0,
     "umask for files in the cache (e.g. 002 for a shared cache)"},
    {"log_size", SETTING_SIZE, "1M", 0, 0, "bound of the step log (cachet log)"},
    {"verbose", SETTING_BOOL, "false", 0, 0, "print cachet: hit / cachet: miss (reason) per step"},
    {"disable", SETTING_BOOL, "false", 0, 0, "run commands untouched"},
    {"recache", SETTING_BOOL, "false", 0, 0, "run and overwrite cached results"},
    {"status_file", SETTING_STRING, NULL, 0, 0, "append one JSON line per step to this file"},
    {"color", SETTING_STRING, "auto", 0, 0,
     "auto: steps see a terminal on stderr when cachet's stderr is one; never; always"},
    {NULL, 0, NULL, 0, 0, NULL},
};

static size_t ndefs(void)
{
	size_t n = 0;
	while (setting_defs[n].key)
		n++;
	return n;
}

int setting_index(const char *key)
{
	for (size_t i = 0; setting_defs[i].key; i++)
		if (!strcmp(setting_defs[i].key, key))
			return (int)i;
	return -1;
}

static int parse_size(const char *v, uint64_t *out)
{
	char *end;
	errno = 0;
	double n = strtod(v, &end);
	if (end == v || errno || !(n >= 0)) /* NaN too */
		return -1;
	while (*end == ' ')
		end++;
	double mul = 1;
	switch (toupper((unsigned char)*end)) {
	case 'K':
		mul = 1024.0;
		end++;
		break;
	case 'M':
		mul = 1024.0 * 1024;
		end++;
		break;
	case 'G':
		mul = 1024.0 * 1024 * 1024;
		end++;
		break;
	case 'T':
		mul = 1024.0 * 1024 * 1024 * 1024;
		end++;
		break;
	default:
		break;
	}
	if (toupper((unsigned char)*end) == 'I' && mul > 1)
		end++;
	if (toupper((unsigned char)*end) == 'B')
		end++;
	/* Converting a double beyond the range of uint64_t is undefined. */
	if (*end || !(n * mul < 18446744073709551616.0))
		return -1;
	*out = (uint64_t)(n * mul);
	return 0;
}

static int parse_duration(const char *v, int64_t *out)
{
	char *end;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	if (end == v || errno || n < 0)
		return -1;
	int64_t mul = 1;
	switch (*end) {
	case '\0':
	case 's':
		mul = 1;
		break;
	case 'm':
		mul = 60;
		break;
	case 'h':
		mul = 3600;
		break;
	case 'd':
		mul = 86400;
		break;
	default:
		return -1;
	}
	if ((*end && end[1]) || n > INT64_MAX / mul) /* an overflow is undefined */
		return -1;
	*out = n * mul;
	return 0;
}

static int parse_bool(const char *v, int *out)
{
	static const char *const yes[] = {"1", "true", "yes", "on", NULL};
	static const char *const no[] = {"0", "false", "no", "off", "", NULL};
	for (const char *const *p = yes; *p; p++)
		if (!strcasecmp(v, *p))
			return *out = 1, 0;
	for (const char *const *p = no; *p; p++)
		if (!strcasecmp(v, *p))
			return *out = 0, 0;
	return -1;
}

static int check_value(const struct setting_def *d, const char *v, struct error *e)
{
	uint64_t size;
	int64_t n;
	int b;
	char *end;
	switch (d->type) {
	case SETTING_STRING:
	case SETTING_LIST:
		if (!strcmp(d->key, "nondeterministic") && strcmp(v, "warn") && strcmp(v, "rerun"))
			return error_set(e, "%s must be warn or rerun, not '%s'", d->key, v);
		if (!strcmp(d->key, "color") && strcmp(v, "auto") && strcmp(v, "never") &&
		    strcmp(v, "always"))
			return error_set(e, "%s must be auto, never or always, not '%s'", d->key,
			                 v);
		/* Relative, it would name another directory from every cwd.
		 * Whether it exists is checked where steps use it. */
		if (!strcmp(d->key, "base_dir") && v[0] && v[0] != '/')
			return error_set(e, "%s must be an absolute path, not '%s'", d->key, v);
		return 0;
	case SETTING_BOOL:
		return parse_bool(v, &b) < 0
		           ? error_set(e, "%s takes true or false, not '%s'", d->key, v)
		           : 0;
	case SETTING_SIZE:
		return parse_size(v, &size) < 0
		           ? error_set(e, "%s takes a size such as 500M or 5G, not '%s'", d->key, v)
		           : 0;
	case SETTING_DURATION:
		return parse_duration(v, &n) < 0
		           ? error_set(
		                 e, "%s takes a duration such as 3600, 90m, 12h or 30d, not '%s'",
		                 d->key, v)
		           : 0;
	case SETTING_INT:
		errno = 0;
		n = strtoll(v, &end, 10);
		if (end == v || *end || errno || n < d->min || n > d->max)
			return error_set(e, "%s takes a whole number from %lld to %lld, not '%s'",
			                 d->key, (long long)d->min, (long long)d->max, v);
		return 0;
	case SETTING_RATE: {
		errno = 0;
		double r = strtod(v, &end);
		if (end == v || *end || errno || !(r >= 0 && r <= 1))
			return error_set(e, "%s takes a number from 0 to 1, not '%s'", d->key, v);
		return 0;
	}
	case SETTING_UMASK:
		errno = 0;
		n = strtoll(v, &end, 8);
		if (end == v || *end || errno || n < 0 || n > 0777)
			return error_set(e, "%s takes an octal mask such as 022, not '%s'", d->key,
			                 v);
		return 0;
	}
	return 0;
}

static char *trim(char *p)
{
	while (isspace((unsigned char)*p))
		p++;
	char *end = p + strlen(p);
	while (end > p && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return p;
}

/* The comma-separated words of v, trimmed, empty ones left out. */
static char **split_list(const char *v)
{
	size_t n = 0, alloc = 4;
	char **out = xmalloc(alloc * sizeof *out);
	for (const char *p = v; p && *p;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		char *word = xstrndup(p, len);
		char *t = trim(word);
		if (*t) {
			ARRAY_RESERVE(out, alloc, n + 2, 4);
			out[n++] = xstrdup(t);
		}
		free(word);
		if (!comma)
			break;
		p = comma + 1;
	}
	out[n] = NULL;
	return out;
}

int setting_validate(const char *key, const char *value, struct error *e)
{
	int i = setting_index(key);
	if (i < 0)
		return error_set(e, "unknown key '%s' (cachet config lists them)", key);
	if (check_value(&setting_defs[i], value, e) < 0)
		return -1;
	/* Only when written: a bad remote already in a file turns the remote
	 * tier off with a warning, while the local cache keeps working. */
	if (!strcmp(key, "remote")) {
		char **items = split_list(value);
		int rc = remote_config_check(items, e);
		settings_list_free(items);
		return rc;
	}
	return 0;
}

static void set_value(struct settings *s, size_t i, const char *text, const char *origin)
{
	free(s->values[i].text);
	free(s->values[i].origin);
	s->values[i].text = text ? xstrdup(text) : NULL;
	s->values[i].origin = xstrdup(origin);
}

/* Applies the `key = value` lines read from f; path names it in messages. */
static int load_stream(struct settings *s, FILE *f, const char *path, struct error *e)
{
	char *line = NULL;
	size_t cap = 0;
	int lineno = 0, rc = 0;
	while (getline(&line, &cap, f) >= 0) {
		lineno++;
		char *p = trim(line);
		if (!*p || *p == '#')
			continue;
		char *eq = strchr(p, '=');
		if (!eq) {
			rc = error_set(e, "%s:%d: expected 'key = value'", path, lineno);
			break;
		}
		*eq = '\0';
		char *key = trim(p), *value = trim(eq + 1);
		int i = setting_index(key);
		if (i < 0) {
			rc = error_set(e, "%s:%d: unknown key '%s'", path, lineno, key);
			break;
		}
		struct error ve = {0};
		if (check_value(&setting_defs[i], value, &ve) < 0) {
			rc = error_set(e, "%s:%d: %s", path, lineno, ve.msg);
			break;
		}
		char origin[600];
		snprintf(origin, sizeof origin, "%s:%d", path, lineno);
		set_value(s, (size_t)i, value, origin);
	}
	free(line);
	return rc;
}

/* 1 when a configuration file's text holds a credential: a `remote` line
 * with a password in a URL or a bearer token. Such a file is written 0600. */
static int holds_credentials(const char *text, size_t len)
{
	int found = 0;
	for (const char *p = text, *end = text + len; p < end && !found;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char *line = xstrndup(p, n);
		char *k = trim(line);
		char *eq = strchr(k, '=');
		if (*k != '#' && eq) {
			*eq = '\0';
			found = !strcmp(trim(k), "remote") &&
			        remote_setting_has_credentials(trim(eq + 1));
		}
		free(line);
		p += n + 1;
	}
	return found;
}

/* A credential in a file others can read: said once per process, since
 * every command reads the configuration. */
static void warn_if_exposed(const struct stat *st, const char *text, size_t len, const char *path)
{
	static int warned;
	if (warned || !(st->st_mode & 077))
		return;
	if (holds_credentials(text, len)) {
		warned = 1;
		cli_warn(
		    "%s holds a credential and is readable by others (mode %04o): chmod 600 it",
		    path, (unsigned)(st->st_mode & 07777));
	}
}

/* Applies the file's settings; a missing file is no error. Read once, for
 * the credential check and the settings both: every cachet process reads
 * it, a hit included (stdio took a stat and three reads more). */
static int load_file(struct settings *s, const char *path, struct error *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : error_errno(e, "%s", path);
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int rc = error_errno(e, "%s", path);
		close(fd);
		return rc;
	}
	struct buf text;
	buf_init(&text);
	/* A regular file in one read of its size and one that finds its end
	 * (read_full stops early only there); anything else as it comes. */
	size_t step = S_ISREG(st.st_mode) && st.st_size < (1 << 20) ? (size_t)st.st_size + 1 : 4096;
	ssize_t n;
	do {
		buf_grow(&text, step);
		n = read_full(fd, text.data + text.len, step);
		if (n > 0)
			text.len += (size_t)n;
	} while (n == (ssize_t)step);
	int err = errno;
	close(fd);
	if (n < 0) {
		buf_free(&text);
		errno = err;
		return error_errno(e, "%s", path);
	}
	if (st.st_size <= (1 << 20))
		warn_if_exposed(&st, text.data ? text.data : "", text.len, path);
	int rc = 0;
	FILE *f = text.len ? fmemopen(text.data, text.len, "r") : NULL;
	if (text.len && !f)
		rc = error_errno(e, "%s", path);
	else if (f)
		rc = load_stream(s, f, path, e);
	if (f)
		fclose(f);
	buf_free(&text);
	return rc;
}

int settings_parse(struct settings *s, const char *text, size_t len, const char *name,
                   struct error *e)
{
	s->n = ndefs();
	s->values = xcalloc(s->n, sizeof *s->values);
	for (size_t i = 0; i < s->n; i++)
		set_value(s, i, setting_defs[i].default_value, "default");
	if (!len)
		return 0;
	FILE *f = fmemopen((void *)text, len, "r");
	if (!f)
		return error_errno(e, "%s", name);
	int rc = load_stream(s, f, name, e);
	fclose(f);
	return rc;
}

char *settings_user_file(void)
{
	const char *xdg = getenv("XDG_CONFIG_HOME");
	if (xdg && *xdg)
		return xasprintf("%s/cachet/cachet.conf", xdg);
	const char *home = getenv("HOME");
	return xasprintf("%s/.config/cachet/cachet.conf", home && *home ? home : "/");
}

static char *env_name(const char *key)
{
	char *name = xasprintf("CACHET_%s", key);
	for (char *p = name; *p; p++)
		*p = (char)toupper((unsigned char)*p);
	return name;
}

/* The value getenv(env_name(key)) gives, found among vars, the
 * environment's CACHET_ entries (in its order): one pass over the
 * environment, not a name built and searched for each of the settings. */
static const char *env_setting(char *const *vars, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++) {
		const char *p = vars[i] + strlen("CACHET_");
		const char *k = key;
		while (*k && toupper((unsigned char)*k) == *p) {
			k++;
			p++;
		}
		if (!*k && *p == '=')
			return p + 1;
	}
	return NULL;
}

char *settings_default_dir(void)
{
	const char *xdg = getenv("XDG_CACHE_HOME");
	if (xdg && *xdg)
		return xasprintf("%s/cachet", xdg);
	const char *home = getenv("HOME");
	if (!home || !*home)
		home = "/tmp";
	return xasprintf("%s/.cache/cachet", home);
}

int settings_load(struct settings *s, struct error *e)
{
	s->n = ndefs();
	s->values = xcalloc(s->n, sizeof *s->values);
	for (size_t i = 0; i < s->n; i++)
		set_value(s, i, setting_defs[i].default_value, "default");

	/* Where the cache is decides which cache config to read: the user's
	 * file and the environment may both name it. */
	char *user_file = settings_user_file();
	struct settings user = {0};
	user.n = s->n;
	user.values = xcalloc(user.n, sizeof *user.values);
	int rc = load_file(&user, user_file, e);
	int dir_i = setting_index("dir");
	const char *env_dir = getenv("CACHET_DIR");
	char *dir = env_dir && *env_dir       ? xstrdup(env_dir)
	            : user.values[dir_i].text ? xstrdup(user.values[dir_i].text)
	                                      : settings_default_dir();
	set_value(s, (size_t)dir_i, dir, "default");
	if (rc == 0) {
		char *cache_file = xasprintf("%s/cachet.conf", dir);
		rc = load_file(s, cache_file, e);
		free(cache_file);
	}
	if (rc == 0)
		for (size_t i = 0; i < s->n; i++)
			if (user.values[i].text)
				set_value(s, i, user.values[i].text, user.values[i].origin);
	char **vars = NULL;
	size_t nvars = 0, alloc = 0;
	for (char **v = environ; v && *v; v++)
		if (!strncmp(*v, "CACHET_", strlen("CACHET_"))) {
			ARRAY_RESERVE(vars, alloc, nvars + 1, 8);
			vars[nvars++] = *v;
		}
	for (size_t i = 0; rc == 0 && i < s->n; i++) {
		const char *v = env_setting(vars, nvars, setting_defs[i].key);
		if (!v)
			continue;
		char *name = env_name(setting_defs[i].key);
		struct error ve = {0};
		if (check_value(&setting_defs[i], v, &ve) < 0) {
			rc = error_set(e, "environment variable %s: %s", name, ve.msg);
		} else {
			char origin[128];
			snprintf(origin, sizeof origin, "environment (%s)", name);
			set_value(s, i, v, origin);
		}
		free(name);
	}
	free(vars);
	if (rc == 0 && !s->values[dir_i].text[0])
		set_value(s, (size_t)dir_i, dir, "default");
	free(dir);
	free(user_file);
	settings_free(&user);
	return rc;
}

void settings_free(struct settings *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->values[i].text);
		free(s->values[i].origin);
	}
	free(s->values);
	s->values = NULL;
	s->n = 0;
}

static const char *value_of(const struct settings *s, const char *key, enum setting_type type)
{
	int i = setting_index(key);
	if (i < 0 || setting_defs[i].type != type || (size_t)i >= s->n)
		BUG("an unknown setting or the wrong accessor for its type");
	return s->values[i].text;
}

const char *settings_str(const struct settings *s, const char *key)
{
	const char *v = value_of(s, key, SETTING_STRING);
	return v && *v ? v : NULL;
}

int settings_bool(const struct settings *s, const char *key)
{
	const char *v = value_of(s, key, SETTING_BOOL);
	int b = 0;
	if (v)
		parse_bool(v, &b);
	return b;
}

uint64_t settings_size(const struct settings *s, const char *key)
{
	const char *v = value_of(s, key, SETTING_SIZE);
	uint64_t n = 0;
	if (v)
		parse_size(v, &n);
	return n;
}

int64_t settings_int(const struct settings *s, const char *key)
{
	const char *v = value_of(s, key, SETTING_INT);
	return v ? strtoll(v, NULL, 10) : 0;
}

double settings_rate(const struct settings *s, const char *key)
{
	const char *v = value_of(s, key, SETTING_RATE);
	return v ? strtod(v, NULL) : 0;
}

int64_t settings_duration(const struct settings *s, const char *key)
{
	const char *v = value_of(s, key, SETTING_DURATION);
	int64_t n = 0;
	if (v)
		parse_duration(v, &n);
	return n;
}

int settings_umask(const struct settings *s, const char *key)
{
	const char *v = value_of(s, key, SETTING_UMASK);
	return v && *v ? (int)strtol(v, NULL, 8) : -1;
}

char **settings_list(const struct settings *s, const char *key)
{
	return split_list(value_of(s, key, SETTING_LIST));
}

void settings_list_free(char **list)
{
	for (char **p = list; p && *p; p++)
		free(*p);
	free(list);
}

int settings_write(const char *file, const char *key, const char *value, struct error *e)
{
	char *dir = path_dirname(file);
	if (path_mkdirs(dir, 0755) < 0) {
		error_errno(e, "%s", dir);
		free(dir);
		return -1;
	}
	struct buf out;
	buf_init(&out);
	int replaced = 0;
	FILE *f = fopen(file, "re");
	if (f) {
		char *line = NULL;
		size_t cap = 0;
		while (getline(&line, &cap, f) >= 0) {
			char *copy = xstrdup(line);
			char *p = trim(copy);
			char *eq = strchr(p, '=');
			int is_key = 0;
			if (*p != '#' && eq) {
				*eq = '\0';
				is_key = !strcmp(trim(p), key);
			}
			free(copy);
			if (is_key) {
				if (!replaced)
					buf_addf(&out, "%s = %s\n", key, value);
				replaced = 1;
				continue;
			}
			buf_addstr(&out, line);
			if (out.len && out.data[out.len - 1] != '\n')
				buf_addch(&out, '\n');
		}
		free(line);
		fclose(f);
	}
	if (!replaced)
		buf_addf(&out, "%s = %s\n", key, value);
	char *tmp = xasprintf("%s/.cachet.conf.XXXXXX", dir);
	int fd = mkostemp(tmp, O_CLOEXEC);
	int rc = -1;
	if (fd < 0) {
		error_errno(e, "%s", dir);
	} else if (write_all(fd, out.data, out.len) < 0 ||
	           fchmod(fd, holds_credentials(out.data, out.len) ? 0600 : 0644) < 0) {
		error_errno(e, "%s", tmp);
		close(fd);
		unlink(tmp);
	} else if (close(fd) < 0 || rename(tmp, file) < 0) {
		error_errno(e, "%s", file);
		unlink(tmp);
	} else {
		rc = 0;
	}
	free(tmp);
	free(dir);
	buf_free(&out);
	return rc;
}
