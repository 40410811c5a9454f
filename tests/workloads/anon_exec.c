/*
 * Spins in code copied into anonymous executable memory, as a JIT
 * without a perf map would, named with PR_SET_VMA_ANON_NAME when --name
 * is given, so /proc/PID/maps shows it as [anon:NAME]. The memory is
 * named after it is mapped, as a runtime does: perf's mapping record for
 * it carries no name.
 *
 * usage: anon_exec [--name NAME] [--stream] | --probe
 * Prints "ready PID" once the code runs; spins until killed. Exits 3
 * when the kernel cannot name anonymous memory (CONFIG_ANON_VMA_NAME);
 * --probe only says that, exiting 0 where it can.
 * --stream writes instead, on stdout, the cpa stream cpa-capture's scan
 * of /proc/PID/maps would give for a sample in the code, the mapping
 * named "[anon:NAME]" as a kernel with names shows it (or "//anon"),
 * and exits: cpa-unwind's naming, on any kernel.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "stream.h"

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

/* An endless loop, position independent. */
#if defined(__x86_64__) || defined(__i386__)
static const unsigned char spin_code[] = { 0xf3, 0x90, 0xeb, 0xfc }; /* pause; jmp .-2 */
#elif defined(__aarch64__)
static const unsigned char spin_code[] = { 0x3f, 0x20, 0x03, 0xd5,   /* yield */
					   0xff, 0xff, 0xff, 0x17 }; /* b .-4 */
#else
#error "anon_exec: no spin loop for this architecture"
#endif

static int write_stream(const unsigned char *code, size_t len,
			const char *name)
{
	struct cpa_writer w;
	char path[128];
	snprintf(path, sizeof(path), name ? "[anon:%s]" : "//anon", name);
	uint32_t pid = (uint32_t)getpid();
	struct cpa_mmap m = {
		.start = (uint64_t)(uintptr_t)code, .len = len, .pid = pid,
		.prot = PROT_READ | PROT_EXEC, .path = path,
		.path_len = (uint16_t)strlen(path),
	};
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct cpa_raw_sample s = {
		.time_ns = (uint64_t)ts.tv_sec * 1000000000u +
			   (uint64_t)ts.tv_nsec,
		.weight = 1, .pid = pid, .tid = pid, .kind = CPA_KIND_ONCPU,
		.n_user = 1,
	};
	s.user_ips[0] = (uint64_t)(uintptr_t)code + 2;
	strcpy(s.comm, "anon_exec");
	strcpy(s.pcomm, "anon_exec");
	if (cpa_writer_init(&w, 1) < 0 || cpa_write_mmap(&w, &m) < 0 ||
	    cpa_write_raw_sample(&w, &s) < 0 || cpa_write_end(&w) < 0 ||
	    cpa_writer_close(&w) < 0)
		return 1;
	return 0;
}

int main(int argc, char **argv)
{
	const char *name = NULL;
	int stream = 0, probe = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--name") && i + 1 < argc) {
			name = argv[++i];
		} else if (!strcmp(argv[i], "--probe")) {
			probe = 1;
			name = "probe";
		} else if (!strcmp(argv[i], "--stream")) {
			stream = 1;
		} else {
			fprintf(stderr, "usage: anon_exec [--name NAME] [--stream] | "
				"--probe\n");
			return 2;
		}
	}
	size_t len = (size_t)sysconf(_SC_PAGESIZE);
	unsigned char *code = mmap(NULL, len, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED) {
		perror("anon_exec: mmap");
		return 1;
	}
	memcpy(code, spin_code, sizeof(spin_code));
	if (mprotect(code, len, PROT_READ | PROT_EXEC) < 0) {
		perror("anon_exec: mprotect");
		return 1;
	}
	__builtin___clear_cache((char *)code, (char *)code + sizeof(spin_code));
	if (stream)
		return write_stream(code, len, name);
	if (name && prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME,
			  (unsigned long)code, len, (unsigned long)name) < 0) {
		perror("anon_exec: prctl(PR_SET_VMA_ANON_NAME)");
		return 3;
	}
	if (probe)
		return 0;
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	((void (*)(void))code)();
	return 0;
}
