/*
 * A process that poses as a JVM to cpa-unwind: it loads a library named
 * libjvm.so that exports HotSpot's vmStructs symbols (gHotSpotVMStructs
 * and the rest), with tables that describe a code cache over memory the
 * process runs in, and forged as the mode says. For
 * tests/bats/java-hostile.bats: cpa-unwind must stay within its bounds.
 *
 * Built twice by the test: with -DFAKE_LIB -shared -fPIC as libjvm.so,
 * and as the program that loads it:
 *   fake_jvm LIBJVM MODE    (prints "ready PID", spins until killed)
 * MODE:
 *   segmap  the code heap's segment map never reaches a block's start
 *   blob    a blob at the heap's start, its header forged: an nmethod
 *           covering the heap, an enormous frame, debug information
 *           whose lengths and scope chain point where they like, a
 *           Method* whose names are 65535 bytes long
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHIFT 7			/* log2 of the segment size */
#define HEAP (1u << 20)		/* the forged code heap */
#define SPIN_AT 0x8000		/* where in it the process spins: 256
				 * segments from the heap's start */

struct entry {
	const char *type, *field, *tstr;
	int32_t is_static;
	uint64_t offset;
	void *address;
};

struct tentry {
	const char *type, *super;
	uint64_t size;
};

#ifdef FAKE_LIB

/* what HotSpot exports, named as it names them */
struct entry *gHotSpotVMStructs;
uint64_t gHotSpotVMStructEntryTypeNameOffset = offsetof(struct entry, type);
uint64_t gHotSpotVMStructEntryFieldNameOffset = offsetof(struct entry, field);
uint64_t gHotSpotVMStructEntryTypeStringOffset = offsetof(struct entry, tstr);
uint64_t gHotSpotVMStructEntryIsStaticOffset =
	offsetof(struct entry, is_static);
uint64_t gHotSpotVMStructEntryOffsetOffset = offsetof(struct entry, offset);
uint64_t gHotSpotVMStructEntryAddressOffset = offsetof(struct entry, address);
uint64_t gHotSpotVMStructEntryArrayStride = sizeof(struct entry);
struct tentry *gHotSpotVMTypes;
uint64_t gHotSpotVMTypeEntryTypeNameOffset = offsetof(struct tentry, type);
uint64_t gHotSpotVMTypeEntrySizeOffset = offsetof(struct tentry, size);
uint64_t gHotSpotVMTypeEntryArrayStride = sizeof(struct tentry);

static struct entry entries[64];
static struct tentry types[16];
static unsigned ne, nt;
static uint64_t heaps_ptr, lo_bound, hi_bound;
static uint64_t heap_array[2];		/* GrowableArray: _len, _data */
static uint64_t heap_ptrs[1];
static uint64_t code_heap[8];		/* _memory, _segmap, _log2 */
static uint8_t segmap[HEAP >> SHIFT];
static uint64_t method[4], cmethod[4], cpool[16], klass[8];
static uint8_t symbol[16];

static void field(const char *type, const char *name, uint64_t off)
{
	entries[ne++] = (struct entry){ type, name, "int", 0, off, NULL };
}

static void stat_field(const char *type, const char *name, void *addr)
{
	entries[ne++] = (struct entry){ type, name, "address", 1, 0, addr };
}

static void type(const char *name, uint64_t size)
{
	types[nt++] = (struct tentry){ name, NULL, size };
}

void fake_jvm_setup(const char *mode, uint8_t *heap);

