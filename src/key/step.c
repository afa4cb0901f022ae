#include "cachet/step.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cachet/bug.h"
#include "cachet/env.h"
#include "cachet/observe.h"
#include "cachet/path.h"
#include "cachet/platform.h"
#include "cachet/strv.h"

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The keyed environment; the variables keyed by effect go to *by_effect
 * instead (both sorted). */
static char **keyed_environment(char *const *envp, const char *const *env_ignore,
                                const char *const *env_per_run, const char *cwd, char ***by_effect)
{
	size_t n = strv_len(envp);
	char **env = xmalloc((n + 1) * sizeof *env);
	char **effect = xmalloc((n + 1) * sizeof *effect);
	const char *makeflags = NULL;
	for (size_t i = 0; i < n && !makeflags; i++)
		if (!strncmp(envp[i], "MAKEFLAGS=", 10))
			makeflags = envp[i] + 10;
	size_t k = 0, ke = 0;
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(envp[i], '=');
		size_t name_len = eq ? (size_t)(eq - envp[i]) : strlen(envp[i]);
		if (env_is_neutral(envp[i], name_len, env_ignore))
			continue;
		/* make's command-line variables by effect (make-vars), but
		 * those the toolchain reads (make CPATH=...): a compile keys
		 * them though it records no make-vars. */
		if (eq && (env_keyed_by_effect(envp[i], name_len, env_per_run) ||
		           (env_is_make_command_var(makeflags, envp[i], name_len) &&
		            !env_read_by_closed_programs(envp[i], name_len)))) {
			effect[ke++] = xstrdup(envp[i]);
			continue;
		}
		/* gcc, bash and getcwd-like code use PWD only where it names the
		 * cwd (make -C leaves the caller's): elsewhere only a step that
		 * writes it out can tell its value. */
		if (eq && name_len == 3 && !memcmp(envp[i], "PWD", 3) && strcmp(eq + 1, cwd) != 0 &&
		    !env_names_cwd(eq + 1)) {
			env[k++] = xstrdup("PWD");
			effect[ke++] = xstrdup(envp[i]);
			continue;
		}
		if (eq && ((name_len == 9 && !memcmp(envp[i], "MAKEFLAGS", 9)) ||
		           (name_len == 6 && !memcmp(envp[i], "MFLAGS", 6)) ||
		           (name_len == 15 && !memcmp(envp[i], "CARGO_MAKEFLAGS", 15)))) {
			char *v = env_strip_make_jobs(eq + 1);
			env[k++] = xasprintf("%.*s=%s", (int)name_len, envp[i], v);
			free(v);
			continue;
		}
		env[k++] = xstrdup(envp[i]);
	}
	env[k] = NULL;
	qsort(env, k, sizeof *env, cmp_str);
	effect[ke] = NULL;
	qsort(effect, ke, sizeof *effect, cmp_str);
	*by_effect = effect;
	return env;
}

static int stdin_kind(struct digest *d)
{
	struct stat st;
	if (fstat(0, &st) < 0)
		return STEP_STDIN_NONE;
	if (S_ISREG(st.st_mode)) {
		/* The step reads from the current offset on: key that part. */
		off_t off = lseek(0, 0, SEEK_CUR);
		struct hasher h;
		if (hasher_init(&h, NULL) < 0)
			BUG("SHA-256 could not be started");
		char chunk[65536];
		for (;;) {
			ssize_t n = pread(0, chunk, sizeof chunk, off);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			hasher_update(&h, chunk, (size_t)n);
			off += n;
		}
		hasher_final(&h, d);
		return STEP_STDIN_FILE;
	}
	if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3))
		return STEP_STDIN_NONE; /* /dev/null */
	return STEP_STDIN_STREAM;
}

/* Hashes a path or text as the weak key keys it: as it is without bases,
 * else in portable form. -1 when that form does not exist. */
static int hash_keyed(struct hasher *h, const char *text, int is_path, const struct step_bases *b)
{
	if (!portable_has_bases(b)) {
		hasher_update_str(h, text);
		return 0;
	}
	char *t = is_path ? portable_path(text, b) : portable_text(text, b);
	if (!t)
		return -1;
	hasher_update_str(h, t);
	free(t);
	return 0;
}

