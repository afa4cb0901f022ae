/* The upload half of the remote tier (remote_upload.h), whose decisions
 * only the system tests with nginx and Redis reached while they lived in
 * the command-line layer: what a stored run's upload holds, when it is
 * spooled, what a job puts on a remote (signed when a key is configured),
 * and which jobs a drain removes from the spool and which stay. The send
 * itself is the system tests' (t_remote_http, t_remote_redis): here a
 * server is either one whose breaker is open or a loopback port where
 * none listens. */
#include "test_store_fixture.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "cachet/pathset.h"
#include "cachet/record.h"
#include "cachet/remote.h"
#include "cachet/remote_upload.h"
#include "cachet/result.h"

/* A stored run of a step that read input.c (rec, freed by record_free):
 * its path set, the values found now (*strong their key), and a result
 * whose blobs are in s. */
static void stored_run(struct store *s, const struct digest *weak, struct record *rec,
                       struct digest *strong)
{
	memset(rec, 0, sizeof *rec);
	result_init(&rec->result);
	buf_init(&rec->values);
	buf_init(&rec->listings);
	char *input = scratch_path("input.c");
	write_file(input, "int x;\n", 7);
	struct pathset *ps = &rec->ps;
	pathset_init(ps);
	pathset_add(ps, OBS_READ, 0, input, NULL);
	pathset_canonicalise(ps, NULL);
	buf_init(&rec->ps_body);
	pathset_encode(ps, &rec->ps_body);
	digest_bytes(rec->ps_body.data, rec->ps_body.len, &rec->ps_digest);
	pathset_strong_key(ps, NULL, weak, &rec->ps_digest, NULL, &rec->values, strong);

	struct result *res = &rec->result;
	struct error e = {0, ""};
	char *text = text_bytes(8192);
	char *a = scratch_path("a.o"), *b = scratch_path("b.o"), *c = scratch_path("c.o"),
	     *empty = scratch_path("empty");
	/* a.o and b.o hold the same bytes: one blob, kept compressed here. */
	assert_int_equal(
	    store_put_blob_mem(s, text, 8192, &result_add_output(res, OUT_FILE, a)->blob, &e), 0);
	assert_int_equal(
	    store_put_blob_mem(s, text, 8192, &result_add_output(res, OUT_FILE, b)->blob, &e), 0);
	assert_int_equal(
	    store_put_blob_mem(s, "random", 6, &result_add_output(res, OUT_FILE, c)->blob, &e), 0);
	assert_int_equal(
	    store_put_blob_mem(s, "", 0, &result_add_output(res, OUT_FILE, empty)->blob, &e), 0);
	assert_int_equal(store_put_blob_mem(s, "compiled\n", 9, &res->out, &e), 0);
	assert_int_equal(store_put_blob_mem(s, "", 0, &res->err, &e), 0);
	res->exit_code = 0;
	res->duration_ms = 9;
	res->host = xstrdup("here");
	res->cachet_version = xstrdup("test");
	res->values = xmalloc(rec->values.len + 1);
	memcpy(res->values, rec->values.data, rec->values.len);
	res->values_len = rec->values.len;
	res->listings = xstrdup("listing");
	res->listings_len = 7;
	res->pinned = xstrdup("output /src/a.o contains /src");
	free(text);
	free(a);
	free(b);
	free(c);
	free(empty);
	free(input);
}

/* ---- packaging ---- */

/* A stored run of step w and its upload. */
struct packaged {
	struct store *store;
	struct digest weak, strong;
	struct record rec;
	struct spool_job job;
};

static void package(struct packaged *p, unsigned w)
{
	p->store = open_cache();
	p->weak = key_digest("weak", w);
	stored_run(p->store, &p->weak, &p->rec, &p->strong);
	spool_job_init(&p->job);
	remote_upload_package(&p->weak, &p->rec, &p->job);
}

static void packaged_free(struct packaged *p)
{
	spool_job_free(&p->job);
	record_free(&p->rec);
	store_close(p->store);
}

/* The upload holds the path set and key as stored, each blob once in its
 * raw form, and nothing for local eyes only. */
