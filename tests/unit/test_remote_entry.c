/*
 * The remote layer without a network: configuration and redaction, the wire
 * format of path-set lists and entries (hostile bytes included), Ed25519
 * signatures, and restoring a remote entry only beneath its output roots
 * (portable forms: test_key_portable.c).
 */
#include "test_store_fixture.h"

#include "cachet/observe.h"
#include "cachet/remote.h"
#include "cachet/result.h"
#include "cachet/step.h"

/* ---- configuration ---- */

static void credentials_leave_the_url_and_never_show(void **state)
{
	char *items[] = {"https://alice:s%40cret@cache.example:8443/team/ read-only timeout=250ms "
	                 "op-timeout=3s",
	                 NULL};
	struct remote_config c;
	struct error e = {0};
	assert_int_equal(remote_config_parse(items, &c, &e), 0);
	assert_int_equal(c.n, 1);
	struct remote_spec *s = &c.specs[0];
	assert_int_equal(s->kind, REMOTE_HTTP);
	assert_string_equal(s->base_url, "https://cache.example:8443/team");
	assert_string_equal(s->user, "alice");
	assert_string_equal(s->password, "s@cret");
	assert_null(strstr(s->shown, "cret"));
	assert_null(strstr(s->shown, "alice"));
	assert_true(s->read_only);
	assert_int_equal(s->connect_timeout_ms, 250);
	assert_int_equal(s->op_timeout_ms, 3000);
	assert_int_equal(strlen(s->id), 16);
	remote_config_free(&c);
}

static void redis_urls_take_password_db_and_socket(void **state)
{
	char *items[] = {"redis://pw@10.0.0.1:7000/3", "redis://bob:pw2@host",
	                 "redis+unix:///run/redis.sock?db=2 prefix=team", NULL};
	struct remote_config c;
	struct error e = {0};
	assert_int_equal(remote_config_parse(items, &c, &e), 0);
	assert_int_equal(c.n, 3);
	assert_null(c.specs[0].user);
	assert_string_equal(c.specs[0].password, "pw");
	assert_string_equal(c.specs[0].host, "10.0.0.1");
	assert_int_equal(c.specs[0].port, 7000);
	assert_int_equal(c.specs[0].db, 3);
	assert_string_equal(c.specs[1].user, "bob");
	assert_int_equal(c.specs[1].port, 6379);
	assert_string_equal(c.specs[2].socket_path, "/run/redis.sock");
	assert_int_equal(c.specs[2].db, 2);
	assert_string_equal(c.specs[2].prefix, "team");
	/* Shard identity must not depend on credentials. */
	char *again[] = {"redis://other@10.0.0.1:7000/3", NULL};
	struct remote_config c2;
	assert_int_equal(remote_config_parse(again, &c2, &e), 0);
	assert_string_equal(c.specs[0].id, c2.specs[0].id);
	remote_config_free(&c);
	remote_config_free(&c2);
}

static void bad_items_are_errors_without_secrets(void **state)
{
	char *items[] = {"http://u:topsecret@h/x frobnicate", NULL};
	struct remote_config c;
	struct error e = {0};
	assert_int_equal(remote_config_parse(items, &c, &e), -1);
	assert_non_null(strstr(e.msg, "frobnicate"));
	assert_null(strstr(e.msg, "topsecret"));
	char *scheme[] = {"ftp://h/x", NULL};
	assert_int_equal(remote_config_parse(scheme, &c, &e), -1);
}

static void redaction_hides_userinfo_and_tokens(void **state)
{
	char *r = remote_redact_url("https://u:p@h/c?token=abc&x=1&sig=zz");
	assert_string_equal(r, "https://***@h/c?token=***&x=1&sig=***");
	free(r);
}

/* ---- wire format ---- */

static void pathset_lists_round_trip_dedupe_and_cap(void **state)
{
	struct remote_pathsets p = {0};
	for (int i = 0; i < REMOTE_MAX_PATHSETS + 3; i++) {
		char body[32];
		snprintf(body, sizeof body, "pathset %d", i);
		struct remote_pathset set = {.body = body, .len = strlen(body)};
		digest_bytes(body, strlen(body), &set.digest);
		assert_int_equal(remote_pathsets_add(&p, &set), 1);
		assert_int_equal(remote_pathsets_add(&p, &set), 0);
	}
	assert_int_equal(p.n, REMOTE_MAX_PATHSETS);
	assert_memory_equal(p.sets[0].body, "pathset 18", 10);
	struct buf b;
	buf_init(&b);
	remote_pathsets_encode(&p, &b);
	struct remote_pathsets q;
	struct error e = {0};
	assert_int_equal(remote_pathsets_decode(b.data, b.len, &q, &e), 0);
	assert_int_equal(q.n, p.n);
	assert_true(digest_equal(&q.sets[5].digest, &p.sets[5].digest));
	remote_pathsets_free(&q);
	/* Any flipped byte: an error, never a crash or a wrong list. */
	for (size_t i = 0; i < b.len; i++) {
		b.data[i] ^= 0x41;
		if (remote_pathsets_decode(b.data, b.len, &q, &e) == 0)
			remote_pathsets_free(&q);
		b.data[i] ^= 0x41;
	}
	b.data[b.len - 1] ^= 1; /* inside the frame: the checksum or a digest catches it */
	assert_int_equal(remote_pathsets_decode(b.data, b.len, &q, &e), -1);
	buf_free(&b);
	remote_pathsets_free(&p);
}

