/* Unit tests for reloc.c: synthetic prologues, this libc's, and executing copies. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <gnu/libc-version.h>
#include <unistd.h>
#include <malloc.h>
#include <stdbool.h>
#include <capstone/capstone.h>

#include "harness.h"
#include "near_page.h"
#include "reloc.h"

#define FROM	0x7f0000400000ull
#define TO	(FROM + 0x100000)

/* ---- decoding the output ---- */

struct dec {
	unsigned int id;
	char mnemonic[32];
	uint64_t addr;
	size_t size;
	bool riprel;		/* has a RIP-relative memory operand */
	uint64_t ea;		/* its effective address */
	bool branch;		/* direct branch */
	uint64_t target;
};

/* Decode exactly len bytes at addr into d[]; returns the count or -1. */
static int decode(const uint8_t *code, size_t len, uint64_t addr, struct dec *d, int max)
{
	cs_insn *insn;
	csh cs;
	int n = 0;

	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return -1;
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	insn = cs_malloc(cs);
	while (len && n < max && cs_disasm_iter(cs, &code, &len, &addr, insn)) {
		cs_x86 *x = &insn->detail->x86;

		memset(&d[n], 0, sizeof(d[n]));
		d[n].id = insn->id;
		snprintf(d[n].mnemonic, sizeof(d[n].mnemonic), "%s", insn->mnemonic);
		d[n].addr = insn->address;
		d[n].size = insn->size;
		for (int i = 0; i < x->op_count; i++) {
			if (x->operands[i].type == X86_OP_MEM &&
			    x->operands[i].mem.base == X86_REG_RIP) {
				d[n].riprel = true;
				d[n].ea = insn->address + insn->size + x->operands[i].mem.disp;
			}
		}
		if ((cs_insn_group(cs, insn, CS_GRP_JUMP) || cs_insn_group(cs, insn, CS_GRP_CALL)) &&
		    x->op_count == 1 && x->operands[0].type == X86_OP_IMM) {
			d[n].branch = true;
			d[n].target = x->operands[0].imm;
		}
		n++;
	}
	if (len)
		n = -1;
	cs_free(insn, 1);
	cs_close(&cs);
	return n;
}

/*
 * Check that r's code is the original region instruction by instruction
 * (same mnemonic, same effective addresses and branch targets, with
 * targets inside the region mapped to the copy) plus a jmp back.
 */
static void check_equivalent(const uint8_t *orig_code, const struct reloc_result *r)
{
	struct dec o[RELOC_MAX_INSNS], n[RELOC_MAX_INSNS + 1];
	int no, nn;

	no = decode(orig_code + r->skipped, r->covered, r->patch_addr, o, RELOC_MAX_INSNS);
	nn = decode(r->code, r->code_len, r->to, n, RELOC_MAX_INSNS + 1);
	expect_int_eq(no, (long long)r->n_insns);
	expect_int_eq(nn, no + 1);
	if (no < 0 || nn != no + 1)
		return;
	for (int i = 0; i < no; i++) {
		expect_str_eq(n[i].mnemonic, o[i].mnemonic);
		expect_int_eq(n[i].riprel, o[i].riprel);
		if (o[i].riprel)
			expect_u64_eq(n[i].ea, o[i].ea);
		expect_int_eq(n[i].branch, o[i].branch);
		if (o[i].branch) {
			uint64_t t = o[i].target;

			for (size_t k = 0; k < r->n_insns; k++)
				if (t == r->patch_addr + r->map[k].orig_off)
					t = r->to + r->map[k].reloc_off;
			expect_u64_eq(n[i].target, t);
		}
		expect_int_eq(r->map[i].orig_off, o[i].addr - r->patch_addr);
		expect_int_eq(r->map[i].reloc_off, n[i].addr - r->to);
	}
	expect_str_eq(n[no].mnemonic, "jmp");
	expect_u64_eq(n[no].target, r->patch_addr + r->covered);
	expect_u64_eq(n[no].addr + n[no].size, r->to + r->code_len);
}