static void upload_holds_blobs_once_and_a_portable_result(void **state)
{
	(void)state;
	struct packaged p;
	package(&p, 1);
	assert_int_not_equal(p.rec.result.outputs[0].blob.form, BLOB_RAW);
	assert_true(digest_equal(&p.job.weak, &p.weak));
	assert_true(digest_equal(&p.job.pathset, &p.rec.ps_digest));
	assert_true(digest_equal(&p.job.strong, &p.strong));
	assert_int_equal(p.job.pathset_body.len, p.rec.ps_body.len);
	assert_memory_equal(p.job.pathset_body.data, p.rec.ps_body.data, p.rec.ps_body.len);
	/* text (twice), "random", stdout; the empty ones need no upload. */
	assert_int_equal(p.job.nblobs, 3);
	uint64_t total = 0;
	for (size_t i = 0; i < p.job.nblobs; i++) {
		total += p.job.sizes[i];
		for (size_t k = 0; k < i; k++)
			assert_false(digest_equal(&p.job.blobs[i], &p.job.blobs[k]));
	}
	assert_int_equal(total, 8192 + 6 + 9);

	struct result got;
	struct error e = {0, ""};
	assert_int_equal(result_decode(p.job.result_body.data, p.job.result_body.len, &got, &e), 0);
	assert_int_equal(got.noutputs, 4);
	for (size_t i = 0; i < got.noutputs; i++) {
		assert_int_equal(got.outputs[i].blob.form, BLOB_RAW);
		assert_string_equal(got.outputs[i].path, p.rec.result.outputs[i].path);
		assert_true(digest_equal(&got.outputs[i].blob.digest,
		                         &p.rec.result.outputs[i].blob.digest));
	}
	assert_true(digest_equal(&got.out.digest, &p.rec.result.out.digest));
	assert_int_equal(got.out.form, BLOB_RAW);
	assert_int_equal(got.duration_ms, 9);
	assert_string_equal(got.host, "here");
	assert_int_equal(got.values_len, 0);
	assert_int_equal(got.listings_len, 0);
	assert_null(got.pinned);
	result_free(&got);
	packaged_free(&p);
}

/* ---- what a job puts on a remote ---- */

/* With a key configured, the entry and the path set are signed under the
 * keys they go up with; without one, neither is. */
static void job_records_signed_when_a_key_is_configured(void **state)
{
	(void)state;
	struct packaged p;
	package(&p, 2);

	sign_set_plugin_dir(CACHET_TEST_PLUGIN_DIR);
	char *key = scratch_path("signing.pem");
	char hex[65];
	struct error e = {0, ""};
	assert_int_equal(sign_keygen(key, hex, &e), 0);
	struct remote_signer *signer = sign_load(key, &e);
	assert_non_null(signer);
	char *items[] = {hex, NULL};
	struct trusted_keys trusted;
	assert_int_equal(trusted_keys_load(items, &trusted, &e), 0);

	struct buf body;
	buf_init(&body);
	assert_int_equal(remote_upload_entry(&p.job, signer, &body, &e), 0);
	struct remote_entry en;
	assert_int_equal(remote_entry_decode(body.data, body.len, &en, &e), 0);
	assert_true(en.is_signed);
	assert_true(digest_equal(&en.weak, &p.weak));
	assert_true(digest_equal(&en.pathset, &p.rec.ps_digest));
	assert_true(digest_equal(&en.strong, &p.strong));
	assert_int_equal(en.result_len, p.job.result_body.len);
	assert_memory_equal(en.result, p.job.result_body.data, en.result_len);
	assert_int_equal(trusted_keys_verify(&trusted, &en), 1);
	remote_entry_free(&en);

	struct remote_pathset set;
	assert_int_equal(remote_upload_pathset(&p.job, signer, &set, &e), 0);
	assert_true(set.is_signed);
	assert_true(digest_equal(&set.digest, &p.rec.ps_digest));
	assert_int_equal(trusted_keys_verify_pathset(&trusted, &p.weak, &set), 1);
	/* Bound to its weak key: not good under another step's. */
	struct digest other = key_digest("weak", 3);
	assert_int_equal(trusted_keys_verify_pathset(&trusted, &other, &set), 0);

	buf_free(&body);
	buf_init(&body);
	assert_int_equal(remote_upload_entry(&p.job, NULL, &body, &e), 0);
	assert_int_equal(remote_entry_decode(body.data, body.len, &en, &e), 0);
	assert_false(en.is_signed);
	assert_int_equal(trusted_keys_verify(&trusted, &en), 0);
	remote_entry_free(&en);
	assert_int_equal(remote_upload_pathset(&p.job, NULL, &set, &e), 0);
	assert_false(set.is_signed);

	buf_free(&body);
	trusted_keys_free(&trusted);
	sign_free(signer);
	free(key);
	packaged_free(&p);
}

