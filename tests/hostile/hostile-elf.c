// SPDX-License-Identifier: MIT
/*
 * hostile-elf: writes an ELF shared object built to cost cpa-unwind as
 * much as a small file can: one function whose FDE has a chosen number of
 * rows, or a flood of DW_CFA_remember_state, and a symbol table of a
 * chosen size; or whose only CFI is a .debug_frame next to a compressed
 * .debug_info that inflates to a chosen size (a zip bomb for any reader
 * of its DWARF).
 *
 *   hostile-elf [--rows N] [--remember N] [--symbols N] [--debug-bomb MB]
 *               [--name NAME] FILE
 *
 * The object has one PT_LOAD segment mapping the whole file at address 0
 * (so ELF addresses are file offsets) and its function hostile_spin at
 * HOSTILE_SPIN_OFFSET: a jump to itself followed by --rows bytes of nops.
 * --name gives that function's symbol another name, any bytes but NUL.
 * hostile-spin (tests/hostile/hostile-spin.c) maps it and calls into it.
 * Its CFI is right where the function spins (CFA = rsp + 8, return
 * address at CFA - 8); the rows past it alternate between two offsets,
 * which no merging of equal neighbours can fold.
 */
#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "buf.h"
#include "hostile.h"
#include "le.h"

static void put8(struct cpa_buf *b, uint8_t v)
{
	cpa_buf_add(b, &v, 1);
}

static void put32(struct cpa_buf *b, uint32_t v)
{
	uint8_t le[4];
	cpa_put_le32(le, v);
	cpa_buf_add(b, le, 4);
}

static void align(struct cpa_buf *b, size_t a, uint8_t fill)
{
	while (b->len % a)
		put8(b, fill);
}

/*
 * .eh_frame at address base: one CIE (x86-64 defaults, pc-relative sdata4
 * addresses) and one FDE for [spin, spin + len).
 */
static void eh_frame(struct cpa_buf *b, uint64_t base, uint64_t spin,
		     uint64_t len, unsigned long rows, unsigned long remember)
{
	size_t cie = b->len;
	put32(b, 0);			/* length, patched */
	put32(b, 0);			/* CIE id */
	put8(b, 1);			/* version */
	cpa_buf_add(b, "zR", 3);
	cpa_buf_uleb128(b, 1);			/* code alignment */
	put8(b, 0x78);			/* data alignment: sleb -8 */
	cpa_buf_uleb128(b, 16);			/* return address column */
	cpa_buf_uleb128(b, 1);			/* augmentation length */
	put8(b, 0x1b);			/* DW_EH_PE_pcrel | sdata4 */
	put8(b, 0x0c); put8(b, 7); put8(b, 8);	/* def_cfa rsp, 8 */
	put8(b, 0x80 | 16); put8(b, 1);	/* offset rip at cfa - 8 */
	align(b, 8, 0);
	uint32_t cie_len = (uint32_t)(b->len - cie - 4);
	cpa_put_le32(b->p + cie, cie_len);

	size_t fde = b->len;
	put32(b, 0);			/* length, patched */
	put32(b, (uint32_t)(b->len - cie));	/* CIE pointer */
	put32(b, (uint32_t)(int32_t)(spin - (base + b->len)));	/* pc begin */
	put32(b, (uint32_t)len);	/* pc range */
	cpa_buf_uleb128(b, 0);			/* augmentation length */
	/* the flood comes before the first row: any interpreter must run
	 * it to say how the function itself unwinds */
	for (unsigned long i = 0; i < remember; i++)
		put8(b, 0x0a);		/* DW_CFA_remember_state */
	put8(b, 0x40 | HOSTILE_SPIN_LEN);	/* advance past the jump */
	for (unsigned long i = 0; i < rows; i++) {
		put8(b, 0x0e);		/* def_cfa_offset */
		cpa_buf_uleb128(b, i % 2 ? 8 : 16);
		put8(b, 0x41);		/* advance_loc 1 */
	}
	align(b, 8, 0);
	uint32_t fde_len = (uint32_t)(b->len - fde - 4);
	cpa_put_le32(b->p + fde, fde_len);
	put32(b, 0);			/* terminator */
}

static void put64(struct cpa_buf *b, uint64_t v)
{
	uint8_t le[8];
	cpa_put_le64(le, v);
	cpa_buf_add(b, le, 8);
}

