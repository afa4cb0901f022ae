/*
 * Portable forms (portable.h): two checkouts of one tree at different paths
 * key alike and share entries; a file that differs under either misses; a
 * run whose outputs name its checkout's real path holds only there; and
 * without base_dir every key is the one cachet has always computed.
 */
#include "test_store_fixture.h"

#include <limits.h>

#include "cachet/observe.h"
#include "cachet/pathset.h"
#include "cachet/portable.h"
#include "cachet/portable_record.h"
#include "cachet/record.h"
#include "cachet/result.h"
#include "cachet/step.h"

/* ---- paths and texts ---- */

static void portable_paths_name_their_base(void **state)
{
	struct step_bases b = {{"/srv/base", "/home/alice"}};
	char *p = portable_path("/home/alice/src/x.c", &b);
	assert_string_equal(p, "/@cachet-base1/src/x.c");
	struct step_bases other = {{"/srv/base", "/home/bob"}};
	char *l = portable_local_path(p, &other);
	assert_string_equal(l, "/home/bob/src/x.c");
	free(p);
	free(l);
	p = portable_path("/home/alicex/y", &b);
	assert_string_equal(p, "/home/alicex/y"); /* component-wise, not by prefix */
	free(p);
	/* ".." stays text: under the other checkout it means what it means there. */
	p = portable_path("/srv/base/build/../../etc/x", &b);
	assert_string_equal(p, "/@cachet-base0/build/../../etc/x");
	free(p);
	assert_null(portable_path("/@cachet-base0/evil", &b));
	struct step_bases none = {{NULL, NULL}};
	assert_null(portable_local_path("/@cachet-base1/x", &none));
	assert_null(portable_local_path("/@cachet-base1/x", NULL));
	char *t = portable_text("-I/home/alice/inc:/home/alice -DX=/x/home/alice", &b);
	assert_string_equal(t, "-I/@cachet-base1/inc:/@cachet-base1 -DX=/x/home/alice");
	free(t);
	assert_int_equal(portable_base_index("/@cachet-base1"), 1);
	assert_int_equal(portable_base_index("/@cachet-base1/x"), -1);
	assert_int_equal(portable_base_index("/@cachet-base7"), -1);
}

/* base_dir above the checkouts (ccache's meaning): paths under it relative
 * to the cwd, alike for checkouts at different depths. */
static void paths_under_a_parent_base_dir_are_relative_to_the_cwd(void **state)
{
	struct step_bases a = {{"/builds", NULL, "/builds/ws1/proj/build"}};
	struct step_bases b = {{"/builds", NULL, "/builds/ws2/deep/er/proj/build"}};
	char *pa = portable_path("/builds/ws1/proj/src/x.c", &a);
	char *pb = portable_path("/builds/ws2/deep/er/proj/src/x.c", &b);
	assert_string_equal(pa, "/@cachet-base2/../src/x.c");
	assert_string_equal(pb, pa);
	char *l = portable_local_path(pa, &b);
	assert_string_equal(l, "/builds/ws2/deep/er/proj/src/x.c");
	free(l);
	free(pa);
	free(pb);
	pa = portable_path("/builds/ws1/proj/build", &a);
	assert_string_equal(pa, "/@cachet-base2");
	free(pa);
	/* Outside the checkout: another number of levels up in each. */
	pa = portable_path("/builds/shared/y.h", &a);
	pb = portable_path("/builds/shared/y.h", &b);
	assert_string_equal(pa, "/@cachet-base2/../../../shared/y.h");
	assert_string_not_equal(pa, pb);
	free(pa);
	free(pb);
	/* Component-wise: /builds/ws1/projx is beside proj, not in it. */
	pa = portable_path("/builds/ws1/projx/z", &a);
	assert_string_equal(pa, "/@cachet-base2/../../projx/z");
	free(pa);
	/* Never above base_dir, whatever a stored path says. */
	assert_null(portable_local_path("/@cachet-base2/../../../../etc/passwd", &a));
	char *t = portable_text("-I/builds/ws1/proj/include:/usr/include", &a);
	assert_string_equal(t, "-I/@cachet-base2/../include:/usr/include");
	free(t);
	assert_string_equal(portable_cwd_base(&a, "/builds/ws1"), "/builds/ws1");
	assert_null(portable_cwd_base(&a, "/srv/x"));
}

