// SPDX-License-Identifier: MIT
/*
 * test-catalog - the catalog read from the real cubins of this build, and
 * the note parser on good and bad notes.  Needs no GPU.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "check.h"

static const char *kernel_dir(void)
{
	const char *d = getenv("GEMMD_KERNEL_DIR");

	return d ? d : "kernels";
}

/* A v2 note, as kernels/common.cuh's GEMMD_KERNEL_NOTE writes it. */
static void test_note_v2(void)
{
	struct kernel_info k;
	json_t *j;

	CHECK_EQ_INT(kernel_info_parse(
			     "kernel=gemmd_cooperative_bf16_tn_128x256x64 "
			     "schedule=cooperative dtype=bf16 layout=tn "
			     "tile=128x256x64 threads=384 smem_fixed=2048 "
			     "smem_stage=49152 min_stages=2 max_stages=4 "
			     "cluster=8 persistent=1 pdl=1 epilogue=direct,tma "
			     "smem_epilogue=32768 out=bf16,fp16,fp32 "
			     "arch=sm_90a",
			     "gemmd_cooperative_bf16_tn_128x256x64.cubin", &k),
		     0);
	CHECK_EQ_INT(k.schedule, GEMM_SCHEDULE_COOPERATIVE);
	CHECK_EQ_INT(k.cluster_max, 8);
	CHECK(k.persistent);
	CHECK(k.pdl);
	CHECK_EQ_INT(k.epilogues, KERNEL_BIT(GEMM_EPILOGUE_DIRECT) |
					  KERNEL_BIT(GEMM_EPILOGUE_TMA));
	CHECK_EQ_INT(k.smem_epilogue, 32768);
	CHECK_EQ_INT(k.outs, KERNEL_BIT(GEMM_DTYPE_BF16) |
				     KERNEL_BIT(GEMM_DTYPE_FP16) |
				     KERNEL_BIT(GEMM_DTYPE_FP32));
	CHECK_STREQ(k.arch, "sm_90a");
	CHECK(!kernel_is_sm80(&k));

	j = kernel_info_to_json(&k);
	CHECK(j != NULL);
	CHECK_EQ_INT(json_integer_value(json_object_get(j, "cluster_max")), 8);
	CHECK(json_is_true(json_object_get(j, "persistent")));
	CHECK(json_is_true(json_object_get(j, "pdl")));
	CHECK_EQ_INT(json_array_size(json_object_get(j, "epilogues")), 2);
	CHECK_STREQ(json_string_value(
			    json_array_get(json_object_get(j, "epilogues"), 1)),
		    "tma");
	CHECK_EQ_INT(json_array_size(json_object_get(j, "outs")), 3);
	CHECK_STREQ(json_string_value(
			    json_array_get(json_object_get(j, "outs"), 2)),
		    "fp32");
	CHECK_EQ_INT(json_integer_value(json_object_get(j, "smem_epilogue")),
		     32768);
	CHECK_STREQ(json_string_value(json_object_get(j, "arch")), "sm_90a");
	/* not in the note: cooperative, so stream-K too */
	CHECK_EQ_INT(json_array_size(json_object_get(j, "decompositions")), 2);
	CHECK_STREQ(json_string_value(json_array_get(
			    json_object_get(j, "decompositions"), 0)),
		    "data_parallel");
	CHECK_STREQ(json_string_value(json_array_get(
			    json_object_get(j, "decompositions"), 1)),
		    "stream_k");
	json_decref(j);

	/* every schedule and layout name */
	CHECK_EQ_INT(kernel_info_parse("kernel=a schedule=multistage "
				       "dtype=fp16 layout=nt tile=128x128x32 "
				       "threads=128 smem_stage=16384 "
				       "min_stages=2 max_stages=5 cluster=1 "
				       "persistent=0 arch=sm_80",
				       "a.cubin", &k),
		     0);
	CHECK_EQ_INT(k.schedule, GEMM_SCHEDULE_MULTISTAGE);
	CHECK_EQ_INT(k.layout, GEMM_LAYOUT_NT);
	CHECK(!k.persistent);
	CHECK(kernel_is_sm80(&k));
	/* defaults: the direct epilogue only, the input type out */
	CHECK_EQ_INT(k.epilogues, KERNEL_BIT(GEMM_EPILOGUE_DIRECT));
	CHECK_EQ_INT(k.outs, KERNEL_BIT(GEMM_DTYPE_FP16));
	/* whole tiles only, as every schedule but cooperative */
	j = kernel_info_to_json(&k);
	CHECK_EQ_INT(json_array_size(json_object_get(j, "decompositions")), 1);
	CHECK_STREQ(json_string_value(json_array_get(
			    json_object_get(j, "decompositions"), 0)),
		    "data_parallel");
	json_decref(j);

	/* bad v2 values spoil the note */
#define NOTE                                                            \
	"kernel=a schedule=pingpong tile=1x1x1 threads=1 smem_stage=1 " \
	"min_stages=1 max_stages=1 "
	CHECK_EQ_INT(kernel_info_parse(NOTE "cluster=16", "x", &k), 0);
	CHECK(kernel_info_parse(NOTE "cluster=0", "x", &k) < 0);
	CHECK(kernel_info_parse(NOTE "cluster=17", "x", &k) < 0);
	CHECK(kernel_info_parse(NOTE "cluster=4x8", "x", &k) < 0);
	CHECK(kernel_info_parse(NOTE "cluster=65536x65536", "x", &k) < 0);
	CHECK(kernel_info_parse(NOTE "persistent=2", "x", &k) < 0);
	CHECK(kernel_info_parse(NOTE "pdl=yes", "x", &k) < 0);
	CHECK(kernel_info_parse(NOTE "epilogue=direct,smem", "x", &k) < 0);
	CHECK(kernel_info_parse(NOTE "epilogue=,", "x", &k) < 0);
	CHECK(kernel_info_parse(NOTE "out=bf16,fp64", "x", &k) < 0);
	CHECK(kernel_info_parse(NOTE "smem_epilogue=-1", "x", &k) < 0);
	CHECK_EQ_INT(
		kernel_info_parse(NOTE "smem_epilogue=2147483647", "x", &k), 0);
	CHECK(kernel_info_parse(NOTE "smem_epilogue=2147483648", "x", &k) < 0);
	CHECK(kernel_info_parse(NOTE "threads=4294967295", "x", &k) < 0);
	CHECK(kernel_info_parse(NOTE "arch=90", "x", &k) < 0);
	CHECK(kernel_info_parse(NOTE "arch=sm_", "x", &k) < 0);
	CHECK(kernel_info_parse(NOTE "dtype=fp32", "x", &k) < 0);
#undef NOTE
}