/* ---- the spool and the drain ---- */

/* A loopback port where nothing listens: a send there fails at once. */
static int closed_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	socklen_t len = sizeof sa;
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	close(fd);
	return ntohs(sa.sin_port);
}

/* One remote (its attributes after the URL) and the store's remote state. */
struct remote_fixture {
	struct store *store;
	struct remote_config config;
	struct remote_client *client;
	char *state_dir;
	struct remote_upload up;
};

static void remote_open(struct remote_fixture *f, const char *attributes)
{
	f->store = open_cache();
	char *item = xasprintf("http://127.0.0.1:%d %s", closed_port(), attributes);
	char *items[] = {item, NULL};
	struct error e = {0, ""};
	assert_int_equal(remote_config_parse(items, &f->config, &e), 0);
	free(item);
	f->state_dir = xasprintf("%s/remote", store_dir(f->store));
	f->client = remote_client_new(&f->config, f->state_dir, CACHET_TEST_PLUGIN_DIR);
	f->up = (struct remote_upload){
	    .store = f->store, .client = f->client, .state_dir = f->state_dir};
}

static void remote_close(struct remote_fixture *f)
{
	remote_client_free(f->client);
	remote_config_free(&f->config);
	free(f->state_dir);
	store_close(f->store);
}

static enum remote_spooled spool_run(struct remote_fixture *f, unsigned w)
{
	struct digest weak = key_digest("weak", w), strong;
	struct record rec;
	stored_run(f->store, &weak, &rec, &strong);
	struct error e = {0, ""};
	enum remote_spooled spooled = remote_upload_spool(&f->up, &weak, &rec, &e);
	record_free(&rec);
	return spooled;
}

/* The path of the one job in the spool (malloc'd). */
static char *only_job(struct remote_fixture *f)
{
	char **jobs;
	size_t n;
	struct error e = {0, ""};
	assert_int_equal(spool_list(f->state_dir, &jobs, &n, &e), 0);
	assert_int_equal(n, 1);
	char *path = xstrdup(jobs[0]);
	spool_list_free(jobs, n);
	return path;
}

/* A job the server could not take stays for the next drainer, which does
 * not ask a server while it rests; a job spooled meanwhile starts none. */
static void failed_send_stays_in_the_spool(void **state)
{
	(void)state;
	struct remote_fixture f;
	remote_open(&f, "timeout=2s");
	assert_int_equal(spool_run(&f, 1), REMOTE_SPOOLED_QUEUED);
	assert_int_equal(remote_spool_size(f.state_dir), 1);
	assert_int_equal(counter_value(f.store, "remote_queued"), 1);

	struct remote_drain_report rep;
	struct error e = {0, ""};
	assert_int_equal(remote_upload_drain(&f.up, NULL, 1, &rep, &e), 0);
	assert_int_equal(rep.uploaded, 0);
	assert_int_equal(rep.dropped, 0);
	assert_int_equal(rep.left, 1);
	assert_int_equal(counter_value(f.store, "remote_upload_errors"), 1);
	assert_true(remote_tier_is_resting(f.client, 0));

	assert_int_equal(spool_run(&f, 2), REMOTE_SPOOLED_WAITING);
	assert_int_equal(remote_upload_drain(&f.up, NULL, 1, &rep, &e), 0);
	assert_int_equal(rep.left, 2);
	assert_int_equal(counter_value(f.store, "remote_upload_errors"), 1);
	remote_close(&f);
}

/* Read-only remotes take no upload: nothing is spooled. */
static void read_only_remotes_spool_nothing(void **state)
{
	(void)state;
	struct remote_fixture f;
	remote_open(&f, "read-only");
	assert_int_equal(spool_run(&f, 1), REMOTE_SPOOLED_NO_WRITABLE);
	assert_int_equal(remote_spool_size(f.state_dir), 0);
	assert_int_equal(counter_value(f.store, "remote_queued"), 0);
	remote_close(&f);
}

