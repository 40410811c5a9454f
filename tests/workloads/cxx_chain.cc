/*
 * C++ spinner with a known chain through namespaces, a class and
 * templates, for demangling tests. Built without frame pointers:
 *   main -> app::run(long) -> app::Runner::level_a(long)
 *        -> long app::detail::level_b<long>(long)
 *        -> app::detail::Spinner<long>::hot_leaf(long)
 * Prints "ready PID" once running.  usage: cxx_chain [SECONDS]
 */
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noipa))
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

static std::chrono::steady_clock::time_point deadline;
static volatile unsigned long sink;

namespace app {
namespace detail {

template <typename T> struct Spinner {
	NOINLINE static T hot_leaf(T x)
	{
		while (std::chrono::steady_clock::now() < deadline)
			for (int i = 0; i < 100000; i++)
				sink += i * 7 + x;
		KEEP_FRAME();
		return x;
	}
};

template <typename T> NOINLINE T level_b(T x)
{
	T r = Spinner<T>::hot_leaf(x);
	KEEP_FRAME();
	return r + 1;
}

} // namespace detail

class Runner {
public:
	NOINLINE long level_a(long x)
	{
		long r = detail::level_b<long>(x);
		KEEP_FRAME();
		return r + 1;
	}
};

NOINLINE long run(long x)
{
	Runner r;
	long v = r.level_a(x);
	KEEP_FRAME();
	return v;
}

} // namespace app

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 10;
	deadline = std::chrono::steady_clock::now() +
		   std::chrono::microseconds((long)(seconds * 1e6));
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	long v = app::run(argc);
	KEEP_FRAME();
	return (int)(v & 1) - (int)(v & 1);
}