/* A v1 note: the first ws kernels, "cluster=1x1" and a single "out". */
static void test_note_parse(void)
{
	struct kernel_info k;

	CHECK_EQ_INT(kernel_info_parse(
			     "kernel=gemmd_ws_bf16_tn_128x256x64 schedule=ws "
			     "dtype=bf16 layout=tn tile=128x256x64 threads=384 "
			     "smem_fixed=2048 smem_stage=49152 min_stages=2 "
			     "max_stages=4 cluster=1x1 out=bf16 future=ignored",
			     "gemm_ws.cubin", &k),
		     0);
	CHECK_STREQ(k.name, "gemmd_ws_bf16_tn_128x256x64");
	CHECK_STREQ(k.cubin, "gemm_ws.cubin");
	CHECK_EQ_INT(k.tile.n, 256);
	CHECK_EQ_INT(k.threads, 384);
	CHECK_EQ_INT(k.smem_stage, 49152);
	CHECK_EQ_INT(k.max_stages, 4);
	CHECK_EQ_INT(k.cluster_max, 1);
	CHECK_EQ_INT(k.outs, KERNEL_BIT(GEMM_DTYPE_BF16));
	CHECK_EQ_INT(k.epilogues, KERNEL_BIT(GEMM_EPILOGUE_DIRECT));
	CHECK(!k.persistent);
	CHECK_STREQ(k.arch, "sm_90a");
	CHECK_EQ_INT(kernel_info_parse("kernel=a schedule=ws tile=1x1x1 "
				       "threads=1 smem_stage=1 min_stages=1 "
				       "max_stages=1 cluster=2x4",
				       "x", &k),
		     0);
	CHECK_EQ_INT(k.cluster_max, 8);

	/* missing essentials, bad values, unknown schedules */
	CHECK(kernel_info_parse("schedule=ws tile=1x1x1", "x", &k) < 0);
	CHECK(kernel_info_parse("kernel=a schedule=nope tile=1x1x1 threads=1 "
				"smem_stage=1 min_stages=1 max_stages=1",
				"x", &k) < 0);
	CHECK(kernel_info_parse("kernel=a schedule=ws tile=1x1x1 threads=x "
				"smem_stage=1 min_stages=1 max_stages=1",
				"x", &k) < 0);
	CHECK(kernel_info_parse("kernel=a schedule=ws tile=1x1x1 threads=1 "
				"smem_stage=1 min_stages=3 max_stages=2",
				"x", &k) < 0);
	CHECK(kernel_info_parse("garbage", "x", &k) < 0);
}