/* ---- synthetic prologues ---- */

static void test_plain_pushes(void)
{
	/* glibc malloc: push r12; push rbp; push rbx; mov rbx,rdi; sub rsp,0x10 */
	static const uint8_t c[] = { 0x41, 0x54, 0x55, 0x53, 0x48, 0x89, 0xfb,
				     0x48, 0x83, 0xec, 0x10 };
	static const uint8_t back[] = { 0xe9, 0xfb, 0xff, 0xef, 0xff };	/* FROM+7 - (TO+12) */
	struct reloc_result r;

	expect_int_eq(reloc_prologue(c, sizeof(c), FROM, TO, &r), 0);
	expect_u64_eq(r.patch_addr, FROM);
	expect_int_eq(r.skipped, 0);
	expect_int_eq(r.covered, 7);
	expect_int_eq(r.code_len, 12);
	expect_int_eq(r.n_insns, 4);
	expect_true(!memcmp(r.code, c, 7));
	expect_true(!memcmp(r.code + 7, back, 5));
	expect_int_eq(r.map[3].orig_off, 4);
	expect_int_eq(r.map[3].reloc_off, 4);
	check_equivalent(c, &r);
}

static void test_free_je_rel32(void)
{
	/* glibc free: test rdi,rdi; je free+0xc8; push rbp */
	static const uint8_t c[] = { 0x48, 0x85, 0xff, 0x0f, 0x84, 0xbf, 0x00, 0x00, 0x00, 0x55 };
	struct reloc_result r;
	struct dec d[4];

	expect_int_eq(reloc_prologue(c, sizeof(c), FROM, TO, &r), 0);
	expect_int_eq(r.covered, 9);
	expect_int_eq(r.code_len, 9 + 5);
	expect_int_eq(decode(r.code, r.code_len, TO, d, 4), 3);
	expect_str_eq(d[1].mnemonic, "je");
	expect_int_eq(d[1].size, 6);
	expect_u64_eq(d[1].target, FROM + 0xc8);
	check_equivalent(c, &r);
}

static void test_jcc_rel8(void)
{
	/* test rdi,rdi; jne +0x10; nop: the rel8 becomes 0f 85 rel32 */
	static const uint8_t c[] = { 0x48, 0x85, 0xff, 0x75, 0x10, 0x90 };
	struct reloc_result r;
	struct dec d[4];

	expect_int_eq(reloc_prologue(c, sizeof(c), FROM, TO, &r), 0);
	expect_int_eq(r.covered, 5);
	expect_int_eq(decode(r.code, r.code_len, TO, d, 4), 3);
	expect_str_eq(d[1].mnemonic, "jne");
	expect_int_eq(r.code[3], 0x0f);
	expect_int_eq(r.code[4], 0x85);
	expect_u64_eq(d[1].target, FROM + 5 + 0x10);
	check_equivalent(c, &r);
}

static void test_jmp_rel32_and_rel8(void)
{
	/* endbr64; jmp free@plt (libstdc++ operator delete) */
	static const uint8_t c[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0xe9, 0x00, 0x10, 0x00, 0x00 };
	/* xor eax,eax; mov ecx,1; jmp +0x20 */
	static const uint8_t c2[] = { 0x31, 0xc0, 0xb9, 0x01, 0, 0, 0, 0xeb, 0x20 };
	struct reloc_result r;
	struct dec d[4];

	expect_int_eq(reloc_prologue(c, sizeof(c), FROM, TO, &r), 0);
	expect_int_eq(r.skipped, 4);
	expect_int_eq(r.covered, 5);
	expect_int_eq(decode(r.code, r.code_len, TO, d, 4), 2);
	expect_u64_eq(d[0].target, FROM + 9 + 0x1000);
	check_equivalent(c, &r);

	expect_int_eq(reloc_prologue(c2, sizeof(c2), FROM, TO, &r), 0);
	expect_int_eq(r.covered, 7);
	check_equivalent(c2, &r);
}