static void nested_bases_take_the_deepest(void **state)
{
	/* base_dir inside HOME: a checkout path goes by base_dir. */
	struct step_bases b = {{"/home/alice/proj", "/home/alice"}};
	char *p = portable_path("/home/alice/proj/x.c", &b);
	assert_string_equal(p, "/@cachet-base0/x.c");
	free(p);
	p = portable_path("/home/alice/.local/include/y.h", &b);
	assert_string_equal(p, "/@cachet-base1/.local/include/y.h");
	free(p);
}

static void readlink_targets_under_a_base_are_portable(void **state)
{
	struct step_bases b = {{"/w/a", NULL}};
	struct buf out;
	buf_init(&out);
	assert_int_equal(portable_value("R/w/a/real/x.h", 14, &b, &out), 0);
	assert_string_equal(out.data, "R/@cachet-base0/real/x.h");
	buf_reset(&out);
	assert_int_equal(portable_value("Rrelative", 9, &b, &out), 0); /* relative: as it is */
	assert_string_equal(out.data, "Rrelative");
	buf_reset(&out);
	assert_int_equal(portable_value("R/usr/lib/x", 11, &b, &out), 0);
	assert_string_equal(out.data, "R/usr/lib/x");
	buf_reset(&out);
	/* A target that spells the reserved prefix never equals a recorded value. */
	assert_int_equal(portable_value("R/@cachet-base0/x", 17, &b, &out), -1);
	assert_int_equal(out.data[0], 'Q');
	buf_reset(&out);
	/* Without bases nothing changes, not even that. */
	assert_int_equal(portable_value("R/@cachet-base0/x", 17, NULL, &out), 0);
	assert_string_equal(out.data, "R/@cachet-base0/x");
	buf_free(&out);
}

/* ---- base_dir itself ---- */

static void base_dir_must_be_a_real_directory_other_than_root(void **state)
{
	struct error e = {0};
	assert_null(portable_base("relative/dir", "base_dir", &e));
	assert_non_null(strstr(e.msg, "absolute"));
	char *missing = scratch_path("missing");
	assert_null(portable_base(missing, "base_dir", &e));
	assert_non_null(strstr(e.msg, "base_dir"));
	char *file = scratch_path("file");
	write_file(file, "x", 1);
	assert_null(portable_base(file, "base_dir", &e));
	assert_non_null(strstr(e.msg, "not a directory"));
	assert_null(portable_base("/", "base_dir", &e));
	assert_non_null(strstr(e.msg, "root"));
	assert_null(portable_base("/tmp/..", "base_dir", &e));
	/* A checkout reached through a symlink is keyed by its real path,
	 * which is what getcwd() reports inside it. */
	char *real = scratch_path("real");
	char *link = scratch_path("link");
	assert_int_equal(mkdir(real, 0755), 0);
	assert_int_equal(symlink(real, link), 0);
	char *canon = realpath(real, NULL);
	char *got = portable_base(link, "base_dir", &e);
	assert_non_null(got);
	assert_string_equal(got, canon);
	free(got);
	free(canon);
	free(real);
	free(link);
	free(missing);
	free(file);
}

/* ---- the weak key ---- */

static char *gcc_argv_a[] = {"/usr/bin/gcc", "-c", "/src/proj/x.c", "-o", "x.o", NULL};
static char *gcc_env_a[] = {"LANG=C", "PATH=/usr/bin:/bin", "PWD=/src/proj", NULL};

static void fake_step(struct step *s, char **argv, const char *cwd, char **env)
{
	memset(s, 0, sizeof *s);
	s->argv = argv;
	s->cwd = (char *)cwd;
	s->exe = "/usr/bin/gcc";
	memset(s->exe_digest.b, 0xab, DIGEST_LEN);
	s->env = env;
	s->platform = "x86_64 6.1.0 | cpu | umask 022";
}

