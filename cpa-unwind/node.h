/* SPDX-License-Identifier: MIT */
/*
 * Node and other V8 programs: whether their interpreted JavaScript can
 * be named (--interpreted-frames-native-stack), told once per process
 * (node.c).
 */
#ifndef CPA_UNWIND_NODE_H
#define CPA_UNWIND_NODE_H

#include <stdbool.h>
#include <stddef.h>

struct unwinder;
struct proc;

/* The symbol of V8's interpreter entry, which a process's samples reach
 * when it runs interpreted JavaScript. */
#define NODE_INTERPRETER_ENTRY "Builtins_InterpreterEntryTrampoline"

/* p's samples reached it: looks at p's flags, once; warns and counts
 * when it lacks --interpreted-frames-native-stack. */
void node_check(struct unwinder *u, struct proc *p);
/* p has a JIT map: when it is node (its executable's name), the same
 * check at once, without waiting for node's own symbols. */
void node_check_jit(struct unwinder *u, struct proc *p);
/* Whether a command line (NUL-separated, clen bytes) or NODE_OPTIONS
 * (olen bytes, may be NULL) turns the flag on. */
bool node_has_native_stack(const char *cmdline, size_t clen,
			   const char *options, size_t olen);

#endif