static void test_riprel_cmpb(void)
{
	/* glibc posix_memalign: cmpb $0x0,0x140201(%rip); push r12 */
	static const uint8_t c[] = { 0x80, 0x3d, 0x01, 0x02, 0x14, 0x00, 0x00, 0x41, 0x54 };
	/* lea rax,[rip-0x100]; ret-free tail */
	static const uint8_t c2[] = { 0x48, 0x8d, 0x05, 0x00, 0xff, 0xff, 0xff, 0x90 };
	struct reloc_result r;
	struct dec d[4];

	expect_int_eq(reloc_prologue(c, sizeof(c), FROM, TO, &r), 0);
	expect_int_eq(r.covered, 7);
	expect_int_eq(decode(r.code, r.code_len, TO, d, 4), 2);
	expect_str_eq(d[0].mnemonic, "cmp");
	expect_true(d[0].riprel);
	expect_u64_eq(d[0].ea, FROM + 7 + 0x140201);
	expect_int_eq(r.code[6], 0);	/* the imm8 is untouched */
	check_equivalent(c, &r);

	/* the copy below the original: disp grows */
	expect_int_eq(reloc_prologue(c2, sizeof(c2), FROM, FROM - 0x7000000, &r), 0);
	expect_int_eq(decode(r.code, r.code_len, r.to, d, 4), 2);
	expect_u64_eq(d[0].ea, FROM + 7 - 0x100);
	check_equivalent(c2, &r);

	/* too far for disp32 */
	expect_int_eq(reloc_prologue(c, sizeof(c), FROM, FROM - 0x7ff00000ull, &r), -ERANGE);
	expect_true(strstr(r.why, "RIP-relative") != NULL);
}

static void test_endbr64(void)
{
	static const uint8_t c[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x41, 0x54, 0x55, 0x53,
				     0x48, 0x89, 0xfb };
	struct reloc_result r;

	expect_int_eq(reloc_prologue(c, sizeof(c), FROM, TO, &r), 0);
	expect_u64_eq(r.from, FROM);
	expect_u64_eq(r.patch_addr, FROM + 4);
	expect_int_eq(r.skipped, 4);
	expect_int_eq(r.covered, 7);
	expect_true(!memcmp(r.code, c + 4, 7));
	check_equivalent(c, &r);

	/* endbr64 then only 4 bytes: too short */
	expect_int_eq(reloc_prologue(c, 8, FROM, TO, &r), -EINVAL);
	expect_true(strstr(r.why, "shorter") != NULL);
}

static void test_branch_within_region(void)
{
	/* je +1 (to the second nop); nop; nop; nop */
	static const uint8_t c[] = { 0x74, 0x01, 0x90, 0x90, 0x90, 0x90 };
	/* je +2 lands in the middle of mov rbx,rdi */
	static const uint8_t bad[] = { 0x74, 0x02, 0x48, 0x89, 0xfb, 0x90 };
	struct reloc_result r;
	struct dec d[6];

	expect_int_eq(reloc_prologue(c, sizeof(c), FROM, TO, &r), 0);
	expect_int_eq(r.covered, 5);
	expect_int_eq(decode(r.code, r.code_len, TO, d, 6), 5);
	expect_u64_eq(d[0].target, TO + 7);	/* je6, nop@6, nop@7 */
	check_equivalent(c, &r);

	expect_int_eq(reloc_prologue(bad, sizeof(bad), FROM, TO, &r), -EINVAL);
	expect_str_eq(r.why, "+0x0: branch into the middle of an instruction");
}

