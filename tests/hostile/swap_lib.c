/*
 * The object a hostile process maps and spins in (swap_mapper.c). Built
 * twice from this file: as the process's library (names spin_*) and, with
 * -DNAME_PREFIX=host_, as the host file a container points its
 * symlink at: the same code at the same offsets under other names, so a
 * profile that read the host file would show host_* frames.
 * Both are given the same build id, as a process can forge any id into
 * its own object, so that the id does not tell them apart.
 */
#ifndef NAME_PREFIX
#define NAME_PREFIX spin_
#endif
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define NAME(x) CAT(NAME_PREFIX, x)

#define NOINLINE __attribute__((noinline))
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

static volatile unsigned long sink;

NOINLINE void NAME(leaf)(void)
{
	for (unsigned long i = 0; i < 100000; i++)
		sink += i * 7;
	KEEP_FRAME();
}

NOINLINE void NAME(outer)(void)
{
	NAME(leaf)();
	KEEP_FRAME();
}
