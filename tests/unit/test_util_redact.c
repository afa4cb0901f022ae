/* Redaction of what cachet shows of a command line (log, explain, the
 * report): secret-named variables and options, mysql's -pPASSWORD, curl's
 * -u user:password, passwords in URLs, secret headers and bearer tokens;
 * and what must stay as it is (the working directory's PWD, -p of mkdir,
 * ordinary URLs). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "cachet/redact.h"

static void shown_as(const char *want, char *const *argv, size_t i)
{
	char *got = redact_argv(argv, i);
	if (strcmp(got, want) != 0)
		fail_msg("argv[%zu] '%s' shown as '%s', expected '%s'", i, argv[i], got, want);
	free(got);
}

static void names_with_pass_secret_token_key_auth_are_hidden(void **state)
{
	(void)state;
	char *argv[] = {"env",         "DB_PASS=hunter2", "MYSQL_PWD_PASSWORD=x", "GITHUB_TOKEN=t",
	                "-DAPI_KEY=k", "--auth-file=/f",  "PWD=/home/u",          "CFLAGS=-O2",
	                NULL};
	shown_as("DB_PASS=***", argv, 1);
	shown_as("MYSQL_PWD_PASSWORD=***", argv, 2);
	shown_as("GITHUB_TOKEN=***", argv, 3);
	shown_as("-DAPI_KEY=***", argv, 4);
	shown_as("--auth-file=***", argv, 5);
	shown_as("PWD=/home/u", argv, 6);
	shown_as("CFLAGS=-O2", argv, 7);
	char *opt[] = {"tool", "--password", "hunter2", "--client-secret", "s", NULL};
	shown_as("***", opt, 2);
	shown_as("***", opt, 4);
}

static void mysql_dash_p_is_hidden_and_mkdir_dash_p_is_not(void **state)
{
	(void)state;
	char *mysql[] = {"/usr/bin/mysql", "-uroot", "-phunter2", "db", NULL};
	shown_as("-p***", mysql, 2);
	char *dump[] = {"mariadb-dump", "-psecret", NULL};
	shown_as("-p***", dump, 1);
	char *mkdir[] = {"mkdir", "-pv", "out", NULL};
	shown_as("-pv", mkdir, 1);
	char *gcc[] = {"gcc", "-pthread", "a.c", NULL};
	shown_as("-pthread", gcc, 1);
}

static void user_password_pairs_and_urls_are_hidden(void **state)
{
	(void)state;
	char *curl[] = {"curl",
	                "-u",
	                "ci:hunter2",
	                "-uci:pw2",
	                "https://ci:pw3@cache.example/x",
	                "https://cache.example/a:b",
	                "git@github.com:o/r.git",
	                NULL};
	shown_as("ci:***", curl, 2);
	shown_as("-uci:***", curl, 3);
	shown_as("https://ci:***@cache.example/x", curl, 4);
	shown_as("https://cache.example/a:b", curl, 5);
	shown_as("git@github.com:o/r.git", curl, 6);
	char *url[] = {"git", "clone", "--mirror=https://u:p@h/r", NULL};
	shown_as("--mirror=https://u:***@h/r", url, 2);
}

static void secret_headers_and_bearer_tokens_are_hidden(void **state)
{
	(void)state;
	char *curl[] = {"curl",
	                "-H",
	                "Authorization: Bearer abc.def",
	                "-H",
	                "X-Auth-Token: t",
	                "-H",
	                "Accept: text/html",
	                "--oauth2-bearer",
	                "tok",
	                "Bearer xyz",
	                NULL};
	shown_as("Authorization: ***", curl, 2);
	shown_as("X-Auth-Token: ***", curl, 4);
	shown_as("Accept: text/html", curl, 6);
	shown_as("***", curl, 8);
	shown_as("Bearer ***", curl, 9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(names_with_pass_secret_token_key_auth_are_hidden),
	    cmocka_unit_test(mysql_dash_p_is_hidden_and_mkdir_dash_p_is_not),
	    cmocka_unit_test(user_password_pairs_and_urls_are_hidden),
	    cmocka_unit_test(secret_headers_and_bearer_tokens_are_hidden),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