static void expect_refused(const uint8_t *c, size_t n, const char *why_part, int line)
{
	struct reloc_result r;
	int rc = reloc_prologue(c, n, FROM, TO, &r);

	if (rc != -EINVAL || !strstr(r.why, why_part)) {
		fprintf(stderr, "%s:%d: rc %d why \"%s\", expected -EINVAL and \"%s\"\n",
			__FILE__, line, rc, r.why, why_part);
		harness_failed_checks++;
		harness_cur_failed = 1;
	}
	if (rc == -EINVAL)
		expect_int_eq(r.code_len, 0);
}

#define REFUSED(why, ...) do { static const uint8_t _c[] = { __VA_ARGS__ }; \
	expect_refused(_c, sizeof(_c), why, __LINE__); } while (0)

static void test_refusals(void)
{
	REFUSED("+0x0: call", 0xe8, 0x00, 0x10, 0x00, 0x00, 0x90);
	REFUSED("+0x3: syscall", 0x48, 0x89, 0xf8, 0x0f, 0x05, 0x90);
	REFUSED("+0x2: ret", 0x31, 0xc0, 0xc3, 0xcc, 0xcc, 0xcc);
	REFUSED("loop", 0x90, 0xe2, 0xfd, 0x90, 0x90, 0x90);
	REFUSED("jrcxz", 0xe3, 0x10, 0x90, 0x90, 0x90, 0x90);
	REFUSED("int3", 0xcc, 0x90, 0x90, 0x90, 0x90);
	REFUSED("int ", 0xcd, 0x80, 0x90, 0x90, 0x90);
	REFUSED("xbegin", 0xc7, 0xf8, 0x10, 0, 0, 0, 0x90);
	REFUSED("indirect jmp", 0xff, 0xe0, 0x90, 0x90, 0x90);
	REFUSED("indirect jmp", 0xff, 0x25, 0x10, 0, 0, 0);
	REFUSED("indirect call", 0x41, 0xff, 0xd3, 0x90, 0x90);
	REFUSED("jmp ends the function", 0xeb, 0x10, 0x90, 0x90, 0x90);
	REFUSED("cannot decode", 0x06, 0x90, 0x90, 0x90, 0x90, 0x90);
	REFUSED("shorter than 5", 0x31, 0xc0);
	/* the last instruction is cut by the end of the function */
	REFUSED("+0x3: cannot decode", 0x90, 0x90, 0x90, 0x48, 0x89);
}

static void test_call_flag(void)
{
	static const uint8_t c[] = { 0xe8, 0x00, 0x10, 0x00, 0x00, 0x90 };
	struct reloc_result r;
	struct dec d[3];

	expect_int_eq(reloc_prologue_flags(c, sizeof(c), FROM, TO, RELOC_ALLOW_CALL, &r), 0);
	expect_int_eq(decode(r.code, r.code_len, TO, d, 3), 2);
	expect_str_eq(d[0].mnemonic, "call");
	expect_u64_eq(d[0].target, FROM + 5 + 0x1000);
	check_equivalent(c, &r);
}

static void test_far_copy(void)
{
	static const uint8_t c[] = { 0x41, 0x54, 0x55, 0x53, 0x48, 0x89, 0xfb };
	struct reloc_result r;

	expect_int_eq(reloc_prologue(c, sizeof(c), FROM, FROM + (3ull << 30), &r), -ERANGE);
	expect_true(strstr(r.why, "out of +-2 GB") != NULL);
}

static void test_encode_jmp(void)
{
	uint8_t b[5];
	static const uint8_t want[] = { 0xe9, 0xfb, 0xff, 0xff, 0xff };	/* jmp . */

	expect_int_eq(reloc_encode_jmp(b, FROM, FROM), 0);
	expect_true(!memcmp(b, want, 5));
	expect_int_eq(reloc_encode_jmp(b, FROM, FROM + 5 + 0x7fffffff), 0);
	expect_int_eq(reloc_encode_jmp(b, FROM, FROM + 5 + 0x80000000ull), -ERANGE);
	expect_int_eq(reloc_encode_jmp(b, FROM, FROM + 5 - 0x80000000ull), 0);
	expect_int_eq(reloc_encode_jmp(b, FROM, FROM + 4 - 0x80000000ull), -ERANGE);
}