/*
 * The real cubins, one kernel per file or many: every note parses into a
 * kernel of its own file with sane limits, and there is a ws kernel.
 */
static void test_real_cubins(void)
{
	struct catalog *c = NULL;
	const struct kernel_info *k;
	unsigned int ws = 0;
	size_t i;
	json_t *j;

	/* The catalog names each note it cannot read (test_bad_note). */
	CHECK_EQ_INT(catalog_load(kernel_dir(), &c), 0);
	CHECK(catalog_size(c) >= 1);
	/* a note the daemon cannot read hides its kernel: a build bug */
	CHECK_EQ_INT(catalog_bad_notes(c), 0);
	for (i = 0; i < catalog_size(c); i++) {
		unsigned int fixed;

		k = catalog_get(c, i);
		fixed = k->smem_fixed +
			((k->epilogues & KERNEL_BIT(GEMM_EPILOGUE_TMA)) ?
				 k->smem_epilogue :
				 0);
		CHECK(!strncmp(k->name, "gemmd_", 6));
		CHECK(strlen(k->cubin) > 6);
		CHECK(k->threads % 128 == 0);
		CHECK(k->min_stages >= 1);
		CHECK(k->cluster_max >= 1 && k->cluster_max <= 16);
		CHECK(k->outs & KERNEL_BIT(k->dtype));
		CHECK(k->epilogues != 0);
		/* the fewest stages fit, with either epilogue */
		if (fixed + k->min_stages * k->smem_stage > 232448) {
			fprintf(stderr, "  %s: %u stages do not fit\n", k->name,
				k->min_stages);
			CHECK(0);
		}
		ws += k->schedule == GEMM_SCHEDULE_WS;
		/* built with -gencode ...,code=sm_90a (configure.ac) */
		CHECK_EQ_INT(k->sm, 90);
		/* stream-K is listed for the cooperative kernels only */
		j = kernel_info_to_json(k);
		CHECK_STREQ(json_string_value(json_object_get(j, "built_for")),
			    "sm_90");
		CHECK_EQ_INT(
			json_array_size(json_object_get(j, "decompositions")),
			k->schedule == GEMM_SCHEDULE_COOPERATIVE ? 2 : 1);
		json_decref(j);
	}
	CHECK(ws >= 1);
	k = catalog_find(c, "gemmd_ws_bf16_tn_128x256x64");
	if (k) {
		CHECK_EQ_INT(k->tile.m, 128);
		CHECK_EQ_INT(k->smem_stage, (128 + 256) * 64 * 2);
	}
	/* The reference cubin has kernels but no notes: nothing listed. */
	CHECK(catalog_find(c, "gemmd_ref_bf16_tn") == NULL);
	catalog_free(c);
}

