// SPDX-License-Identifier: MIT
/*
 * Frame names as the rest of cpa writes Java frames: "pkg.Class.method"
 * for a method, "pkg.Class" or "int[]" for an allocated class. A method's
 * name costs three JVMTI calls and a few allocations, so it is asked once
 * per jmethodID and session and kept in a table that the session's end
 * empties.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"

struct entry {
	jmethodID id;
	char *name;
	size_t len;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry *tab;
static size_t tab_cap, tab_used;	/* cap a power of two, or 0 */

static size_t slot(jmethodID id, size_t capacity)
{
	uint64_t h = (uint64_t)(uintptr_t)id * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 32) & (capacity - 1);
}

static void grow(void)
{
	size_t ncap = tab_cap ? 2 * tab_cap : 1024;
	struct entry *ntab = calloc(ncap, sizeof(*ntab));

	if (!ntab)
		return;
	for (size_t i = 0; i < tab_cap; i++) {
		if (!tab[i].id)
			continue;
		size_t j = slot(tab[i].id, ncap);
		while (ntab[j].id)
			j = (j + 1) & (ncap - 1);
		ntab[j] = tab[i];
	}
	free(tab);
	tab = ntab;
	tab_cap = ncap;
}

/* Appends n bytes of src to out at *at, each / as a dot. */
static void put_dotted(char *out, size_t len, size_t *at, const char *src,
		       size_t n)
{
	for (size_t i = 0; i < n && *at + 1 < len; i++)
		out[(*at)++] = src[i] == '/' ? '.' : src[i];
	out[*at] = '\0';
}

size_t names_class(const char *sig, char *out, size_t len)
{
	static const struct {
		char code;
		const char *name;
	} prim[] = {
		{ 'B', "byte" }, { 'C', "char" }, { 'D', "double" },
		{ 'F', "float" }, { 'I', "int" }, { 'J', "long" },
		{ 'S', "short" }, { 'Z', "boolean" }, { 'V', "void" },
	};
	size_t dims = 0, at = 0;

	out[0] = '\0';
	while (sig[dims] == '[')
		dims++;
	sig += dims;
	if (sig[0] == 'L') {
		size_t n = strcspn(sig + 1, ";");
		put_dotted(out, len, &at, sig + 1, n);
	} else {
		for (size_t i = 0; i < sizeof(prim) / sizeof(prim[0]); i++)
			if (sig[0] == prim[i].code)
				put_dotted(out, len, &at, prim[i].name,
					   strlen(prim[i].name));
		if (!at)	/* a signature this code does not know */
			put_dotted(out, len, &at, sig, strlen(sig));
	}
	while (dims--)
		put_dotted(out, len, &at, "[]", 2);
	return at;
}

/* Asks the JVM: declaring class, then method name. */
static size_t lookup(jvmtiEnv *jvmti, jmethodID m, char *out, size_t len)
{
	jclass cls;
	char *sig = NULL, *name = NULL;
	size_t at = 0;

	out[0] = '\0';
	if ((*jvmti)->GetMethodDeclaringClass(jvmti, m, &cls) ==
		    JVMTI_ERROR_NONE &&
	    (*jvmti)->GetClassSignature(jvmti, cls, &sig, NULL) ==
		    JVMTI_ERROR_NONE) {
		at = names_class(sig, out, len);
		put_dotted(out, len, &at, ".", 1);
	}
	if ((*jvmti)->GetMethodName(jvmti, m, &name, NULL, NULL) ==
	    JVMTI_ERROR_NONE)
		put_dotted(out, len, &at, name, strlen(name));
	else
		put_dotted(out, len, &at, "[unknown]", 9);
	if (sig)
		(*jvmti)->Deallocate(jvmti, (unsigned char *)sig);
	if (name)
		(*jvmti)->Deallocate(jvmti, (unsigned char *)name);
	return at;
}

size_t names_method(jvmtiEnv *jvmti, jmethodID m, char *out, size_t len)
{
	size_t n;

	pthread_mutex_lock(&lock);
	if (tab_cap) {
		for (size_t i = slot(m, tab_cap); tab[i].id;
		     i = (i + 1) & (tab_cap - 1)) {
			if (tab[i].id == m) {
				n = tab[i].len < len ? tab[i].len : len - 1;
				memcpy(out, tab[i].name, n);
				out[n] = '\0';
				pthread_mutex_unlock(&lock);
				return n;
			}
		}
	}
	pthread_mutex_unlock(&lock);

	/* asked outside the lock: another thread may ask the same once */
	n = lookup(jvmti, m, out, len);
	pthread_mutex_lock(&lock);
	if (2 * (tab_used + 1) > tab_cap)
		grow();
	if (tab_cap) {
		size_t i = slot(m, tab_cap);
		while (tab[i].id && tab[i].id != m)
			i = (i + 1) & (tab_cap - 1);
		if (!tab[i].id) {
			char *copy = malloc(n + 1);
			if (copy) {
				memcpy(copy, out, n + 1);
				tab[i] = (struct entry){ m, copy, n };
				tab_used++;
			}
		}
	}
	pthread_mutex_unlock(&lock);
	return n;
}

void names_clear(void)
{
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < tab_cap; i++)
		free(tab[i].name);
	free(tab);
	tab = NULL;
	tab_cap = tab_used = 0;
	pthread_mutex_unlock(&lock);
}