/* Computed by cachet at format 2 (make's command-line variables keyed by
 * effect), before bases entered the local key: a store filled then must
 * keep hitting. */
#define FORMAT_2_KEY_A "57d5b087ed4730e7360df3675a20c19bd7bfeb257eb6bbe04273dbc8951cb0fd"
#define FORMAT_2_KEY_B "88fb162c99fc9d30b2371232c2b9b382c63a70f443ae6ad76bd7f19393f565f5"

static void weak_key_without_bases_is_the_format_2_key(void **state)
{
	struct step s;
	fake_step(&s, gcc_argv_a, "/src/proj", gcc_env_a);
	s.stdin_kind = STEP_STDIN_FILE;
	memset(s.stdin_digest.b, 0x11, DIGEST_LEN);
	s.namespace_ = "ns";
	struct digest w;
	char hex[DIGEST_HEX_LEN + 1];
	assert_int_equal(step_weak_key(&s, NULL, &w), 0);
	digest_to_hex(&w, hex);
	assert_string_equal(hex, FORMAT_2_KEY_A);
	struct step_bases none = {{NULL, NULL}};
	assert_int_equal(step_weak_key(&s, &none, &w), 0);
	digest_to_hex(&w, hex);
	assert_string_equal(hex, FORMAT_2_KEY_A);

	s.stdin_kind = STEP_STDIN_NONE;
	s.namespace_ = NULL;
	s.terminal = STEP_TTY_STDERR;
	s.term = "xterm";
	assert_int_equal(step_weak_key(&s, NULL, &w), 0);
	digest_to_hex(&w, hex);
	assert_string_equal(hex, FORMAT_2_KEY_B);
	/* Without bases, the reserved prefix is just text. */
	char *odd[] = {"/usr/bin/gcc", "-I/@cachet-base0", NULL};
	s.argv = odd;
	assert_int_equal(step_weak_key(&s, NULL, &w), 0);
}

static void two_checkouts_key_alike_under_their_bases(void **state)
{
	char *argv_a[] = {"/usr/bin/gcc", "-I/w/a/proj/inc", "-c", "x.c", NULL};
	char *env_a[] = {"PATH=/usr/bin", "PWD=/w/a/proj/src", NULL};
	char *argv_b[] = {"/usr/bin/gcc", "-I/w/b/proj/inc", "-c", "x.c", NULL};
	char *env_b[] = {"PATH=/usr/bin", "PWD=/w/b/proj/src", NULL};
	struct step a, b;
	fake_step(&a, argv_a, "/w/a/proj/src", env_a);
	fake_step(&b, argv_b, "/w/b/proj/src", env_b);
	struct step_bases ba = {{"/w/a/proj", NULL}}, bb = {{"/w/b/proj", NULL}};
	struct digest wa, wb, plain_a, plain_b;
	assert_int_equal(step_weak_key(&a, &ba, &wa), 0);
	assert_int_equal(step_weak_key(&b, &bb, &wb), 0);
	assert_true(digest_equal(&wa, &wb));
	assert_int_equal(step_weak_key(&a, NULL, &plain_a), 0);
	assert_int_equal(step_weak_key(&b, NULL, &plain_b), 0);
	assert_false(digest_equal(&plain_a, &plain_b));
	assert_false(digest_equal(&wa, &plain_a));
	/* A path outside the base is the same path in both: not rewritten. */
	char *argv_c[] = {"/usr/bin/gcc", "-I/opt/inc", "-c", "x.c", NULL};
	b.argv = argv_c;
	assert_int_equal(step_weak_key(&b, &bb, &wb), 0);
	assert_false(digest_equal(&wa, &wb));
	/* With bases set, the reserved prefix cannot be keyed. */
	char *odd[] = {"/usr/bin/gcc", "-I/@cachet-base0", NULL};
	b.argv = odd;
	assert_int_equal(step_weak_key(&b, &bb, &wb), -1);
}