/* A cubin of the kernel directory that holds a note, for test_corrupt. */
static int find_cubin(char *path, size_t len)
{
	struct dirent *de;
	DIR *d = opendir(kernel_dir());
	int r = -ENOENT;

	if (!d)
		return -errno;
	while (r < 0 && (de = readdir(d))) {
		struct catalog *c;
		size_t n = strlen(de->d_name);

		if (n <= 6 || strcmp(de->d_name + n - 6, ".cubin"))
			continue;
		snprintf(path, len, "%s/%s", kernel_dir(), de->d_name);
		c = catalog_new();
		if (c && catalog_read_cubin(c, path) > 0)
			r = 0;
		catalog_free(c);
	}
	closedir(d);
	return r;
}

/*
 * data[0, cut) as a cubin of its own: what catalog_read_cubin() makes of
 * it, and in *sm (when not NULL) the SM version of its first kernel.
 */
static int read_cut_sm(const unsigned char *data, size_t cut, unsigned int *sm)
{
	char dst[PATH_MAX];
	struct catalog *c = catalog_new();
	int fd, r;

	check_tmp_path(dst, sizeof(dst), "gemmd-test-XXXXXX.cubin");
	fd = mkstemps(dst, 6);
	CHECK(fd >= 0);
	if (fd < 0)
		return -errno;
	if (write(fd, data, cut) != (ssize_t)cut)
		CHECK(0);
	close(fd);
	r = catalog_read_cubin(c, dst);
	if (sm)
		*sm = r > 0 ? catalog_get(c, 0)->sm : 0;
	unlink(dst);
	catalog_free(c);
	return r;
}

static int read_cut(const unsigned char *data, size_t cut)
{
	return read_cut_sm(data, cut, NULL);
}

/* A whole cubin of the kernel directory with a note, in *n bytes. */
static unsigned char *load_cubin(size_t *n)
{
	unsigned char *buf;
	char src[4096];
	struct stat st;
	int fd;

	CHECK_EQ_INT(find_cubin(src, sizeof(src)), 0);
	fd = open(src, O_RDONLY);
	CHECK(fd >= 0);
	if (fd < 0)
		return NULL;
	CHECK_EQ_INT(fstat(fd, &st), 0);
	*n = (size_t)st.st_size;
	buf = malloc(*n);
	CHECK(buf && read(fd, buf, *n) == (ssize_t)*n);
	close(fd);
	if (buf && *n >= sizeof(Elf64_Ehdr))
		return buf;
	CHECK(0);
	free(buf);
	return NULL;
}

/*
 * A truncated cubin is refused, never crashes the reader: cut anywhere
 * before the end of its section headers (the last thing the reader
 * needs), at points over the whole file and all through those headers.
 * What only follows them (program headers) it may do without.
 */
static void test_corrupt(void)
{
	const Elf64_Ehdr *eh;
	struct catalog *c;
	unsigned char *buf;
	size_t n = 0, cut, sh_end;

	buf = load_cubin(&n);
	if (!buf)
		return;
	/* the whole file is read: its note is there */
	CHECK_EQ_INT(read_cut(buf, n), 1);
	eh = (const Elf64_Ehdr *)buf;
	sh_end = eh->e_shoff + (size_t)eh->e_shnum * sizeof(Elf64_Shdr);
	CHECK(eh->e_shnum > 1 && sh_end <= n);
	for (cut = 1; cut < sh_end; cut += sh_end / 37 + 1)
		CHECK(read_cut(buf, cut) <= 0);
	/* through the section headers, at every offset within an entry */
	for (cut = eh->e_shoff; cut < sh_end; cut += sizeof(Elf64_Shdr) + 8)
		CHECK(read_cut(buf, cut) <= 0);
	CHECK(read_cut(buf, sh_end - 1) <= 0);
	free(buf);
	CHECK(read_cut((const unsigned char *)"", 0) < 0);
	c = catalog_new();
	CHECK(catalog_read_cubin(c, "/nonexistent.cubin") == -ENOENT);
	catalog_free(c);
}

/*
 * A note whose section offset and value each take 2^63 more: their sum
 * wraps back to where the note is, but the section is not in the file,
 * so the note is not read (nor anything that the wrapped sum points at).
 */