/* While every writable server rests, the spool stops growing at
 * REMOTE_SPOOL_MAX_JOBS: a server down for days does not fill the disk. */
static void resting_servers_stop_a_full_spool(void **state)
{
	(void)state;
	struct remote_fixture f;
	remote_open(&f, "");
	breaker_trip(f.state_dir, f.config.specs[0].id, 60000, "down for the test");
	assert_int_equal(spool_run(&f, 1), REMOTE_SPOOLED_WAITING);
	char *job = only_job(&f);
	/* The same job under many names: a real spool, filled fast. */
	for (unsigned i = 1; i < REMOTE_SPOOL_MAX_JOBS; i++) {
		char *name = xasprintf("%s/spool/0000000000000-0-%u.job", f.state_dir, i);
		assert_int_equal(link(job, name), 0);
		free(name);
	}
	free(job);
	assert_int_equal(spool_run(&f, 2), REMOTE_SPOOLED_FULL);
	assert_int_equal(remote_spool_size(f.state_dir), REMOTE_SPOOL_MAX_JOBS);
	assert_int_equal(counter_value(f.store, "remote_spool_full"), 1);
	remote_close(&f);
}

/* A job whose blob is larger than every writable server takes is done
 * with: it leaves the spool without a request. */
static void job_no_server_can_take_leaves_the_spool(void **state)
{
	(void)state;
	struct remote_fixture f;
	remote_open(&f, "max-size=1K");
	assert_int_equal(spool_run(&f, 1), REMOTE_SPOOLED_QUEUED);
	struct remote_drain_report rep;
	struct error e = {0, ""};
	assert_int_equal(remote_upload_drain(&f.up, NULL, 1, &rep, &e), 0);
	assert_int_equal(rep.uploaded, 1);
	assert_int_equal(rep.left, 0);
	assert_int_equal(remote_spool_size(f.state_dir), 0);
	assert_int_equal(counter_value(f.store, "remote_too_large"), 1);
	assert_int_equal(counter_value(f.store, "remote_upload_errors"), 0);
	assert_false(remote_tier_is_resting(f.client, 0));
	remote_close(&f);
}

/* A job file that does not read back would never go: dropped, before any
 * server is asked. */
static void corrupt_job_dropped(void **state)
{
	(void)state;
	struct remote_fixture f;
	remote_open(&f, "");
	assert_int_equal(spool_run(&f, 1), REMOTE_SPOOLED_QUEUED);
	char *job = only_job(&f);
	assert_int_equal(truncate(job, 20), 0);
	free(job);
	struct remote_drain_report rep;
	struct error e = {0, ""};
	assert_int_equal(remote_upload_drain(&f.up, NULL, 1, &rep, &e), 0);
	assert_int_equal(rep.dropped, 1);
	assert_int_equal(rep.left, 0);
	assert_false(remote_tier_is_resting(f.client, 0));
	remote_close(&f);
}

/* Configured to sign and cannot: nothing goes up unsigned, the jobs wait. */
static void unloadable_signing_key_keeps_the_jobs(void **state)
{
	(void)state;
	struct remote_fixture f;
	remote_open(&f, "");
	assert_int_equal(spool_run(&f, 1), REMOTE_SPOOLED_QUEUED);
	sign_set_plugin_dir(CACHET_TEST_PLUGIN_DIR);
	char *key = scratch_path("no-such-key.pem");
	struct remote_drain_report rep;
	struct error e = {0, ""};
	assert_int_equal(remote_upload_drain(&f.up, key, 1, &rep, &e), -1);
	assert_true(e.msg[0] != '\0');
	assert_int_equal(rep.left, 1);
	assert_int_equal(rep.uploaded + rep.dropped, 0);
	assert_false(remote_tier_is_resting(f.client, 0));
	free(key);
	remote_close(&f);
}

#define T(name) cmocka_unit_test_setup_teardown(name, scratch_setup, scratch_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(upload_holds_blobs_once_and_a_portable_result),
	    T(job_records_signed_when_a_key_is_configured),
	    T(failed_send_stays_in_the_spool),
	    T(read_only_remotes_spool_nothing),
	    T(resting_servers_stop_a_full_spool),
	    T(job_no_server_can_take_leaves_the_spool),
	    T(corrupt_job_dropped),
	    T(unloadable_signing_key_keeps_the_jobs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