/* Decoding is encoding's inverse, both ways of the sign; only e9 is a jmp. */
static void test_decode_jmp(void)
{
	static const uint8_t call[] = { 0xe8, 0, 0, 0, 0 };
	uint8_t b[5];
	uint64_t to = 0;

	expect_int_eq(reloc_encode_jmp(b, FROM, FROM + 5 + 0x7fffffff), 0);
	expect_int_eq(reloc_decode_jmp(b, FROM, &to), 0);
	expect_u64_eq(to, FROM + 5 + 0x7fffffff);
	expect_int_eq(reloc_encode_jmp(b, FROM, FROM - 0x1000), 0);
	expect_int_eq(reloc_decode_jmp(b, FROM, &to), 0);
	expect_u64_eq(to, FROM - 0x1000);
	expect_int_eq(reloc_decode_jmp(call, FROM, &to), -EINVAL);
}

static void test_patch_skip(void)
{
	static const uint8_t endbr[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0xe9, 0, 0, 0, 0 };
	static const uint8_t plain[] = { 0x55, 0x48, 0x89, 0xe5 };

	expect_int_eq(reloc_patch_skip(endbr, sizeof(endbr)), 4);
	expect_int_eq(reloc_patch_skip(endbr, 3), 0);
	expect_int_eq(reloc_patch_skip(plain, sizeof(plain)), 0);
}

static void test_map_ip(void)
{
	/* endbr64; je rel8 (2 -> 6 bytes); mov rbx,rdi at patch+2 -> copy+6 */
	static const uint8_t c[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x74, 0x10, 0x48, 0x89, 0xfb };
	uint64_t ip = 0;
	struct reloc_result r;

	expect_int_eq(reloc_prologue(c, sizeof(c), FROM, TO, &r), 0);
	expect_int_eq(reloc_map_ip(&r, FROM + 4, &ip), -ENOENT);
	expect_int_eq(reloc_map_ip(&r, FROM, &ip), -ENOENT);
	expect_int_eq(reloc_map_ip(&r, FROM + 6, &ip), 0);
	expect_u64_eq(ip, TO + 6);
	expect_int_eq(reloc_map_ip(&r, FROM + 7, &ip), -EINVAL);
	expect_int_eq(reloc_map_ip(&r, FROM + 9, &ip), -ENOENT);
}

static void test_map_back(void)
{
	/* the same: endbr64 kept; je rel8 at copy+0 (6 bytes), mov at copy+6,
	 * the jmp back at copy+9 */
	static const uint8_t c[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x74, 0x10, 0x48, 0x89, 0xfb };
	uint64_t ip = 0;
	struct reloc_result r;

	expect_int_eq(reloc_prologue(c, sizeof(c), FROM, TO, &r), 0);
	expect_int_eq(reloc_map_back(&r, TO, &ip), 0);
	expect_u64_eq(ip, FROM + 4);
	expect_int_eq(reloc_map_back(&r, TO + 6, &ip), 0);
	expect_u64_eq(ip, FROM + 6);
	expect_int_eq(reloc_map_back(&r, TO + 9, &ip), 0);
	expect_u64_eq(ip, FROM + 9);			/* after the covered bytes */
	expect_int_eq(reloc_map_back(&r, TO + 3, &ip), -EINVAL);
	expect_int_eq(reloc_map_back(&r, TO + r.code_len, &ip), -ENOENT);
	expect_int_eq(reloc_map_back(&r, TO - 1, &ip), -ENOENT);
}