void fake_jvm_setup(const char *mode, uint8_t *heap)
{
	/* the names: Method -> ConstMethod -> ConstantPool -> Symbol */
	field("Method", "_constMethod", 0);
	field("ConstMethod", "_constants", 0);
	field("ConstMethod", "_name_index", 8);
	field("ConstantPool", "_pool_holder", 0);
	field("Klass", "_name", 0);
	field("Symbol", "_length", 0);
	field("Symbol", "_body", 2);
	type("ConstantPool", 16);
	/* the code cache */
	stat_field("CodeCache", "_heaps", &heaps_ptr);
	stat_field("CodeCache", "_low_bound", &lo_bound);
	stat_field("CodeCache", "_high_bound", &hi_bound);
	field("GrowableArrayBase", "_len", 0);
	field("GrowableArray<int>", "_data", 8);
	field("CodeHeap", "_memory", 0);
	field("CodeHeap", "_segmap", 16);
	field("CodeHeap", "_log2_segment_size", 32);
	field("VirtualSpace", "_low_boundary", 0);
	field("VirtualSpace", "_high_boundary", 8);
	type("HeapBlock", 16);
	field("CodeBlob", "_name", 0);
	field("CodeBlob", "_size", 8);
	field("CodeBlob", "_frame_complete_offset", 12);
	field("CodeBlob", "_frame_size", 16);
	field("CodeBlob", "_code_begin", 24);
	field("CodeBlob", "_code_end", 32);
	type("nmethod", 128);
	field("nmethod", "_method", 40);
	field("nmethod", "_compile_id", 48);
	field("nmethod", "_metadata_offset", 52);
	field("CompiledMethod", "_scopes_data_begin", 56);
	field("nmethod", "_scopes_pcs_offset", 64);
	field("nmethod", "_dependencies_offset", 68);
	type("PcDesc", 16);
	field("PcDesc", "_pc_offset", 0);
	field("PcDesc", "_scope_decode_offset", 4);
	gHotSpotVMStructs = entries;
	gHotSpotVMTypes = types;

	/* one heap: the process's code, and its segment map */
	lo_bound = (uint64_t)(uintptr_t)heap;
	hi_bound = lo_bound + HEAP;
	heap_array[0] = 1;
	heap_array[1] = (uint64_t)(uintptr_t)heap_ptrs;
	heaps_ptr = (uint64_t)(uintptr_t)heap_array;
	heap_ptrs[0] = (uint64_t)(uintptr_t)code_heap;
	code_heap[0] = lo_bound;
	code_heap[1] = hi_bound;
	code_heap[2] = (uint64_t)(uintptr_t)segmap;
	code_heap[3] = (uint64_t)(uintptr_t)segmap + sizeof(segmap);
	code_heap[4] = SHIFT;

	/* segmap: every segment one back from the one before, so that no
	 * block's start (tag 0) is within reach; blob: HotSpot's own
	 * encoding, a block at the heap's start, each segment as far back
	 * towards it as a byte says */
	memset(segmap, 1, sizeof(segmap));
	if (strcmp(mode, "blob"))
		return;
	for (size_t i = 0; i < sizeof(segmap); i++)
		segmap[i] = (uint8_t)(i < 0xfe ? i : 0xfe);
	uint8_t *b = heap + 16;	/* after the HeapBlock */
	static const char nm[] = "nmethod";
	uint64_t v;
	v = (uint64_t)(uintptr_t)nm;
	memcpy(b + 0, &v, 8);
	uint32_t size = HEAP - 16, fc = 0, fs = 1u << 16, id = 1;
	memcpy(b + 8, &size, 4);
	memcpy(b + 12, &fc, 4);
	memcpy(b + 16, &fs, 4);	/* a 512 KiB frame */
	v = (uint64_t)(uintptr_t)b + 128;	/* the code after the header */
	memcpy(b + 24, &v, 8);
	v = hi_bound;
	memcpy(b + 32, &v, 8);
	v = (uint64_t)(uintptr_t)method;
	memcpy(b + 40, &v, 8);
	memcpy(b + 48, &id, 4);
	/* metadata, scopes and pcs: offsets far past the blob, the scopes'
	 * end before their start, a chain of scopes that loops */
	uint32_t meta = 128, pcs = 0x7ffffff0, deps = 0xfffffff0;
	memcpy(b + 52, &meta, 4);
	v = lo_bound + 200;
	memcpy(b + 56, &v, 8);
	memcpy(b + 64, &pcs, 4);
	memcpy(b + 68, &deps, 4);
	/* a Method whose class and method names claim 65535 bytes */
	method[0] = (uint64_t)(uintptr_t)cmethod;
	cmethod[0] = (uint64_t)(uintptr_t)cpool;
	cmethod[1] = 1;		/* _name_index 1 */
	cpool[0] = (uint64_t)(uintptr_t)klass;
	cpool[2 + 1] = (uint64_t)(uintptr_t)symbol;
	klass[0] = (uint64_t)(uintptr_t)symbol;
	symbol[0] = 0xff;
	symbol[1] = 0xff;
	memcpy(symbol + 2, "Forged;\nname", 12);
}

#else /* the program */

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	/* pause; jmp .-2: an endless loop, position independent */
	static const unsigned char spin[] = { 0xf3, 0x90, 0xeb, 0xfc };
	if (argc != 3) {
		fprintf(stderr, "usage: fake_jvm LIBJVM segmap|blob\n");
		return 2;
	}
	void *lib = dlopen(argv[1], RTLD_NOW);
	void (*setup)(const char *, uint8_t *) =
		lib ? (void (*)(const char *, uint8_t *))dlsym(lib, "fake_jvm_setup")
		    : NULL;
	uint8_t *heap = mmap(NULL, HEAP, PROT_READ | PROT_WRITE | PROT_EXEC,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!setup || heap == MAP_FAILED) {
		fprintf(stderr, "fake_jvm: %s\n", lib ? "no setup" : dlerror());
		return 1;
	}
	memcpy(heap + SPIN_AT, spin, sizeof(spin));
	setup(argv[2], heap);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	((void (*)(void))(heap + SPIN_AT))();
	return 0;
}

#endif
