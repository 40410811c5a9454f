/*
 * A spinner whose chain is inlined: handle, parse and the two compute
 * functions are always_inline, so at -O2 run holds them all:
 *   main -> run -> handle -> parse -> computeHot   (3 requests of 4)
 *                                  -> computeCold  (1 request of 4)
 * Built as C and as C++ (namespace svc, so the inlined names are
 * demangled), without frame pointers, for the --inline tests. Prints
 * "ready PID" once running and, at the end, its own count of requests
 * per path: "hot N cold M".  usage: inline_chain [SECONDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
/* C++: external linkage, so the inlined functions carry linkage names */
#ifdef __cplusplus
#define INLINE inline __attribute__((always_inline))
#else
#define INLINE static inline __attribute__((always_inline))
#endif
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

static volatile unsigned long sink;
static unsigned long hot_calls, cold_calls;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#ifdef __cplusplus
namespace svc {
#endif

/* the same work per request, in loops the compiler cannot merge */
INLINE void computeHot(long id)
{
	for (int i = 0; i < 20000; i++)
		sink += (unsigned long)(i * 7 + id);
	hot_calls++;
}

INLINE void computeCold(long id)
{
	for (int i = 0; i < 20000; i++)
		sink ^= (unsigned long)(i * 5 - id);
	cold_calls++;
}

INLINE void parse(long id)
{
	if (id % 4)
		computeHot(id);
	else
		computeCold(id);
}

INLINE void handle(long id)
{
	parse(id);
}

NOINLINE void run(double deadline)
{
	for (long id = 0;; id++) {
		handle(id);
		if (id % 64 == 63 && now() >= deadline)
			break;
	}
	KEEP_FRAME();
}

#ifdef __cplusplus
} // namespace svc
using svc::run;
#endif

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 10;
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	run(now() + seconds);
	printf("hot %lu cold %lu\n", hot_calls, cold_calls);
	KEEP_FRAME();
	return 0;
}
