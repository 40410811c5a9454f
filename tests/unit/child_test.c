/* SPDX-License-Identifier: MIT */
/* lib/child.c's bounds, on real children (wall time, CPU time, file
 * size), and lib/regbound.c's measure of a pattern. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "regbound.h"
#include "unit.h"

static int run(char *const *argv, const struct cpa_limits *lim, int *status,
	       bool *killed, int64_t *ms)
{
	struct cpa_spawn s = { .path = argv[0], .argv = argv,
			       .fd = { -1, -1, -1 }, .limits = lim };
	int64_t t0 = cpa_mono_ms();
	pid_t pid = cpa_spawn(&s);

	if (pid < 0)
		return -1;
	if (cpa_wait_until(pid, lim && lim->wall_ms
			   ? t0 + (int64_t)lim->wall_ms : -1, status, killed))
		return -1;
	*ms = cpa_mono_ms() - t0;
	return 0;
}

static void test_wall(void)
{
	char *argv[] = { "/bin/sleep", "30", NULL };
	struct cpa_limits lim = { .wall_ms = 300 };
	int64_t ms;
	bool killed;
	int st;

	CHECK(run(argv, &lim, &st, &killed, &ms) == 0);
	CHECK(killed);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	CHECK(ms >= 300 && ms < 5000);
}

static void test_cpu(void)
{
	char *argv[] = { "/bin/sh", "-c", "while :; do :; done", NULL };
	struct cpa_limits lim = { .cpu_s = 1, .wall_ms = 30000 };
	int64_t ms;
	bool killed;
	int st;

	CHECK(run(argv, &lim, &st, &killed, &ms) == 0);
	CHECK(!killed);
	CHECK(cpa_limit_of(st, &lim, NULL) == CPA_LIMIT_CPU);
	CHECK_STR(cpa_limit_name(CPA_LIMIT_CPU), "CPU time");
}

static void test_fsize(void)
{
	char path[] = "/tmp/cpa-child-test-XXXXXX", of[64];
	int fd = mkstemp(path);
	char *argv[] = { "/bin/dd", "if=/dev/zero", of, "bs=65536",
			 "count=64", NULL };
	struct cpa_limits lim = { .fsize = 1u << 20, .wall_ms = 30000 };
	int64_t ms;
	bool killed;
	int st;

	CHECK(fd >= 0);
	close(fd);
	snprintf(of, sizeof(of), "of=%s", path);
	CHECK(run(argv, &lim, &st, &killed, &ms) == 0);
	CHECK(cpa_limit_of(st, &lim, NULL) == CPA_LIMIT_FSIZE);
	unlink(path);
}

static void test_memory_words(void)
{
	struct cpa_limits lim = { .mem = 64u << 20 }, none = { 0 };
	char *argv[] = { "/bin/true", NULL };
	int64_t ms;
	bool killed;
	int st;

	/* a bound that is not reached changes nothing */
	CHECK(run(argv, &lim, &st, &killed, &ms) == 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(cpa_limit_of(st, &lim, NULL) == CPA_LIMIT_NONE);
	CHECK(cpa_limit_of(1 << 8, &lim, "cpa-query: out of memory (allocating "
			   "79 bytes)") == CPA_LIMIT_MEM);
	CHECK(cpa_limit_of(1 << 8, &none, "cpa-query: out of memory") ==
	      CPA_LIMIT_NONE);
	CHECK(cpa_limit_of(0, &lim, "out of memory") == CPA_LIMIT_NONE);
}

static void test_regex(void)
{
	char err[128];
	regex_t re;

	CHECK(cpa_regex_cost("abc") == 3);
	CHECK(cpa_regex_cost("(ab|cd)") == 5);
	CHECK(cpa_regex_cost("a{3}") == 3);
	CHECK(cpa_regex_cost("[a-z]{2,5}") == 5);
	CHECK(cpa_regex_cost("((a{1,200}){1,200}){1,200}") >
	      CPA_REGEX_MAX_NODES);
	CHECK(cpa_regex_cost("(a)\\1") == -1);
	CHECK(cpa_regcomp(&re, "level_[ab]+;hot_leaf$", REG_EXTENDED |
			  REG_NOSUB, err, sizeof(err)) == 0);
	CHECK(regexec(&re, "level_b;hot_leaf", 0, NULL, 0) == 0);
	regfree(&re);
	CHECK(cpa_regcomp(&re, "((a{1,200}){1,200}){1,200}", REG_EXTENDED,
			  err, sizeof(err)) == -1);
	CHECK(strstr(err, "too complex") != NULL);
	CHECK(cpa_regcomp(&re, "(x)\\1", REG_EXTENDED, err, sizeof(err)) == -1);
	CHECK(strstr(err, "backreferences") != NULL);
	CHECK(cpa_regcomp(&re, "a(", REG_EXTENDED, err, sizeof(err)) == -1);
	{
		char *long_re = malloc(CPA_REGEX_MAX_LEN + 2);

		memset(long_re, 'a', CPA_REGEX_MAX_LEN + 1);
		long_re[CPA_REGEX_MAX_LEN + 1] = 0;
		CHECK(cpa_regcomp(&re, long_re, REG_EXTENDED, err,
				  sizeof(err)) == -1);
		CHECK(strstr(err, "longer than") != NULL);
		free(long_re);
	}
}

int main(void)
{
	test_regex();
	test_memory_words();
	test_wall();
	test_fsize();
	test_cpu();
	return unit_done("child_test");
}