static void test_branch_into(void)
{
	/* test rdi,rdi; je +0x10; [+9] ... jmp back to +3 (into the region) */
	static const uint8_t c[] = { 0x48, 0x85, 0xff, 0x0f, 0x84, 0x10, 0, 0, 0,
				     0x90, 0x90, 0xeb, 0xf6, 0xc3 };
	/* same, but the loop goes to +0 and +9 only: allowed */
	static const uint8_t ok[] = { 0x48, 0x85, 0xff, 0x0f, 0x84, 0x10, 0, 0, 0,
				      0x90, 0x90, 0xeb, 0xf3, 0x74, 0xfa, 0xc3 };
	uint64_t where = 0;

	expect_int_eq(reloc_branch_into(c, sizeof(c), FROM, FROM, FROM + 9, &where), 1);
	expect_u64_eq(where, FROM + 11);
	expect_int_eq(reloc_branch_into(ok, sizeof(ok), FROM, FROM, FROM + 9, &where), 0);
	expect_int_eq(reloc_branch_into((const uint8_t *)"\x90\x06", 2, FROM, FROM, FROM + 9,
					&where), -EINVAL);
	expect_u64_eq(where, FROM + 1);
}

/* ---- this machine's libc ---- */

static const char *const libc_names[] = {
	"malloc", "free", "calloc", "realloc", "posix_memalign",
	"memalign", "aligned_alloc", "valloc", "pvalloc",
};

/* Bytes covered on Debian 12's glibc 2.36 (docs/design.md §1). */
static const int libc_236_covered[] = { 7, 9, 5, 6, 7, 7, 7, 7, 7 };

static void test_libc_prologues(void)
{
	bool is_236 = !strcmp(gnu_get_libc_version(), "2.36");

	for (size_t i = 0; i < sizeof(libc_names) / sizeof(libc_names[0]); i++) {
		const uint8_t *f;
		struct reloc_result r;
		uint64_t where = 0;
		size_t size;
		int rc;

		if (libc_func(libc_names[i], &f, &size)) {
			fprintf(stderr, "%s: not found in libc\n", libc_names[i]);
			expect_true(0);
			continue;
		}
		expect_true(size >= 16);
		rc = reloc_prologue(f, size, (uintptr_t)f, (uintptr_t)f + 0x100000, &r);
		if (rc)
			fprintf(stderr, "%s%s\n", libc_names[i], r.why);
		expect_int_eq(rc, 0);
		if (rc)
			continue;
		if (is_236)
			expect_int_eq(r.covered, libc_236_covered[i]);
		check_equivalent(f, &r);
		rc = reloc_branch_into(f, size, (uintptr_t)f, r.patch_addr,
				       r.patch_addr + r.covered, &where);
		if (rc)
			fprintf(stderr, "%s: branch_into %d at +0x%llx\n", libc_names[i], rc,
				(unsigned long long)(where - (uintptr_t)f));
		expect_int_eq(rc, 0);
	}
}

/*
 * Every function of libc's .dynsym: either it relocates to an equivalent
 * copy, or it is refused with -EINVAL and a reason.  Also sweeps each body
 * for branches into its patch region.  Prints a tally.
 */
static void test_libc_sweep(void)
{
	int ok = 0, refused = 0, other = 0, into = 0, undecodable = 0;
	const uint8_t *m;
	Dl_info info;
	Elf_Scn *scn = NULL;
	Elf *elf = NULL;
	size_t msize;
	int fd = -1;

	if (libc_func("malloc", &m, &msize) || !dladdr(m, &info)) {
		expect_true(0);
		return;
	}
	elf_version(EV_CURRENT);
	fd = open(info.dli_fname, O_RDONLY);
	elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	expect_true(elf != NULL);
	while (elf && (scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
			const uint8_t *f;
			struct reloc_result r;
			uint64_t where;
			GElf_Sym sym;
			int rc, failed;

			if (!gelf_getsym(data, i, &sym) || sym.st_shndx == SHN_UNDEF ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_size == 0)
				continue;
			f = (const uint8_t *)info.dli_fbase + sym.st_value;
			rc = reloc_prologue(f, sym.st_size, (uintptr_t)f,
					    (uintptr_t)f + 0x100000, &r);
			if (rc == -EINVAL && r.why[0]) {
				refused++;
				continue;
			}
			if (rc) {
				other++;
				continue;
			}
			failed = harness_failed_checks;
			check_equivalent(f, &r);
			if (harness_failed_checks != failed)
				fprintf(stderr, "  in %s\n",
					elf_strptr(elf, sh.sh_link, sym.st_name));
			ok++;
			rc = reloc_branch_into(f, sym.st_size, (uintptr_t)f, r.patch_addr,
					       r.patch_addr + r.covered, &where);
			into += rc == 1;
			undecodable += rc < 0;
		}
	}
	printf("libc sweep: %d relocated (%d with a branch into the patch, %d not fully "
	       "decodable), %d refused, %d other errors\n",
	       ok, into, undecodable, refused, other);
	expect_true(ok > 1000);
	expect_int_eq(other, 0);
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
}