/* The weak key's material with argv as given: the step's own for the weak
 * key; with masked words replaced for a duplicate key; none (only argc)
 * for a shape. tag tells the three apart. */
static int key_material_argc(const struct step *s, const struct step_bases *b, const char *tag,
                             char *const *argv, size_t argc, struct digest *out);

static int key_material(const struct step *s, const struct step_bases *b, const char *tag,
                        char *const *argv, struct digest *out)
{
	return key_material_argc(s, b, tag, argv, strv_len(s->argv), out);
}

/* key_material with argv (or only argc, argv NULL) of another length than
 * the step's: its define words removed (define_words.h). */
static int key_material_argc(const struct step *s, const struct step_bases *b, const char *tag,
                             char *const *argv, size_t argc, struct digest *out)
{
	struct hasher h;
	if (hasher_init(&h, NULL) < 0)
		BUG("SHA-256 could not be started");
	hasher_update_str(&h, tag);
	hasher_update_u64(&h, CACHET_FORMAT_VERSION);
	hasher_update_str(&h, s->namespace_ ? s->namespace_ : "");
	hasher_update_u64(&h, argc);
	int rc = 0;
	for (size_t i = 0; argv && i < argc && rc == 0; i++)
		rc = hash_keyed(&h, argv[i], 0, b);
	if (rc == 0)
		rc = hash_keyed(&h, s->cwd, 1, b);
	/* Under a cwd base the cwd keys as "here": its own name still tells
	 * one checkout's directories apart (a step may print `basename $PWD`). */
	if (rc == 0 && b && b->dir[STEP_BASE_CWD])
		hasher_update_str(&h, path_basename(s->cwd));
	size_t envc = strv_len(s->env);
	hasher_update_u64(&h, envc);
	for (size_t i = 0; i < envc && rc == 0; i++)
		rc = hash_keyed(&h, s->env[i], 0, b);
	hasher_update_str(&h, s->platform);
	if (rc == 0)
		rc = hash_keyed(&h, s->exe, 1, b);
	if (rc < 0) {
		hasher_abort(&h);
		return -1;
	}
	hasher_update(&h, s->exe_digest.b, DIGEST_LEN);
	/* Only a regular file on stdin is keyed, by content. A pipe, terminal
	 * or /dev/null that the step never reads must not split keys (make -j
	 * hands one job its stdin and the others a broken pipe); a step that
	 * reads a stream is uncacheable, and one that reads /dev/null keys
	 * that fact in its path set (TRACE_FACT_STDIN), so that a run that
	 * read nothing from /dev/null is no answer for a pipe. */
	hasher_update_u64(&h, s->stdin_kind == STEP_STDIN_FILE);
	if (s->stdin_kind == STEP_STDIN_FILE)
		hasher_update(&h, s->stdin_digest.b, DIGEST_LEN);
	/* Only when set, so that keys of steps without terminals are the same
	 * whether or not terminals were ever considered. */
	if (s->colour) {
		/* Apart from entries keyed by the terminal fact: a compile
		 * recorded in a pipe without forced colours has none to give. */
		hasher_update_str(&h, "diagnostics coloured by cachet");
		hasher_update_u64(&h, s->colour);
	} else if (s->terminal) {
		hasher_update_u64(&h, s->terminal);
		hasher_update_str(&h, s->term ? s->term : "");
	}
	hasher_final(&h, out);
	return 0;
}

int step_weak_key(const struct step *s, const struct step_bases *b, struct digest *out)
{
	return key_material(s, b, "cachet weak key", s->argv, out);
}

int step_shape_key(const struct step *s, struct digest *out)
{
	return key_material(s, &s->bases, "cachet step shape", NULL, out);
}

int step_argv_key(const struct step *s, char *const *argv, struct digest *out)
{
	return key_material(s, &s->bases, "cachet duplicate key", argv, out);
}