static void test_wrapped_offset(void)
{
	const uint64_t half = 1ull << 63;
	Elf64_Shdr *sh, *strtab;
	unsigned char *buf;
	Elf64_Ehdr *eh;
	Elf64_Sym *syms;
	size_t n = 0, i, j, moved = 0;

	buf = load_cubin(&n);
	if (!buf)
		return;
	eh = (Elf64_Ehdr *)buf;
	sh = (Elf64_Shdr *)(buf + eh->e_shoff);
	for (i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_SYMTAB)
			continue;
		syms = (Elf64_Sym *)(buf + sh[i].sh_offset);
		strtab = &sh[sh[i].sh_link];
		for (j = 0; j < sh[i].sh_size / sizeof(*syms); j++) {
			const char *name = (const char *)buf +
					   strtab->sh_offset + syms[j].st_name;
			Elf64_Shdr *s;

			if (strncmp(name, "gemmd_meta_", 11) != 0)
				continue;
			s = &sh[syms[j].st_shndx];
			syms[j].st_value += half;
			if (s->sh_offset < half) {
				s->sh_offset += half;
				s->sh_size += half;
			}
			moved++;
		}
	}
	CHECK(moved >= 1);
	CHECK_EQ_INT(read_cut(buf, n), 0);
	free(buf);
}

/*
 * A note that does not parse (here it lacks "schedule") hides its kernel,
 * and gemmd says so at its usual log level, naming the cubin and note:
 * a debug line, which it was, left a kernel missing without a word.
 */
static void test_bad_note(void)
{
	char text[4096] = "";
	unsigned char *buf, *at;
	size_t n = 0;
	int fd, saved;

	buf = load_cubin(&n);
	if (!buf)
		return;
	at = memmem(buf, n, " schedule=", 10);
	CHECK(at != NULL);
	fd = at ? stderr_catch(&saved) : -1;
	if (fd < 0) {
		free(buf);
		return;
	}
	at[1] = 'S';
	CHECK_EQ_INT(read_cut(buf, n), 0);
	stderr_release(fd, saved, text, sizeof(text));
	CHECK(strstr(text, "ignoring note gemmd_meta_gemmd_") != NULL);
	CHECK(strstr(text, "does not parse") != NULL);
	if (!strstr(text, "ignoring note"))
		fprintf(stderr, "  logged: \"%s\"\n", text);
	free(buf);
}

/*
 * Turn every function symbol of the cubin in buf into a data object:
 * its notes then name kernels it has no entry for.  Returns how many.
 */
static int unmake_functions(unsigned char *buf, size_t n)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)buf;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(buf + eh->e_shoff);
	int changed = 0;
	size_t i, j;

	if (eh->e_shoff + (size_t)eh->e_shnum * sizeof(*sh) > n)
		return 0;
	for (i = 0; i < eh->e_shnum; i++) {
		Elf64_Sym *sym = (Elf64_Sym *)(buf + sh[i].sh_offset);

		if (sh[i].sh_type != SHT_SYMTAB ||
		    sh[i].sh_offset + sh[i].sh_size > n)
			continue;
		for (j = 0; j < sh[i].sh_size / sizeof(*sym); j++) {
			if (ELF64_ST_TYPE(sym[j].st_info) != STT_FUNC)
				continue;
			sym[j].st_info = ELF64_ST_INFO(
				ELF64_ST_BIND(sym[j].st_info), STT_OBJECT);
			changed++;
		}
	}
	return changed;
}

/*
 * A note is listed only where the cubin has the entry it names: with
 * the functions gone, every note is refused, by name.  The entries are
 * looked up in a sorted index of the functions (a scan per note was
 * quadratic in a crafted cubin's size); the real cubins of
 * test_real_cubins() find theirs in it.
 */
static void test_no_entry(void)
{
	char text[4096] = "";
	unsigned char *buf;
	size_t n = 0;
	int fd, saved;

	buf = load_cubin(&n);
	if (!buf)
		return;
	CHECK(read_cut(buf, n) >= 1);
	CHECK(unmake_functions(buf, n) >= 1);
	fd = stderr_catch(&saved);
	if (fd < 0) {
		free(buf);
		return;
	}
	CHECK_EQ_INT(read_cut(buf, n), 0);
	stderr_release(fd, saved, text, sizeof(text));
	CHECK(strstr(text, "ignoring note gemmd_meta_gemmd_") != NULL);
	CHECK(strstr(text, "names a kernel the cubin has no entry for") !=
	      NULL);
	free(buf);
}

