/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "options.h"
#include "timeparse.h"


const char *argp_program_version = PACKAGE_NAME " " PACKAGE_VERSION;

static bool check_only;

static const struct argp_option check_options[] = {
	{ "check", 0x5e00, 0, 0,
	  "Check the options and exit: 0 when they are good, 2 with the "
	  "error", -1 },
	{ 0 }
};

static error_t parse_check(int key, char *arg, struct argp_state *state)
{
	(void)arg;
	(void)state;
	if (key != 0x5e00)
		return ARGP_ERR_UNKNOWN;
	check_only = true;
	return 0;
}

const struct argp cpa_check_argp = {
	.options = check_options, .parser = parse_check,
};

void cpa_options_checked(void)
{
	if (check_only)
		exit(0);
}

void cpa_options_init(const char *argv0)
{
	cpa_set_progname(argv0);
	argp_err_exit_status = CPA_EXIT_USAGE;
}

static int parse_u64(const char *s, uint64_t *out)
{
	if (!s || !isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

uint64_t cpa_opt_uint(const char *opt, const char *arg, uint64_t min,
		      uint64_t max)
{
	uint64_t v;
	if (parse_u64(arg, &v) < 0 || v < min || v > max)
		cpa_die_usage("invalid %s '%s': expected an integer from %llu "
			      "to %llu", opt, arg, (unsigned long long)min,
			      (unsigned long long)max);
	return v;
}

uint64_t cpa_opt_duration_ns(const char *opt, const char *arg)
{
	uint64_t ns;
	if (cpa_parse_duration_ns(arg, &ns) < 0)
		cpa_die_usage("invalid %s '%s': expected a duration such as "
			      "10s, 500ms, 5m, 2h or 7d", opt, arg);
	return ns;
}

uint64_t cpa_opt_time_ns(const char *opt, const char *arg, uint64_t now_ns)
{
	uint64_t t;
	if (cpa_parse_time(arg, now_ns, &t) < 0)
		cpa_die_usage("invalid %s '%s': expected HH:MM[:SS], "
			      "YYYY-MM-DD[ HH:MM[:SS]], ISO 8601, @EPOCH, now "
			      "or -10m", opt, arg);
	return t;
}

uint64_t cpa_opt_size(const char *opt, const char *arg)
{
	uint64_t n;
	if (cpa_parse_size(arg, &n) < 0)
		cpa_die_usage("invalid %s '%s': expected a size such as 4096, "
			      "64K, 512M or 2G", opt, arg);
	return n;
}

size_t cpa_opt_uint_list(const char *opt, const char *arg, uint64_t min,
			 uint64_t max, uint64_t **vals, size_t n)
{
	char *copy = cpa_strdup(arg), *save = NULL;
	int any = 0;
	for (char *tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;
		if (parse_u64(tok, &v) < 0 || v < min || v > max)
			cpa_die_usage("invalid %s '%s': '%s' is not an integer "
				      "from %llu to %llu", opt, arg, tok,
				      (unsigned long long)min,
				      (unsigned long long)max);
		*vals = cpa_realloc(*vals, (n + 1) * sizeof(**vals));
		(*vals)[n++] = v;
		any = 1;
	}
	free(copy);
	if (!any)
		cpa_die_usage("invalid %s '%s': expected a comma-separated "
			      "list of integers", opt, arg);
	return n;
}