static void make_entry(struct remote_entry *en, const char *result)
{
	memset(en, 0, sizeof *en);
	digest_bytes("w", 1, &en->weak);
	digest_bytes("p", 1, &en->pathset);
	digest_bytes("s", 1, &en->strong);
	en->result = xstrdup(result);
	en->result_len = strlen(result);
}

static void signatures_bind_keys_and_result(void **state)
{
	char *key = scratch_path("k");
	char hex[65];
	struct error e = {0};
	/* Without the plugin: a clear error, and nothing verifies. */
	sign_set_plugin_dir("/nonexistent");
	assert_int_equal(sign_keygen(key, hex, &e), -1);
	assert_non_null(strstr(e.msg, "libcachet-ed25519.so"));
	sign_set_plugin_dir(CACHET_TEST_PLUGIN_DIR);
	assert_int_equal(sign_keygen(key, hex, &e), 0);
	struct stat st;
	assert_int_equal(stat(key, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(sign_keygen(key, hex, &e), -1); /* never overwrites */
	struct remote_signer *signer = sign_load(key, &e);
	assert_non_null(signer);

	char *pub = xasprintf("%s.pub", key);
	char *from_file[] = {pub, NULL};
	char *inline_key[] = {hex, NULL};
	struct trusted_keys tf, ti;
	assert_int_equal(trusted_keys_load(from_file, &tf, &e), 0);
	assert_int_equal(trusted_keys_load(inline_key, &ti, &e), 0);

	struct remote_entry en;
	make_entry(&en, "the result");
	assert_false(trusted_keys_verify(&tf, &en)); /* unsigned */
	assert_int_equal(sign_entry(signer, &en, &e), 0);
	assert_true(trusted_keys_verify(&tf, &en));
	assert_true(trusted_keys_verify(&ti, &en));

	/* Through the encoding and back. */
	struct buf b;
	buf_init(&b);
	remote_entry_encode(&en, &b);
	struct remote_entry back;
	assert_int_equal(remote_entry_decode(b.data, b.len, &back, &e), 0);
	assert_true(trusted_keys_verify(&tf, &back));
	/* Replayed under another strong key, or with another result: refused. */
	back.strong.b[0] ^= 1;
	assert_false(trusted_keys_verify(&tf, &back));
	back.strong.b[0] ^= 1;
	((char *)back.result)[0] ^= 1;
	assert_false(trusted_keys_verify(&tf, &back));
	remote_entry_free(&back);

	/* A key nobody trusts signs in vain. */
	char *other = scratch_path("other");
	char hex2[65];
	assert_int_equal(sign_keygen(other, hex2, &e), 0);
	struct remote_signer *stranger = sign_load(other, &e);
	struct remote_entry en2;
	make_entry(&en2, "the result");
	assert_int_equal(sign_entry(stranger, &en2, &e), 0);
	assert_false(trusted_keys_verify(&tf, &en2));

	/* Path sets: signed for their weak key only. */
	struct remote_pathset set = {.body = "ps", .len = 2};
	digest_bytes("ps", 2, &set.digest);
	assert_false(trusted_keys_verify_pathset(&tf, &en.weak, &set));
	assert_int_equal(sign_pathset(signer, &en.weak, &set, &e), 0);
	assert_true(trusted_keys_verify_pathset(&tf, &en.weak, &set));
	assert_false(trusted_keys_verify_pathset(&tf, &en.strong, &set));
	struct remote_pathsets list = {0};
	struct remote_pathset unsigned_set = set;
	unsigned_set.is_signed = 0;
	assert_int_equal(remote_pathsets_add(&list, &unsigned_set), 1);
	assert_int_equal(remote_pathsets_add(&list, &set), 1); /* the signature is added */
	assert_int_equal(remote_pathsets_add(&list, &unsigned_set), 0);
	struct buf lb;
	buf_init(&lb);
	remote_pathsets_encode(&list, &lb);
	struct remote_pathsets back_list;
	assert_int_equal(remote_pathsets_decode(lb.data, lb.len, &back_list, &e), 0);
	assert_true(trusted_keys_verify_pathset(&tf, &en.weak, &back_list.sets[0]));
	remote_pathsets_free(&back_list);
	remote_pathsets_free(&list);
	buf_free(&lb);

	/* Truncations decode as errors. */
	for (size_t n = 0; n < b.len; n++)
		assert_int_equal(remote_entry_decode(b.data, n, &back, &e), -1);
	buf_free(&b);
	remote_entry_free(&en);
	remote_entry_free(&en2);
	trusted_keys_free(&tf);
	trusted_keys_free(&ti);
	sign_free(signer);
	sign_free(stranger);
	free(pub);
	free(key);
	free(other);
}

/* ---- restoring beneath the output roots ---- */

static struct store *store_with(const char *content, struct blob_ref *ref)
{
	struct store *s = open_cache();
	struct error e = {0};
	assert_int_equal(store_put_blob_mem(s, content, strlen(content), ref, &e), 0);
	return s;
}

static int restore_one(struct store *s, const struct blob_ref *ref, const char *path,
                       const char *root, struct error *e)
{
	struct result r;
	result_init(&r);
	struct output *o = result_add_output(&r, OUT_FILE, path);
	o->mode = 04755;
	o->blob = *ref;
	const char *roots[] = {root, NULL};
	int rc = result_restore_beneath(&r, s, roots, e);
	result_free(&r);
	return rc;
}

static void remote_outputs_stay_beneath_their_roots(void **state)
{
	struct blob_ref ref;
	struct store *s = store_with("payload", &ref);
	char *root = scratch_path("work");
	char *outside = scratch_path("outside");
	mkdir(root, 0755);
	mkdir(outside, 0755);
	struct error e = {0};

	char *good = xasprintf("%s/sub/dir/out.o", root);
	assert_int_equal(restore_one(s, &ref, good, root, &e), 0);
	struct stat st;
	assert_int_equal(stat(good, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755); /* no setuid from a remote */

	const char *bad[] = {"%s/../outside/x", "%s/./x", "%s//x", NULL};
	for (const char *const *f = bad; *f; f++) {
		char *p = xasprintf(*f, root);
		assert_int_equal(restore_one(s, &ref, p, root, &e), -1);
		assert_int_equal(e.code, EPERM);
		free(p);
	}
	char *elsewhere = xasprintf("%s/x", outside);
	assert_int_equal(restore_one(s, &ref, elsewhere, root, &e), -1);
	assert_int_equal(e.code, EPERM);
	assert_int_equal(restore_one(s, &ref, root, root, &e), -1);

	/* A symlink in the tree that leads out is never followed. */
	char *link = xasprintf("%s/escape", root);
	assert_int_equal(symlink(outside, link), 0);
	char *through = xasprintf("%s/escape/x", root);
	assert_int_equal(restore_one(s, &ref, through, root, &e), -1);
	assert_int_equal(e.code, EPERM);
	char *leaked = xasprintf("%s/x", outside);
	assert_int_equal(access(leaked, F_OK), -1);

	/* The entry's own symlinks may not lead out either, nor have outputs
	 * beneath them. */
	struct result r;
	result_init(&r);
	char *lp = xasprintf("%s/mylink", root);
	struct output *o = result_add_output(&r, OUT_SYMLINK, lp);
	o->target = xstrdup("../outside");
	const char *roots[] = {root, NULL};
	assert_int_equal(result_restore_beneath(&r, s, roots, &e), -1);
	assert_int_equal(e.code, EPERM);
	free(o->target);
	o->target = xstrdup("sub/dir/out.o");
	assert_int_equal(result_restore_beneath(&r, s, roots, &e), 0);
	char *below = xasprintf("%s/mylink/y", root);
	o = result_add_output(&r, OUT_FILE, below);
	o->blob = ref;
	assert_int_equal(result_restore_beneath(&r, s, roots, &e), -1);
	result_free(&r);

	free(good);
	free(elsewhere);
	free(link);
	free(through);
	free(leaked);
	free(lp);
	free(below);
	free(root);
	free(outside);
	store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(credentials_leave_the_url_and_never_show),
	    cmocka_unit_test(redis_urls_take_password_db_and_socket),
	    cmocka_unit_test(bad_items_are_errors_without_secrets),
	    cmocka_unit_test(redaction_hides_userinfo_and_tokens),
	    cmocka_unit_test(pathset_lists_round_trip_dedupe_and_cap),
	    cmocka_unit_test_setup_teardown(signatures_bind_keys_and_result, scratch_setup,
	                                    scratch_teardown),
	    cmocka_unit_test_setup_teardown(remote_outputs_stay_beneath_their_roots, scratch_setup,
	                                    scratch_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