/*
 * A catalog at its limit lists no more kernels, and says which it left
 * out: they were dropped without a word.
 */
static void test_full_catalog(void)
{
	struct kernel_info k = { 0 };
	char text[4096] = "", src[4096];
	struct catalog *c = catalog_new();
	unsigned int i;
	int fd, saved;

	CHECK(c != NULL);
	if (!c)
		return;
	for (i = 0; i < 4096; i++) {
		snprintf(k.name, sizeof(k.name), "filler_%u", i);
		CHECK_EQ_INT(catalog_add(c, &k), 0);
	}
	snprintf(k.name, sizeof(k.name), "one_too_many");
	CHECK_EQ_INT(catalog_add(c, &k), -E2BIG);
	CHECK_EQ_INT(find_cubin(src, sizeof(src)), 0);
	fd = stderr_catch(&saved);
	if (fd >= 0) {
		CHECK_EQ_INT(catalog_read_cubin(c, src), 0);
		stderr_release(fd, saved, text, sizeof(text));
		CHECK(strstr(text, "is not listed: ") != NULL);
	}
	CHECK_EQ_INT(catalog_size(c), 4096);
	catalog_free(c);
}

/* The SM version the catalog reads from data as a cubin. */
static unsigned int read_sm(const unsigned char *data, size_t len)
{
	unsigned int sm = 0;

	CHECK(read_cut_sm(data, len, &sm) > 0);
	return sm;
}

/*
 * What a cubin's code is for, from its ELF header: e_flags bits 8-15
 * since CUDA ELF ABI version 8, bits 0-7 before; not known for an ELF
 * that is not CUDA's.
 */
static void test_target(void)
{
	unsigned char *buf;
	Elf64_Ehdr *eh;
	size_t n = 0;

	buf = load_cubin(&n);
	if (!buf)
		return;
	eh = (Elf64_Ehdr *)buf;
	CHECK(eh->e_ident[EI_ABIVERSION] >= 8);
	CHECK_EQ_INT(read_sm(buf, n), 90);
	eh->e_flags = (eh->e_flags & ~0xff00u) | (80u << 8);
	CHECK_EQ_INT(read_sm(buf, n), 80);
	eh->e_ident[EI_ABIVERSION] = 7;
	eh->e_flags = (eh->e_flags & ~0xffffu) | 89u;
	CHECK_EQ_INT(read_sm(buf, n), 89);
	eh->e_machine = EM_X86_64;
	CHECK_EQ_INT(read_sm(buf, n), 0);
	free(buf);
}

/* Copy src to dir/name. */
static int copy_file(const char *src, const char *dir, const char *name)
{
	static unsigned char buf[4 << 20];
	char dst[4096];
	ssize_t n;
	int in, out, r = 0;

	snprintf(dst, sizeof(dst), "%s/%s", dir, name);
	in = open(src, O_RDONLY);
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (in < 0 || out < 0)
		r = -errno;
	while (!r && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			r = -EIO;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return r;
}

/* Write text (may be "") to dir/name. */
static int write_text(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX + 64];
	FILE *f;
	int r;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	r = fputs(text, f) < 0 ? -EIO : 0;
	if (fclose(f) != 0 && !r)
		r = -EIO;
	return r;
}

/*
 * The catalog of dir lists one kernel, name, from cubin, the other
 * duplicates cubins holding it left out.
 */
static void check_listed_from(const char *dir, const char *name,
			      const char *cubin, unsigned int duplicates)
{
	const struct kernel_info *k;
	struct catalog *c = NULL;

	CHECK_EQ_INT(catalog_load(dir, &c), 0);
	if (!c)
		return;
	CHECK_EQ_INT(catalog_size(c), 1);
	CHECK_EQ_INT(catalog_duplicates(c), duplicates);
	k = catalog_find(c, name);
	CHECK(k != NULL);
	if (k)
		CHECK_STREQ(k->cubin, cubin);
	catalog_free(c);
}