/* ---- executing relocated copies of libc's prologues ---- */

/* Relocate libc's name to page+*off, copy it there, return its address. */
static void *relocated(const char *name, uint8_t *page, size_t *off)
{
	struct reloc_result r;
	const uint8_t *f;
	uint8_t *at = page + *off;
	size_t size;

	if (libc_func(name, &f, &size))
		return NULL;
	if (reloc_prologue(f, size, (uintptr_t)f, (uintptr_t)at, &r)) {
		fprintf(stderr, "%s%s\n", name, r.why);
		return NULL;
	}
	memcpy(at, r.code, r.code_len);
	*off += (r.code_len + 15) & ~(size_t)15;
	return at;
}

static void test_execute_relocated(void)
{
	void *(*rmalloc)(size_t);
	void (*rfree)(void *);
	void *(*rcalloc)(size_t, size_t);
	void *(*rrealloc)(void *, size_t);
	int (*rposix_memalign)(void **, size_t, size_t);
	void *(*rmemalign)(size_t, size_t);
	void *(*raligned_alloc)(size_t, size_t);
	void *(*rvalloc)(size_t);
	void *(*rpvalloc)(size_t);
	void (*lfree)(void *) = libc_sym("free");
	size_t (*lusable)(void *) = libc_sym("malloc_usable_size");
	uint8_t *page = near_page(4096);
	size_t off = 0;
	void *p = NULL;
	uint8_t *m, *c;

	if (!page) {
		printf("note: no RWX page near libc, execution test skipped\n");
		return;
	}
	rmalloc = relocated("malloc", page, &off);
	rfree = relocated("free", page, &off);
	rcalloc = relocated("calloc", page, &off);
	rrealloc = relocated("realloc", page, &off);
	rposix_memalign = relocated("posix_memalign", page, &off);
	rmemalign = relocated("memalign", page, &off);
	raligned_alloc = relocated("aligned_alloc", page, &off);
	rvalloc = relocated("valloc", page, &off);
	rpvalloc = relocated("pvalloc", page, &off);
	expect_true(rmalloc && rfree && rcalloc && rrealloc && rposix_memalign &&
		    rmemalign && raligned_alloc && rvalloc && rpvalloc);
	if (!(rmalloc && rfree && rcalloc && rrealloc && rposix_memalign &&
	      rmemalign && raligned_alloc && rvalloc && rpvalloc))
		goto out;

	m = rmalloc(100);
	expect_true(m != NULL);
	memset(m, 0xab, 100);
	expect_true(lusable(m) >= 100);
	rfree(m);
	rfree(NULL);	/* takes free's relocated je */

	c = rcalloc(10, 10);
	expect_true(c != NULL);
	for (int i = 0; c && i < 100; i++)
		expect_int_eq(c[i], 0);
	memset(c, 0x5c, 100);
	c = rrealloc(c, 100000);
	expect_true(c != NULL);
	for (int i = 0; c && i < 100; i++)
		expect_int_eq(c[i], 0x5c);
	rfree(c);

	expect_int_eq(rposix_memalign(&p, 64, 100), 0);
	expect_int_eq((uintptr_t)p % 64, 0);
	lfree(p);
	expect_int_eq(rposix_memalign(&p, 3, 100), EINVAL);
	p = rmemalign(4096, 10);
	expect_true(p && (uintptr_t)p % 4096 == 0);
	lfree(p);
	p = raligned_alloc(256, 512);
	expect_true(p && (uintptr_t)p % 256 == 0);
	lfree(p);
	p = rvalloc(10);
	expect_true(p && (uintptr_t)p % 4096 == 0);
	lfree(p);
	p = rpvalloc(10);
	expect_true(p && (uintptr_t)p % 4096 == 0 && lusable(p) >= 4096 - 16);
	lfree(p);
out:
	munmap(page, 4096);
}

