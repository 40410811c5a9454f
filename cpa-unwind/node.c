// SPDX-License-Identifier: MIT
/*
 * Node and other V8 programs (node.h): V8 runs interpreted JavaScript in
 * one builtin, InterpreterEntryTrampoline, so every interpreted caller
 * shows as Builtins_InterpreterEntryTrampoline unless the process runs
 * with --interpreted-frames-native-stack, which gives each interpreted
 * function a copy of the trampoline that --perf-basic-prof names. A
 * process whose samples reach that builtin, or a node whose perf map was
 * read (its own symbols may still be loading), is looked at once: when
 * neither its command line nor NODE_OPTIONS has the flag, it is named
 * on stderr once and counted for --stats.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "node.h"
#include "unwind.h"

#define CMDLINE_MAX 65536
#define ENVIRON_MAX (1u << 20)
#define FLAG "interpreted-frames-native-stack"

/* Whether an option of len bytes at s is the flag: --flag or
 * --flag=true, with V8's '_' for '-' allowed; --no-flag is not. */
static bool is_flag(const char *s, size_t len)
{
	size_t n = sizeof(FLAG) - 1;
	if (len < 2 + n || s[0] != '-' || s[1] != '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[2 + i] == '_' ? '-' : s[2 + i];
		if (c != FLAG[i])
			return false;
	}
	return len == 2 + n || (len == 2 + n + 5 && !memcmp(s + 2 + n, "=true", 5));
}

bool node_has_native_stack(const char *cmdline, size_t clen,
			   const char *options, size_t olen)
{
	/* every argument: an option after the script is the script's,
	 * but telling them apart needs node's whole option table */
	for (size_t off = 0; off < clen;) {
		size_t n = strnlen(cmdline + off, clen - off);
		if (is_flag(cmdline + off, n))
			return true;
		off += n + 1;
	}
	for (size_t off = 0; off < olen;) {
		size_t n = strcspn(options + off, " \t");
		if (n > olen - off)
			n = olen - off;
		if (is_flag(options + off, n))
			return true;
		off += n + 1;
	}
	return false;
}

void node_check_jit(struct unwinder *u, struct proc *p)
{
	if (p->v8_checked || p->v8_exe_checked)
		return;
	p->v8_exe_checked = true;
	char path[64], exe[4096];
	snprintf(path, sizeof(path), "/proc/%u/exe", p->pid);
	ssize_t n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return;
	exe[n] = '\0';
	const char *base = strrchr(exe, '/');
	base = base ? base + 1 : exe;
	if (!strcmp(base, "node") || !strcmp(base, "nodejs"))
		node_check(u, p);
}

void node_check(struct unwinder *u, struct proc *p)
{
	if (p->v8_checked)
		return;
	p->v8_checked = true;
	size_t clen = 0, elen = 0, olen = 0;
	char *cmd = proc_read_file(p->pid, "cmdline", CMDLINE_MAX, &clen);
	if (!cmd)
		return;		/* gone: nothing to tell */
	char *env = proc_read_file(p->pid, "environ", ENVIRON_MAX, &elen);
	const char *opts = env ? proc_environ_value(env, elen, "NODE_OPTIONS",
						    12, &olen) : NULL;
	if (!node_has_native_stack(cmd, clen, opts, opts ? olen : 0)) {
		u->st.v8_no_native_stack++;
		cpa_warn("pid %u: V8 runs without "
			 "--interpreted-frames-native-stack: its interpreted "
			 "JavaScript callers show as "
			 "Builtins_InterpreterEntryTrampoline; run node with "
			 "--perf-basic-prof --interpreted-frames-native-stack",
			 p->pid);
	}
	free(env);
	free(cmd);
}