int step_defines_shape_key(const struct step *s, size_t argc, struct digest *out)
{
	return key_material_argc(s, &s->bases, "cachet step shape without defines", NULL, argc,
	                         out);
}

int step_defines_argv_key(const struct step *s, char *const *argv, struct digest *out)
{
	return key_material_argc(s, &s->bases, "cachet duplicate key without defines", argv,
	                         strv_len(argv), out);
}

int step_init(struct step *step, char *const *argv, const char *exe, char *const *envp,
              const char *const *env_ignore, const char *const *env_per_run, const char *namespace_,
              const struct step_bases *bases, struct digest_cache *dc, struct error *e)
{
	return step_init_shown(step, argv, exe, envp, env_ignore, env_per_run, namespace_, bases,
	                       dc, NULL, e);
}

int step_init_shown(struct step *step, char *const *argv, const char *exe, char *const *envp,
                    const char *const *env_ignore, const char *const *env_per_run,
                    const char *namespace_, const struct step_bases *bases, struct digest_cache *dc,
                    const struct step_show *show, struct error *e)
{
	memset(step, 0, sizeof *step);
	size_t argc = strv_len(argv);
	step->argv = xmalloc((argc + 1) * sizeof *step->argv);
	for (size_t i = 0; i < argc; i++)
		step->argv[i] = xstrdup(argv[i]);
	step->argv[argc] = NULL;
	step->cwd = getcwd(NULL, 0);
	if (!step->cwd) {
		error_errno(e, "cannot determine the current directory");
		step_free(step);
		return -1;
	}
	step->exe = xstrdup(exe);
	if (digest_cached(exe, 0, dc, &step->exe_digest, NULL) < 0) {
		error_errno(e, "%s", exe);
		step_free(step);
		return -1;
	}
	step->env = keyed_environment(envp, env_ignore, env_per_run, step->cwd, &step->effect_env);
	step->platform = platform_describe();
	step->stdin_kind = stdin_kind(&step->stdin_digest);
	step->namespace_ = namespace_;
	if (bases)
		step->bases = *bases;
	if (show && show->colour) {
		step->colour = show->colour;
	} else if (show && show->terminal) {
		step->terminal = show->terminal;
		step->term = xstrdup(show->term ? show->term : "");
	}
	if (step_weak_key(step, &step->bases, &step->weak) < 0) {
		error_set(e,
		          "the command names %s, which base_dir keys reserve: it cannot be keyed "
		          "under base_dir",
		          STEP_PORTABLE_PREFIX);
		step_free(step);
		return -1;
	}
	return 0;
}

void step_free(struct step *step)
{
	if (step->argv)
		for (char **p = step->argv; *p; p++)
			free(*p);
	free(step->argv);
	if (step->env)
		for (char **p = step->env; *p; p++)
			free(*p);
	free(step->env);
	if (step->effect_env)
		for (char **p = step->effect_env; *p; p++)
			free(*p);
	free(step->effect_env);
	free(step->cwd);
	free(step->exe);
	free(step->platform);
	free(step->term);
	memset(step, 0, sizeof *step);
}

void step_encode(const struct step *step, struct buf *out)
{
	size_t n = strv_len(step->argv);
	buf_put_u32(out, CACHET_FORMAT_VERSION);
	buf_put_u32(out, (uint32_t)n);
	for (size_t i = 0; i < n; i++)
		buf_put_str(out, step->argv[i]);
	buf_put_str(out, step->cwd);
	buf_put_str(out, step->exe);
	buf_add(out, step->exe_digest.b, DIGEST_LEN);
	for (n = 0; step->env[n];)
		n++;
	buf_put_u32(out, (uint32_t)n);
	for (size_t i = 0; i < n; i++)
		buf_put_str(out, step->env[i]);
	buf_put_str(out, step->platform);
	buf_put_u8(out, (uint8_t)step->stdin_kind);
	buf_add(out, step->stdin_digest.b, DIGEST_LEN);
	/* The terminal facts last, so that steps recorded before they were
	 * described still decode (as "no terminal"). */
	buf_put_u8(out, (uint8_t)step->terminal);
	buf_put_str(out, step->term ? step->term : "");
	buf_put_u8(out, (uint8_t)step->colour);
}