/* The same CIE and FDE as .debug_frame: absolute 8-byte addresses. */
static void debug_frame(struct cpa_buf *b, uint64_t spin, uint64_t len)
{
	put32(b, 20);			/* CIE length */
	put32(b, 0xffffffff);		/* CIE id */
	put8(b, 1);			/* version */
	put8(b, 0);			/* no augmentation */
	cpa_buf_uleb128(b, 1);
	put8(b, 0x78);
	cpa_buf_uleb128(b, 16);
	put8(b, 0x0c); put8(b, 7); put8(b, 8);
	put8(b, 0x80 | 16); put8(b, 1);
	while (b->len < 24)
		put8(b, 0);		/* DW_CFA_nop up to the length */
	put32(b, 28);			/* FDE length */
	put32(b, 0);			/* CIE pointer: offset 0 */
	put64(b, spin);
	put64(b, len);
	for (int i = 0; i < 8; i++)
		put8(b, 0);
}

/* A zlib-compressed section body (Elf64_Chdr first) of mb MB of zeros. */
static void bomb(struct cpa_buf *b, unsigned long mb)
{
	Elf64_Chdr ch = { .ch_type = ELFCOMPRESS_ZLIB,
			  .ch_size = (uint64_t)mb << 20, .ch_addralign = 1 };
	cpa_buf_add(b, &ch, sizeof(ch));
	static uint8_t zeros[1 << 20], out[1 << 16];
	z_stream z = { 0 };
	if (deflateInit(&z, Z_BEST_SPEED) != Z_OK)
		exit(1);
	for (unsigned long i = 0; i <= mb; i++) {
		z.next_in = zeros;
		z.avail_in = i < mb ? sizeof(zeros) : 0;
		int flush = i < mb ? Z_NO_FLUSH : Z_FINISH;
		do {
			z.next_out = out;
			z.avail_out = sizeof(out);
			deflate(&z, flush);
			cpa_buf_add(b, out, sizeof(out) - z.avail_out);
		} while (z.avail_out == 0);
	}
	deflateEnd(&z);
}

static void usage(void)
{
	fprintf(stderr, "usage: hostile-elf [--rows N] [--remember N] "
			"[--symbols N] [--debug-bomb MB] [--name NAME] FILE\n");
	exit(2);
}

