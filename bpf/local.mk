# BPF programs: CO-RE objects built with clang against a vmlinux.h that
# bpftool dumps from the build host's BTF, embedded in the loaders through
# bpftool skeletons (as libbpf-tools does).
BPF_CFLAGS = -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_TARGET_ARCH) \
	-I$(top_builddir)/bpf -I$(top_srcdir)/bpf \
	-Wall -Werror

bpf/vmlinux.h:
	@$(MKDIR_P) bpf
	$(AM_V_GEN)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@.tmp && mv $@.tmp $@

bpf/%.bpf.o: bpf/%.bpf.c bpf/vmlinux.h
	@$(MKDIR_P) bpf
	$(AM_V_GEN)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

bpf/%.skel.h: bpf/%.bpf.o
	$(AM_V_GEN)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

CLEANFILES += bpf/vmlinux.h bpf/*.bpf.o bpf/*.skel.h

# cpa-capture's BPF program and the header it shares with its loader
BUILT_SOURCES += bpf/capture.skel.h
EXTRA_DIST += bpf/capture.bpf.c bpf/capture.h bpf/pyframes.h bpf/pywalk.bpf.h
bpf/capture.bpf.o: bpf/capture.h bpf/pyframes.h bpf/pywalk.bpf.h

# --mem virt, phys, usage: a BPF object of its own on the main object's
# ring buffer and filter maps, which both build from shared headers
BUILT_SOURCES += bpf/mem.skel.h
EXTRA_DIST += bpf/mem.bpf.c bpf/mem.h bpf/filter.bpf.h bpf/ring.bpf.h \
	bpf/ustack.bpf.h
bpf/capture.bpf.o: bpf/filter.bpf.h bpf/ring.bpf.h bpf/ustack.bpf.h
bpf/mem.bpf.o: bpf/capture.h bpf/mem.h bpf/filter.bpf.h bpf/ring.bpf.h \
	bpf/ustack.bpf.h

# --mem malloc: uprobes on the C library's allocator, on the same maps
BUILT_SOURCES += bpf/heap.skel.h
EXTRA_DIST += bpf/heap.bpf.c bpf/heap.h
bpf/heap.bpf.o: bpf/capture.h bpf/heap.h bpf/mem.h bpf/filter.bpf.h \
	bpf/ring.bpf.h bpf/ustack.bpf.h