/*
 * libstdc++'s operator new/delete: endbr64 then real code or a tail jmp to
 * the PLT.  Relocated copies of new and delete are executed when a page
 * within reach exists.
 */
static void test_libstdcxx(void)
{
	static const char *const ok[] = { "_Znwm", "_Znam", "_ZdlPv", "_ZdaPv", "_ZdlPvm" };
	void *(*rnew)(size_t);
	void (*rdelete)(void *);
	void *h = dlopen("libstdc++.so.6", RTLD_NOW);
	struct reloc_result r;
	const uint8_t *f;
	uint8_t *page;
	uint8_t *p;

	if (!h) {
		printf("note: no libstdc++.so.6, test skipped\n");
		return;
	}
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		f = dlsym(h, ok[i]);
		expect_true(f != NULL);
		if (!f)
			continue;
		expect_int_eq(reloc_prologue(f, 32, (uintptr_t)f, (uintptr_t)f + 0x100000, &r), 0);
		expect_int_eq(r.skipped, 4);
		check_equivalent(f, &r);
	}
	/* sub rsp,8; call malloc: refused */
	f = dlsym(h, "_ZnwmRKSt9nothrow_t");
	if (f) {
		expect_int_eq(reloc_prologue(f, 32, (uintptr_t)f, (uintptr_t)f + 0x100000, &r),
			      -EINVAL);
		expect_true(strstr(r.why, "+0x8: call") == r.why);
	}

	page = near_page(4096);
	f = dlsym(h, "_Znwm");
	if (!page || !f || (uintptr_t)f - (uintptr_t)page + (1ull << 30) > (2ull << 30)) {
		printf("note: no RWX page near libstdc++, execution skipped\n");
		goto out;
	}
	expect_int_eq(reloc_prologue(f, 32, (uintptr_t)f, (uintptr_t)page, &r), 0);
	memcpy(page, r.code, r.code_len);
	rnew = (void *(*)(size_t))page;
	f = dlsym(h, "_ZdlPv");
	expect_int_eq(reloc_prologue(f, 32, (uintptr_t)f, (uintptr_t)page + 64, &r), 0);
	memcpy(page + 64, r.code, r.code_len);
	rdelete = (void (*)(void *))(page + 64);
	p = rnew(48);
	expect_true(p != NULL);
	memset(p, 1, 48);
	rdelete(p);
out:
	if (page)
		munmap(page, 4096);
}

HARNESS_MAIN("reloc",
	T(test_plain_pushes), T(test_free_je_rel32), T(test_jcc_rel8),
	T(test_jmp_rel32_and_rel8), T(test_riprel_cmpb), T(test_endbr64),
	T(test_branch_within_region), T(test_refusals), T(test_call_flag),
	T(test_far_copy), T(test_encode_jmp), T(test_decode_jmp),
	T(test_patch_skip), T(test_map_ip), T(test_map_back), T(test_branch_into),
	T(test_libc_prologues), T(test_libc_sweep), T(test_execute_relocated),
	T(test_libstdcxx))