static unsigned long number(const char *opt, const char *arg)
{
	char *end;
	errno = 0;
	unsigned long v = arg ? strtoul(arg, &end, 10) : 0;
	if (!arg || errno || *end || v > 100000000ul) {
		fprintf(stderr, "hostile-elf: invalid %s '%s'\n", opt,
			arg ? arg : "");
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	unsigned long rows = 0, remember = 0, symbols = 0, bomb_mb = 0;
	const char *out = NULL, *spin_name = "hostile_spin";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--rows"))
			rows = number(argv[i], argv[i + 1]), i++;
		else if (!strcmp(argv[i], "--remember"))
			remember = number(argv[i], argv[i + 1]), i++;
		else if (!strcmp(argv[i], "--symbols"))
			symbols = number(argv[i], argv[i + 1]), i++;
		else if (!strcmp(argv[i], "--debug-bomb"))
			bomb_mb = number(argv[i], argv[i + 1]), i++;
		else if (!strcmp(argv[i], "--name") && argv[i + 1])
			spin_name = argv[++i];
		else if (argv[i][0] == '-' || out)
			usage();
		else
			out = argv[i];
	}
	if (!out)
		usage();

	struct cpa_buf f = { 0 }, shstr = { 0 }, str = { 0 };
	Elf64_Shdr sh[7];
	memset(sh, 0, sizeof(sh));
	put8(&shstr, 0);
	put8(&str, 0);

	/* headers, patched at the end */
	cpa_buf_add(&f, &(Elf64_Ehdr){ 0 }, sizeof(Elf64_Ehdr));
	cpa_buf_add(&f, &(Elf64_Phdr){ 0 }, sizeof(Elf64_Phdr));
	align(&f, HOSTILE_SPIN_OFFSET, 0);

	/* 1 .text: jmp . then nops */
	uint64_t text = f.len, text_len = HOSTILE_SPIN_LEN + rows;
	put8(&f, 0xeb);
	put8(&f, 0xfe);
	for (unsigned long i = 0; i < rows; i++)
		put8(&f, 0x90);
	sh[1] = (Elf64_Shdr){ .sh_type = SHT_PROGBITS,
			      .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
			      .sh_addr = text, .sh_offset = text,
			      .sh_size = text_len, .sh_addralign = 16 };

	/* 2 .eh_frame */
	align(&f, 8, 0);
	uint64_t eh = f.len;
	struct cpa_buf ehb = { 0 };
	if (bomb_mb)	/* 2 is .debug_frame instead, not loaded */
		debug_frame(&ehb, text, text_len);
	else
		eh_frame(&ehb, eh, text, text_len, rows, remember);
	cpa_buf_add(&f, ehb.p, ehb.len);
	free(ehb.p);
	sh[2] = (Elf64_Shdr){ .sh_type = SHT_PROGBITS,
			      .sh_flags = bomb_mb ? 0 : SHF_ALLOC,
			      .sh_addr = bomb_mb ? 0 : eh, .sh_offset = eh,
			      .sh_size = f.len - eh, .sh_addralign = 8 };
	uint64_t load_end = f.len;

	/* 3 .symtab, 4 .strtab: hostile_spin, then symbols f0, f1, ... at
	 * distinct addresses (so none is merged away before it is counted) */
	align(&f, 8, 0);
	uint64_t symoff = f.len;
	cpa_buf_add(&f, &(Elf64_Sym){ 0 }, sizeof(Elf64_Sym));
	Elf64_Sym s = { .st_name = (uint32_t)str.len,
			.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
			.st_shndx = 1, .st_value = text, .st_size = text_len };
	cpa_buf_add(&str, spin_name, strlen(spin_name) + 1);
	cpa_buf_add(&f, &s, sizeof(s));
	for (unsigned long i = 0; i < symbols; i++) {
		char name[32];
		int n = snprintf(name, sizeof(name), "f%lu", i);
		s.st_name = (uint32_t)str.len;
		s.st_value = load_end + i;
		s.st_size = 1;
		cpa_buf_add(&str, name, (size_t)n + 1);
		cpa_buf_add(&f, &s, sizeof(s));
	}
	sh[3] = (Elf64_Shdr){ .sh_type = SHT_SYMTAB, .sh_offset = symoff,
			      .sh_size = f.len - symoff, .sh_link = 4,
			      .sh_info = 1, .sh_addralign = 8,
			      .sh_entsize = sizeof(Elf64_Sym) };
	sh[4] = (Elf64_Shdr){ .sh_type = SHT_STRTAB, .sh_offset = f.len,
			      .sh_size = str.len, .sh_addralign = 1 };
	cpa_buf_add(&f, str.p, str.len);
	free(str.p);

	/* 6 .debug_info, compressed */
	unsigned nsec = bomb_mb ? 7 : 6;
	if (bomb_mb) {
		align(&f, 8, 0);
		sh[6] = (Elf64_Shdr){ .sh_type = SHT_PROGBITS,
				      .sh_flags = SHF_COMPRESSED,
				      .sh_offset = f.len, .sh_addralign = 8 };
		bomb(&f, bomb_mb);
		sh[6].sh_size = f.len - sh[6].sh_offset;
	}

	/* 5 .shstrtab */
	const char *const names[] = {
		"", ".text", bomb_mb ? ".debug_frame" : ".eh_frame", ".symtab",
		".strtab", ".shstrtab", ".debug_info"
	};
	for (unsigned i = 1; i < nsec; i++) {
		sh[i].sh_name = (uint32_t)shstr.len;
		cpa_buf_add(&shstr, names[i], strlen(names[i]) + 1);
	}
	sh[5] = (Elf64_Shdr){ .sh_name = sh[5].sh_name, .sh_type = SHT_STRTAB,
			      .sh_offset = f.len, .sh_size = shstr.len,
			      .sh_addralign = 1 };
	cpa_buf_add(&f, shstr.p, shstr.len);
	free(shstr.p);

	align(&f, 8, 0);
	uint64_t shoff = f.len;
	cpa_buf_add(&f, sh, nsec * sizeof(Elf64_Shdr));

	Elf64_Ehdr eh_hdr = {
		.e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64,
			     ELFDATA2LSB, EV_CURRENT },
		.e_type = ET_DYN, .e_machine = EM_X86_64,
		.e_version = EV_CURRENT, .e_phoff = sizeof(Elf64_Ehdr),
		.e_shoff = shoff, .e_ehsize = sizeof(Elf64_Ehdr),
		.e_phentsize = sizeof(Elf64_Phdr), .e_phnum = 1,
		.e_shentsize = sizeof(Elf64_Shdr), .e_shnum = (uint16_t)nsec,
		.e_shstrndx = 5,
	};
	Elf64_Phdr ph = {
		.p_type = PT_LOAD, .p_flags = PF_R | PF_X,
		.p_filesz = load_end, .p_memsz = load_end, .p_align = 4096,
	};
	memcpy(f.p, &eh_hdr, sizeof(eh_hdr));
	memcpy(f.p + sizeof(eh_hdr), &ph, sizeof(ph));

	FILE *fp = fopen(out, "wb");
	if (!fp || fwrite(f.p, 1, f.len, fp) != f.len || fclose(fp) != 0) {
		fprintf(stderr, "hostile-elf: %s: %s\n", out, strerror(errno));
		return 1;
	}
	free(f.p);
	return 0;
}
