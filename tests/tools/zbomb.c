/* Test tool: compressed ELF sections that inflate to far more than they hold (zlib bombs), and SHF_COMPRESSED set on a section. */
/* SPDX-License-Identifier: MIT */
/*
 * usage: zbomb section gabi|gnu MIB OUT
 *        zbomb flag FILE SECTION
 *
 * section: writes to OUT the contents of a compressed section that
 * inflates to MIB MiB of zeros: with an Elf64_Chdr (gabi, for a section
 * that carries SHF_COMPRESSED) or the GNU "ZLIB" + 8-byte big-endian size
 * header (gnu, for a .zdebug_* section). The zlib stream is one 1 MiB
 * chunk of zeros deflated with a full flush, repeated (a full flush
 * resets the compressor, so every chunk after the first compresses to the
 * same bytes), an empty final block and the Adler-32 of the whole: a
 * stream of MIB KiB or so, made in no time, a ratio just under the 1032:1
 * that libelf accepts.
 *
 * flag: sets SHF_COMPRESSED in the header of section SECTION of FILE (a
 * 64-bit little-endian ELF file), in place. objcopy --add-section puts the
 * bytes there; no objcopy option sets that flag.
 *
 * Exit 0, or 1 with a message.
 */
#include <elf.h>
#include <endian.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define CHUNK (1u << 20)

static int die(const char *what)
{
	fprintf(stderr, "zbomb: %s\n", what);
	return 1;
}

/* Deflate one chunk of zeros with a full flush into out (cap bytes); its length. */
static size_t deflate_chunk(z_stream *z, const unsigned char *zeros, unsigned char *out,
			    size_t cap)
{
	z->next_in = (unsigned char *)zeros;
	z->avail_in = CHUNK;
	z->next_out = out;
	z->avail_out = (uInt)cap;
	if (deflate(z, Z_FULL_FLUSH) != Z_OK || z->avail_in || !z->avail_out)
		return 0;
	return cap - z->avail_out;
}

static int section(const char *kind, unsigned long mib, const char *path)
{
	size_t cap = 2 * CHUNK, la, lb, lc;
	unsigned char *zeros = calloc(1, CHUNK), *a = malloc(cap), *b = malloc(cap),
		      *c = malloc(cap);
	uLong adler = adler32(0, NULL, 0), one;
	uint64_t size = (uint64_t)mib << 20;
	unsigned char tail[6];
	z_stream z;
	FILE *f;

	if (!zeros || !a || !b || !c || mib < 3)
		return die("out of memory, or fewer than 3 MiB");
	memset(&z, 0, sizeof(z));
	if (deflateInit(&z, 9) != Z_OK)
		return die("deflateInit");
	la = deflate_chunk(&z, zeros, a, cap);
	lb = deflate_chunk(&z, zeros, b, cap);
	lc = deflate_chunk(&z, zeros, c, cap);
	deflateEnd(&z);
	if (!la || !lb || lb != lc || memcmp(b, c, lb))
		return die("chunks after a full flush differ");
	one = adler32(adler, zeros, CHUNK);
	for (unsigned long i = 0; i < mib; i++)
		adler = adler32_combine(adler, one, CHUNK);
	f = fopen(path, "wb");
	if (!f)
		return die(path);
	if (!strcmp(kind, "gabi")) {
		Elf64_Chdr ch = { .ch_type = ELFCOMPRESS_ZLIB, .ch_size = size, .ch_addralign = 1 };

		fwrite(&ch, sizeof(ch), 1, f);
	} else {
		uint64_t be = htobe64(size);

		fwrite("ZLIB", 4, 1, f);
		fwrite(&be, 8, 1, f);
	}
	fwrite(a, la, 1, f);
	for (unsigned long i = 1; i < mib; i++)
		fwrite(b, lb, 1, f);
	/* an empty final block with fixed codes (BFINAL 1, BTYPE 01, code 256) */
	tail[0] = 0x03;
	tail[1] = 0x00;
	tail[2] = (unsigned char)(adler >> 24);
	tail[3] = (unsigned char)(adler >> 16);
	tail[4] = (unsigned char)(adler >> 8);
	tail[5] = (unsigned char)adler;
	fwrite(tail, sizeof(tail), 1, f);
	if (fclose(f))
		return die(path);
	free(zeros);
	free(a);
	free(b);
	free(c);
	return 0;
}

static int flag(const char *path, const char *name)
{
	FILE *f = fopen(path, "r+b");
	Elf64_Ehdr eh;
	Elf64_Shdr sh, strsh;
	char *names = NULL;
	int ret = 1;

	if (!f)
		return die(path);
	if (fread(&eh, sizeof(eh), 1, f) != 1 || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_shentsize != sizeof(sh) || eh.e_shstrndx >= eh.e_shnum) {
		die("not a 64-bit little-endian ELF file with sections");
		goto out;
	}
	if (fseek(f, (long)(eh.e_shoff + eh.e_shstrndx * sizeof(sh)), SEEK_SET) ||
	    fread(&strsh, sizeof(strsh), 1, f) != 1 || !(names = calloc(1, strsh.sh_size + 1)) ||
	    fseek(f, (long)strsh.sh_offset, SEEK_SET) ||
	    fread(names, strsh.sh_size, 1, f) != 1) {
		die("cannot read the section names");
		goto out;
	}
	for (unsigned i = 0; i < eh.e_shnum; i++) {
		long at = (long)(eh.e_shoff + i * sizeof(sh));

		if (fseek(f, at, SEEK_SET) || fread(&sh, sizeof(sh), 1, f) != 1)
			break;
		if (sh.sh_name >= strsh.sh_size || strcmp(names + sh.sh_name, name))
			continue;
		sh.sh_flags |= SHF_COMPRESSED;
		sh.sh_flags &= ~(uint64_t)SHF_ALLOC;
		sh.sh_addralign = 8;
		if (fseek(f, at, SEEK_SET) || fwrite(&sh, sizeof(sh), 1, f) != 1)
			break;
		ret = 0;
		break;
	}
	if (ret)
		die("no such section");
out:
	free(names);
	if (fclose(f))
		ret = die(path);
	return ret;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "section") &&
	    (!strcmp(argv[2], "gabi") || !strcmp(argv[2], "gnu")))
		return section(argv[2], strtoul(argv[3], NULL, 10), argv[4]);
	if (argc == 4 && !strcmp(argv[1], "flag"))
		return flag(argv[2], argv[3]);
	fprintf(stderr, "usage: zbomb section gabi|gnu MIB OUT\n       zbomb flag FILE SECTION\n");
	return 2;
}