static int same_file(const struct stat *sa, const char *b)
{
	struct stat sb;
	return stat(b, &sb) == 0 && sa->st_dev == sb.st_dev && sa->st_ino == sb.st_ino;
}

static char *absolute(const char *p)
{
	if (p[0] == '/')
		return xstrdup(p);
	char *cwd = getcwd(NULL, 0);
	if (!cwd)
		return xstrdup(p);
	char *out = path_join(cwd, p);
	free(cwd);
	return out;
}

char *step_find_program(const char *name, const char *skip_self)
{
	struct stat st;
	return step_find_program_stat(name, skip_self, &st);
}

char *step_find_program_stat(const char *name, const char *skip_self, struct stat *found)
{
	if (!*name) {
		errno = ENOENT;
		return NULL;
	}
	if (strchr(name, '/')) {
		struct stat st;
		if (stat(name, &st) < 0)
			return NULL;
		if (S_ISDIR(st.st_mode) || access(name, X_OK) < 0) {
			errno = EACCES;
			return NULL;
		}
		*found = st;
		return absolute(name);
	}
	const char *path = getenv("PATH");
	/* Without PATH, execvp and Python's subprocess (os.defpath) search
	 * these: the program found must be the one they would run. */
	if (!path)
		path = "/bin:/usr/bin";
	int saw_eacces = 0;
	for (const char *p = path;;) {
		const char *colon = strchr(p, ':');
		size_t len = colon ? (size_t)(colon - p) : strlen(p);
		char *cand = path_list_repeats(path, p, len) ? NULL
		             : len ? xasprintf("%.*s/%s", (int)len, p, name)
		                   : xasprintf("./%s", name);
		struct stat st;
		if (cand && stat(cand, &st) == 0 && !S_ISDIR(st.st_mode)) {
			if (access(cand, X_OK) == 0) {
				if (!skip_self || !same_file(&st, skip_self)) {
					char *abs = absolute(cand);
					free(cand);
					*found = st;
					return abs;
				}
			} else {
				saw_eacces = 1;
			}
		}
		free(cand);
		if (!colon)
			break;
		p = colon + 1;
	}
	errno = saw_eacces ? EACCES : ENOENT;
	return NULL;
}

static char **decode_strv(struct reader *r)
{
	uint32_t n = reader_u32(r);
	if (r->failed || n > r->left / 4)
		return NULL;
	char **v = xcalloc(n + 1, sizeof *v);
	for (uint32_t i = 0; i < n; i++) {
		v[i] = reader_strdup(r);
		if (!v[i]) {
			for (uint32_t j = 0; j < i; j++)
				free(v[j]);
			free(v);
			return NULL;
		}
	}
	return v;
}

int step_decode(const void *data, size_t len, struct step *out, struct error *e)
{
	struct reader r;
	memset(out, 0, sizeof *out);
	reader_init(&r, data, len);
	if (reader_u32(&r) != CACHET_FORMAT_VERSION)
		return error_set(e, "recorded step: unknown format");
	out->argv = decode_strv(&r);
	out->cwd = reader_strdup(&r);
	out->exe = reader_strdup(&r);
	reader_raw(&r, out->exe_digest.b, DIGEST_LEN);
	out->env = decode_strv(&r);
	out->platform = reader_strdup(&r);
	out->stdin_kind = reader_u8(&r);
	reader_raw(&r, out->stdin_digest.b, DIGEST_LEN);
	if (!r.failed && r.left) {
		out->terminal = reader_u8(&r);
		char *term = reader_strdup(&r);
		out->colour = reader_u8(&r);
		if (out->terminal)
			out->term = term;
		else
			free(term);
	}
	if (r.failed || !out->argv || !out->cwd || !out->exe || !out->env || !out->platform ||
	    r.left != 0) {
		step_free(out);
		return error_set(e, "recorded step: corrupt encoding");
	}
	return 0;
}