/* ---- a recorded run in stored form, and back ---- */

/* A record of real paths, in canonical order, as record_run leaves it. */
static void add_obs(struct record *rec, enum obs_kind kind, const char *path,
                    const char *const *excluded, const char *value, size_t len)
{
	pathset_add(&rec->ps, kind, 0, path, excluded);
	buf_put_bytes(&rec->values, value, len);
}

static void init_record(struct record *rec)
{
	memset(rec, 0, sizeof *rec);
	pathset_init(&rec->ps);
	buf_init(&rec->ps_body);
	buf_init(&rec->values);
	buf_init(&rec->listings);
	result_init(&rec->result);
}

static void paths_values_listings_and_outputs_become_portable(void **state)
{
	struct record rec;
	init_record(&rec);
	const char *excluded[] = {"x.o", NULL};
	/* Sorted as real paths; "/@" sorts before "/u" once portable. */
	add_obs(&rec, OBS_STAT, "/usr/include/stdio.h", NULL, "E\2\0\0\0", 5);
	add_obs(&rec, OBS_READLINK, "/w/a/proj/link", NULL, "R/w/a/proj/real", 15);
	add_obs(&rec, OBS_LIST, "/w/a/proj/src", excluded, "Lxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 33);
	add_obs(&rec, OBS_READ, "/w/a/proj/src/x.c", NULL, "Fyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy", 33);
	pathset_canonicalise(&rec.ps, NULL);
	buf_put_u32(&rec.listings, 2);
	buf_put_bytes(&rec.listings, "\10x.c", 5);
	struct output *o = result_add_output(&rec.result, OUT_FILE, "/w/a/proj/src/x.o");
	o->mode = 0644;
	o = result_add_output(&rec.result, OUT_SYMLINK, "/w/a/proj/latest");
	o->target = xstrdup("/w/a/proj/src/x.o");
	result_add_output(&rec.result, OUT_FILE, "/tmp/elsewhere.log");

	struct step_bases a = {{"/w/a/proj", NULL}};
	assert_int_equal(portable_record(&rec, &a), 0);
	assert_int_equal(rec.ps.nobs, 4);
	assert_string_equal(rec.ps.paths[rec.ps.obs[0].path], "/@cachet-base0/link");
	assert_string_equal(rec.ps.paths[rec.ps.obs[1].path], "/@cachet-base0/src");
	assert_string_equal(rec.ps.paths[rec.ps.obs[2].path], "/@cachet-base0/src/x.c");
	assert_string_equal(rec.ps.paths[rec.ps.obs[3].path], "/usr/include/stdio.h");
	const char **ex = pathset_excluded(&rec.ps, 1);
	assert_string_equal(ex[0], "x.o");
	free(ex);
	/* The values follow their observations; the readlink target is portable. */
	struct reader r;
	reader_init(&r, rec.values.data, rec.values.len);
	size_t len;
	const char *v = reader_bytes(&r, &len);
	assert_int_equal(len, 20);
	assert_memory_equal(v, "R/@cachet-base0/real", 20);
	v = reader_bytes(&r, &len);
	assert_int_equal(v[0], 'L');
	v = reader_bytes(&r, &len);
	assert_int_equal(v[0], 'F');
	v = reader_bytes(&r, &len);
	assert_int_equal(v[0], 'E');
	/* The listing follows its observation to index 1. */
	reader_init(&r, rec.listings.data, rec.listings.len);
	assert_int_equal(reader_u32(&r), 1);
	/* The body is the canonical encoding of the portable path set. */
	struct buf enc;
	buf_init(&enc);
	pathset_encode(&rec.ps, &enc);
	assert_int_equal(enc.len, rec.ps_body.len);
	assert_memory_equal(enc.data, rec.ps_body.data, enc.len);
	struct digest d;
	digest_bytes(enc.data, enc.len, &d);
	assert_true(digest_equal(&d, &rec.ps_digest));
	assert_string_equal(rec.result.outputs[0].path, "/@cachet-base0/src/x.o");
	assert_string_equal(rec.result.outputs[1].target, "/@cachet-base0/src/x.o");
	assert_string_equal(rec.result.outputs[2].path, "/tmp/elsewhere.log");
	assert_null(rec.result.pinned);

	/* Another checkout reads them as its own paths. */
	struct step_bases b = {{"/w/b/proj", NULL}};
	struct pathset ps;
	struct error e = {0};
	assert_int_equal(pathset_decode(rec.ps_body.data, rec.ps_body.len, &ps, &e), 0);
	assert_int_equal(portable_localise_pathset(&ps, &b), 0);
	assert_string_equal(ps.paths[ps.obs[2].path], "/w/b/proj/src/x.c");
	assert_string_equal(ps.paths[ps.obs[3].path], "/usr/include/stdio.h");
	pathset_free(&ps);
	/* A checkout without base_dir cannot evaluate it at all. */
	assert_int_equal(pathset_decode(rec.ps_body.data, rec.ps_body.len, &ps, &e), 0);
	assert_int_equal(portable_localise_pathset(&ps, NULL), -1);
	pathset_free(&ps);
	assert_int_equal(portable_localise_result(&rec.result, &b), 0);
	assert_string_equal(rec.result.outputs[0].path, "/w/b/proj/src/x.o");
	assert_string_equal(rec.result.outputs[1].target, "/w/b/proj/src/x.o");
	assert_string_equal(rec.result.outputs[2].path, "/tmp/elsewhere.log");
	buf_free(&enc);
	record_free(&rec);
}

static void a_run_naming_the_reserved_prefix_is_not_shared(void **state)
{
	struct record rec;
	init_record(&rec);
	add_obs(&rec, OBS_STAT, "/@cachet-base0/x", NULL, "E\2\0\0\0", 5);
	pathset_canonicalise(&rec.ps, NULL);
	pathset_encode(&rec.ps, &rec.ps_body);
	struct step_bases a = {{"/w/a/proj", NULL}};
	assert_int_equal(portable_record(&rec, &a), -1);
	/* Left as it was. */
	assert_string_equal(rec.ps.paths[0], "/@cachet-base0/x");
	/* Without bases nothing is converted, so nothing fails. */
	assert_int_equal(portable_record(&rec, NULL), 0);
	record_free(&rec);
}

static void lookups_above_the_checkout_are_relative_or_pin_it(void **state)
{
	struct record rec;
	init_record(&rec);
	/* Sorted as real paths: what a step run in /w/a/proj may look up. */
	add_obs(&rec, OBS_STAT, "/", NULL, "S\4\355\1\0\0\0\0\0\0\0\0", 12);
	add_obs(&rec, OBS_READLINK, "/usr", NULL, "E\26\0\0\0", 5);
	add_obs(&rec, OBS_READLINK, "/w", NULL, "E\26\0\0\0", 5);
	add_obs(&rec, OBS_READLINK, "/w/a", NULL, "E\26\0\0\0", 5);
	add_obs(&rec, OBS_STAT, "/w/a/proj/src", NULL, "S\4\355\1\0\0\0\0\0\0\0\0", 12);
	add_obs(&rec, OBS_STAT, "/x.cfg", NULL, "E\2\0\0\0", 5);
	pathset_canonicalise(&rec.ps, NULL);
	pathset_encode(&rec.ps, &rec.ps_body);
	struct step_bases a = {{"/w/a/proj", NULL}};
	assert_int_equal(portable_record(&rec, &a), 0);
	/* The directories above the checkout, as levels above it; "/" and
	 * what lies beside it are the same for every checkout. */
	const char *want[] = {
	    "/",     "/@cachet-base0/..", "/@cachet-base0/../..", "/@cachet-base0/src", "/usr",
	    "/x.cfg"};
	assert_int_equal(rec.ps.nobs, 6);
	for (size_t i = 0; i < 6; i++)
		assert_string_equal(rec.ps.paths[rec.ps.obs[i].path], want[i]);
	assert_int_equal(rec.pinned, 0);
	assert_null(rec.result.pinned);
	struct pathset ps;
	struct error e = {0};
	struct step_bases b = {{"/w/ci/b/proj", NULL}};
	assert_int_equal(pathset_decode(rec.ps_body.data, rec.ps_body.len, &ps, &e), 0);
	assert_int_equal(portable_localise_pathset(&ps, &b), 0);
	assert_string_equal(ps.paths[ps.obs[2].path], "/w/ci/b/proj/../..");
	pathset_free(&ps);
	record_free(&rec);

	/* A configuration file searched upwards from the checkout, or a
	 * listing of its parent: what lies next to this checkout only. */
	init_record(&rec);
	add_obs(&rec, OBS_STAT, "/w/a/proj/src/tool.cfg", NULL, "E\2\0\0\0", 5);
	add_obs(&rec, OBS_STAT, "/w/a/proj/tool.cfg", NULL, "E\2\0\0\0", 5);
	add_obs(&rec, OBS_STAT, "/w/a/tool.cfg", NULL, "E\2\0\0\0", 5);
	add_obs(&rec, OBS_STAT, "/w/tool.cfg", NULL, "E\2\0\0\0", 5);
	pathset_canonicalise(&rec.ps, NULL);
	pathset_encode(&rec.ps, &rec.ps_body);
	assert_int_equal(portable_record(&rec, &a), 0);
	assert_int_equal(rec.pinned, 1u << STEP_BASE_DIR);
	assert_non_null(strstr(rec.result.pinned, "a search upwards from /w/a/proj reached /w/"));
	assert_int_equal(rec.ps.obs[0].kind, OBS_BASE);
	record_free(&rec);
	/* A toolchain beside a directory above the checkout (~/.pyenv for a
	 * checkout in ~/src) is no search: the same path for every checkout. */
	init_record(&rec);
	add_obs(&rec, OBS_STAT, "/w/.pyenv", NULL, "S\4\355\1\0\0\0\0\0\0\0\0", 12);
	add_obs(&rec, OBS_STAT, "/w/a/proj/.git", NULL, "E\2\0\0\0", 5);
	pathset_canonicalise(&rec.ps, NULL);
	pathset_encode(&rec.ps, &rec.ps_body);
	assert_int_equal(portable_record(&rec, &a), 0);
	assert_int_equal(rec.pinned, 0);
	assert_string_equal(rec.ps.paths[rec.ps.obs[1].path], "/w/.pyenv");
	record_free(&rec);
	init_record(&rec);
	add_obs(&rec, OBS_LIST, "/w/a", NULL, "Lxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 33);
	pathset_canonicalise(&rec.ps, NULL);
	pathset_encode(&rec.ps, &rec.ps_body);
	assert_int_equal(portable_record(&rec, &a), 0);
	assert_int_equal(rec.pinned, 1u << STEP_BASE_DIR);
	record_free(&rec);
}

/* Two real checkouts under the scratch directory, each with src/x.c. */
static char *make_checkout(const char *name, const char *source)
{
	char *root = scratch_path("%s", name);
	char *src = scratch_path("%s/src", name);
	char *file = scratch_path("%s/src/x.c", name);
	assert_int_equal(mkdir(root, 0755), 0);
	assert_int_equal(mkdir(src, 0755), 0);
	write_file(file, source, strlen(source));
	char *real = realpath(root, NULL);
	free(root);
	free(src);
	free(file);
	return real;
}

/* A recorded read of <base>/src/x.c, pinned to the base or not, in stored
 * form; *strong gets the strong key it is stored under. */
static void record_read(struct record *rec, const struct step_bases *b, int pinned,
                        const struct digest *weak, struct digest *strong)
{
	init_record(rec);
	char *path = xasprintf("%s/src/x.c", b->dir[0]);
	struct buf v;
	buf_init(&v);
	observe_value(OBS_READ, 0, path, NULL, NULL, &v);
	add_obs(rec, OBS_READ, path, NULL, v.data, v.len);
	pathset_canonicalise(&rec->ps, NULL);
	pathset_encode(&rec->ps, &rec->ps_body);
	if (pinned) {
		rec->pinned = 1u << STEP_BASE_DIR;
		rec->pinned_by[0] =
		    xasprintf("output %s/src/x.d contains %s", b->dir[0], b->dir[0]);
	}
	assert_int_equal(portable_record(rec, b), 0);
	pathset_strong_key_from_values(weak, &rec->ps_digest, rec->values.data, rec->values.len,
	                               strong);
	buf_free(&v);
	free(path);
}

/* The strong key the stored path set evaluates to in a checkout. */
static void evaluate(const struct record *rec, const struct step_bases *b,
                     const struct digest *weak, struct digest *strong)
{
	struct pathset ps;
	struct error e = {0};
	assert_int_equal(pathset_decode(rec->ps_body.data, rec->ps_body.len, &ps, &e), 0);
	assert_int_equal(portable_localise_pathset(&ps, b), 0);
	pathset_strong_key(&ps, b, weak, &rec->ps_digest, NULL, NULL, strong);
	pathset_free(&ps);
}

static void checkouts_share_until_a_file_differs(void **state)
{
	char *a = make_checkout("a", "int x;\n");
	char *b = make_checkout("b", "int x;\n");
	struct step_bases ba = {{a, NULL}}, bb = {{b, NULL}};
	struct digest weak = key_digest("weak", 1), recorded, now;
	struct record rec;
	record_read(&rec, &ba, 0, &weak, &recorded);
	evaluate(&rec, &ba, &weak, &now);
	assert_true(digest_equal(&now, &recorded));
	evaluate(&rec, &bb, &weak, &now);
	assert_true(digest_equal(&now, &recorded)); /* the other checkout hits */
	char *bx = xasprintf("%s/src/x.c", b);
	write_file(bx, "int y;\n", 7);
	evaluate(&rec, &bb, &weak, &now);
	assert_false(digest_equal(&now, &recorded)); /* b's own edit misses */
	record_free(&rec);
	free(bx);
	free(a);
	free(b);
}

static void a_run_whose_outputs_name_its_checkout_holds_only_there(void **state)
{
	char *a = make_checkout("a", "int x;\n");
	char *b = make_checkout("b", "int x;\n");
	struct step_bases ba = {{a, NULL}}, bb = {{b, NULL}};
	struct digest weak = key_digest("weak", 1), recorded, now;
	struct record rec;
	record_read(&rec, &ba, 1, &weak, &recorded);
	int found = 0;
	for (size_t i = 0; i < rec.ps.nobs; i++)
		if (rec.ps.obs[i].kind == OBS_BASE) {
			assert_string_equal(rec.ps.paths[rec.ps.obs[i].path], "/@cachet-base0");
			found = 1;
		}
	assert_true(found);
	assert_non_null(rec.result.pinned);
	assert_non_null(strstr(rec.result.pinned, "x.d contains"));
	assert_non_null(strstr(rec.result.pinned, a));
	evaluate(&rec, &ba, &weak, &now);
	assert_true(digest_equal(&now, &recorded)); /* the same checkout still hits */
	evaluate(&rec, &bb, &weak, &now);
	assert_false(digest_equal(&now, &recorded)); /* the other one misses */
	/* Decoding checks that a BASE observation names a base. */
	struct pathset ps;
	struct error e = {0};
	pathset_init(&ps);
	pathset_add(&ps, OBS_BASE, 0, "/etc", NULL);
	struct buf enc;
	buf_init(&enc);
	pathset_encode(&ps, &enc);
	pathset_free(&ps);
	assert_int_equal(pathset_decode(enc.data, enc.len, &ps, &e), -1);
	buf_free(&enc);
	record_free(&rec);
	free(a);
	free(b);
}

/* ---- the scan (the finder itself: test_util_find.c) ---- */

static void an_output_that_names_the_base_pins_the_run(void **state)
{
	char *a = make_checkout("a", "int x;\n");
	struct step_bases ba = {{a, NULL}};
	char *dep = xasprintf("%s/src/x.d", a);
	char *obj = xasprintf("%s/src/x.o", a);
	char *depfile = xasprintf("x.o: %s/src/x.c\n", a);
	write_file(obj, "\177ELF no paths here", 18);
	write_file(dep, depfile, strlen(depfile));
	/* As the tracer reports them: each change, and the state the step left
	 * (TRACE_FINAL), which the recorder holds the files to. The first two
	 * are the object's, all four both files'. */
	struct trace_event events[4];
	memset(events, 0, sizeof events);
	const char *paths[2] = {obj, dep};
	for (int i = 0; i < 2; i++) {
		struct stat st;
		assert_int_equal(lstat(paths[i], &st), 0);
		events[2 * i].kind = TRACE_TOUCH;
		events[2 * i].path = (char *)paths[i];
		events[2 * i + 1].kind = TRACE_FINAL;
		events[2 * i + 1].path = (char *)paths[i];
		file_id_from_stat(&st, &events[2 * i + 1].id);
	}
	struct store *s = open_cache();
	struct record rec;
	struct error e = {0};
	assert_int_equal(record_run(events, 2, NULL, &ba, s, NULL, &rec, &e), 0);
	assert_int_equal(rec.pinned, 0); /* the object names no path */
	record_scan_stream(&rec, "stdout", "compiling x.c\n", 14, &ba);
	assert_int_equal(rec.pinned, 0);
	record_free(&rec);
	assert_int_equal(record_run(events, 4, NULL, &ba, s, NULL, &rec, &e), 0);
	assert_int_equal(rec.pinned, 1u << STEP_BASE_DIR);
	assert_non_null(strstr(rec.pinned_by[0], "x.d"));
	record_free(&rec);
	/* stdout that prints the cwd pins as well. */
	assert_int_equal(record_run(events, 2, NULL, &ba, s, NULL, &rec, &e), 0);
	char *pwd = xasprintf("%s/src\n", a);
	record_scan_stream(&rec, "stdout", pwd, strlen(pwd), &ba);
	assert_int_equal(rec.pinned, 1u << STEP_BASE_DIR);
	assert_non_null(strstr(rec.pinned_by[0], "stdout contains "));
	assert_non_null(strstr(rec.pinned_by[0], a));
	record_free(&rec);
	/* Without bases there is nothing to look for. */
	assert_int_equal(record_run(events, 4, NULL, NULL, s, NULL, &rec, &e), 0);
	assert_int_equal(rec.pinned, 0);
	record_free(&rec);
	store_close(s);
	free(pwd);
	free(depfile);
	free(dep);
	free(obj);
	free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(portable_paths_name_their_base),
	    cmocka_unit_test(paths_under_a_parent_base_dir_are_relative_to_the_cwd),
	    cmocka_unit_test(nested_bases_take_the_deepest),
	    cmocka_unit_test(readlink_targets_under_a_base_are_portable),
	    cmocka_unit_test_setup_teardown(base_dir_must_be_a_real_directory_other_than_root,
	                                    scratch_setup, scratch_teardown),
	    cmocka_unit_test(weak_key_without_bases_is_the_format_2_key),
	    cmocka_unit_test(two_checkouts_key_alike_under_their_bases),
	    cmocka_unit_test(paths_values_listings_and_outputs_become_portable),
	    cmocka_unit_test(a_run_naming_the_reserved_prefix_is_not_shared),
	    cmocka_unit_test(lookups_above_the_checkout_are_relative_or_pin_it),
	    cmocka_unit_test_setup_teardown(checkouts_share_until_a_file_differs, scratch_setup,
	                                    scratch_teardown),
	    cmocka_unit_test_setup_teardown(a_run_whose_outputs_name_its_checkout_holds_only_there,
	                                    scratch_setup, scratch_teardown),
	    cmocka_unit_test_setup_teardown(an_output_that_names_the_base_pins_the_run,
	                                    scratch_setup, scratch_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