/*
 * An older install's cubin beside the new one, holding the same kernel
 * (under a name of its own, sorting before and after it): the cubin
 * named after the kernel is the one listed, whatever the readdir order.
 */
static void test_stale_duplicate(void)
{
	static const char *const stale[] = { "aa-old.cubin", "zz-old.cubin" };
	const char *name = "gemmd_cooperative_bf16_tn_128x256x64";
	char dir[PATH_MAX], src[4096], path[PATH_MAX + 64];
	const struct kernel_info *k;
	struct catalog *c = NULL;

	snprintf(src, sizeof(src), "%s/%s.cubin", kernel_dir(), name);
	check_tmp_path(dir, sizeof(dir), "gemmd-cat-XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	CHECK_EQ_INT(copy_file(src, dir,
			       "gemmd_cooperative_bf16_tn_128x256x64.cubin"),
		     0);
	for (size_t i = 0; i < 2; i++)
		CHECK_EQ_INT(copy_file(src, dir, stale[i]), 0);
	check_listed_from(dir, name,
			  "gemmd_cooperative_bf16_tn_128x256x64.cubin", 2);
	/* in both orders, whatever readdir gave above */
	for (size_t order = 0; order < 2; order++) {
		c = catalog_new();
		for (size_t i = 0; i < 2; i++) {
			if ((i == 0) == (order == 0))
				snprintf(path, sizeof(path), "%s/%s", dir,
					 stale[0]);
			else
				snprintf(path, sizeof(path), "%s/%s.cubin", dir,
					 name);
			CHECK_EQ_INT(catalog_read_cubin(c, path),
				     i == 0 ? 1 : 0);
		}
		k = catalog_find(c, name);
		CHECK(k &&
		      strcmp(k->cubin, src + strlen(kernel_dir()) + 1) == 0);
		catalog_free(c);
	}
	for (size_t i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, stale[i]);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/%s.cubin", dir, name);
	unlink(path);
	rmdir(dir);
}

/*
 * A kernel directory with what is not a cubin under cubin names: a FIFO
 * (no writer: opening it must not wait for one), a directory, a link to
 * nowhere, a link loop, an empty file and text.  Each is skipped, and the
 * real cubin beside them is listed.
 */
static void test_odd_files(void)
{
	static const char *const odd[] = { "fifo.cubin",     "dir.cubin",
					   "dangling.cubin", "loop.cubin",
					   "empty.cubin",    "text.cubin" };
	const char *name = "gemmd_cooperative_bf16_tn_128x256x64";
	char dir[PATH_MAX], src[4096], path[PATH_MAX + 64];
	struct catalog *c = NULL;
	size_t i;

	snprintf(src, sizeof(src), "%s/%s.cubin", kernel_dir(), name);
	check_tmp_path(dir, sizeof(dir), "gemmd-cat-XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	CHECK_EQ_INT(copy_file(src, dir, "real.cubin"), 0);
	snprintf(path, sizeof(path), "%s/fifo.cubin", dir);
	CHECK_EQ_INT(mkfifo(path, 0600), 0);
	snprintf(path, sizeof(path), "%s/dir.cubin", dir);
	CHECK_EQ_INT(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/dangling.cubin", dir);
	CHECK_EQ_INT(symlink("nowhere.cubin", path), 0);
	snprintf(path, sizeof(path), "%s/loop.cubin", dir);
	CHECK_EQ_INT(symlink("loop.cubin", path), 0);
	CHECK_EQ_INT(write_text(dir, "empty.cubin", ""), 0);
	CHECK_EQ_INT(write_text(dir, "text.cubin", "not an ELF file\n"), 0);
	/* A hang fails the test here rather than at the suite's timeout. */
	alarm(10);
	CHECK_EQ_INT(catalog_load(dir, &c), 0);
	alarm(0);
	CHECK_EQ_INT(catalog_size(c), 1);
	CHECK(catalog_find(c, name) != NULL);
	catalog_free(c);
	for (i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, odd[i]);
		if (unlink(path) < 0)
			rmdir(path);
	}
	snprintf(path, sizeof(path), "%s/real.cubin", dir);
	unlink(path);
	rmdir(dir);
}

/*
 * One kernel in several cubins, none named after it: the first by file
 * name is listed, whatever order readdir() gives, so that every node
 * with these files gives the same kernels_digest.  Sixteen of them, made
 * in an order that is not name order either way round, and dup00 neither
 * first nor last: readdir() on tmpfs gives the newest first, so files
 * made in reverse name order came back in name order there and the test
 * passed without a sort; a hashed directory's order is not likely to be
 * name order either.
 */
static void test_duplicate_order(void)
{
	const char *name = "gemmd_cooperative_bf16_tn_128x256x64";
	char dir[PATH_MAX], src[4096], file[32], path[PATH_MAX + 64];
	int i;

	snprintf(src, sizeof(src), "%s/%s.cubin", kernel_dir(), name);
	check_tmp_path(dir, sizeof(dir), "gemmd-cat-XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	for (i = 0; i < 16; i++) {
		/* dup03, dup10, dup01, dup08, ...: dup00 is made twelfth */
		snprintf(file, sizeof(file), "dup%02d.cubin", (i * 7 + 3) % 16);
		CHECK_EQ_INT(copy_file(src, dir, file), 0);
	}
	check_listed_from(dir, name, "dup00.cubin", 15);
	for (i = 0; i < 16; i++) {
		snprintf(path, sizeof(path), "%s/dup%02d.cubin", dir, i);
		unlink(path);
	}
	rmdir(dir);
}

/*
 * kernels_digest: each kernel's name and its cubin's digest, a line each
 * in the catalog's order ("name digest\n"), hashed; the values here are
 * sha256sum's.  Nodes compare it to tell whether they run the same code.
 */
static void test_digest(void)
{
	struct kernel_info k = { 0 };
	struct catalog *c = catalog_new();
	char d[SHA256_TAG_LEN], first[SHA256_TAG_LEN];

	catalog_digest(c, d);
	CHECK_STREQ(d, "sha256:e3b0c44298fc1c149afbf4c8996fb924"
		       "27ae41e4649b934ca495991b7852b855");
	snprintf(k.name, sizeof(k.name), "a");
	snprintf(k.digest, sizeof(k.digest), "sha256:x");
	CHECK_EQ_INT(catalog_add(c, &k), 0);
	snprintf(k.name, sizeof(k.name), "b");
	k.digest[0] = '\0'; /* no cubin read */
	CHECK_EQ_INT(catalog_add(c, &k), 0);
	catalog_digest(c, first);
	/* printf 'a sha256:x\nb \n' | sha256sum */
	CHECK_STREQ(first, "sha256:a0eefdbf63f4dbf2a8dbd573f07d3568"
			   "592858b5435e72cb00c2cdb461f10454");
	catalog_free(c);

	/* the same kernels from another cubin: another digest */
	c = catalog_new();
	snprintf(k.name, sizeof(k.name), "a");
	snprintf(k.digest, sizeof(k.digest), "sha256:y");
	CHECK_EQ_INT(catalog_add(c, &k), 0);
	snprintf(k.name, sizeof(k.name), "b");
	k.digest[0] = '\0';
	CHECK_EQ_INT(catalog_add(c, &k), 0);
	catalog_digest(c, d);
	CHECK(strcmp(d, first) != 0);
	catalog_free(c);
}

int main(void)
{
	RUN_TEST(test_note_parse);
	RUN_TEST(test_note_v2);
	RUN_TEST(test_real_cubins);
	RUN_TEST(test_corrupt);
	RUN_TEST(test_wrapped_offset);
	RUN_TEST(test_bad_note);
	RUN_TEST(test_no_entry);
	RUN_TEST(test_full_catalog);
	RUN_TEST(test_target);
	RUN_TEST(test_stale_duplicate);
	RUN_TEST(test_duplicate_order);
	RUN_TEST(test_odd_files);
	RUN_TEST(test_digest);
	return check_exit();
}
