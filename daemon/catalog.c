// SPDX-License-Identifier: MIT
/*
 * catalog.c - read kernel notes out of cubin ELF images.
 */
#include <dirent.h>
#include <limits.h>
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "catalog.h"
#include "log.h"
#include "spec.h"
#include "util.h"

#define META_PREFIX "gemmd_meta_"
#define CATALOG_MAX 4096

struct catalog {
	struct kernel_info *kernels;
	size_t n, alloc;
	size_t bad_notes; /* notes that did not parse, for callers to report */
	size_t duplicates; /* kernels found in a second cubin */
};

struct catalog *catalog_new(void)
{
	return calloc(1, sizeof(struct catalog));
}

struct catalog *catalog_free(struct catalog *c)
{
	if (!c)
		return NULL;
	free(c->kernels);
	free(c);
	return NULL;
}

size_t catalog_size(const struct catalog *c)
{
	return c ? c->n : 0;
}

size_t catalog_bad_notes(const struct catalog *c)
{
	return c ? c->bad_notes : 0;
}

size_t catalog_duplicates(const struct catalog *c)
{
	return c ? c->duplicates : 0;
}

const struct kernel_info *catalog_get(const struct catalog *c, size_t i)
{
	return c && i < c->n ? &c->kernels[i] : NULL;
}

const struct kernel_info *catalog_find(const struct catalog *c,
				       const char *name)
{
	size_t i;

	for (i = 0; i < catalog_size(c); i++)
		if (strcmp(c->kernels[i].name, name) == 0)
			return &c->kernels[i];
	return NULL;
}

int catalog_add(struct catalog *c, const struct kernel_info *k)
{
	struct kernel_info *n;

	if (catalog_find(c, k->name))
		return -EEXIST;
	if (c->n == CATALOG_MAX)
		return -E2BIG;
	if (c->n == c->alloc) {
		size_t alloc = c->alloc ? c->alloc * 2 : 16;

		n = reallocarray(c->kernels, alloc, sizeof(*n));
		if (!n)
			return -ENOMEM;
		c->kernels = n;
		c->alloc = alloc;
	}
	c->kernels[c->n++] = *k;
	return 0;
}

/*
 * The most a note's count may say: /v1/kernels writes them as JSON
 * integers through int, where anything larger would come out negative.
 */
#define NOTE_UINT_MAX INT_MAX

/* Note v2: "cluster=8" (x * y CTAs); v1 spelt the shape, "cluster=1x1". */
static int parse_cluster(const char *v, unsigned int *ret)
{
	unsigned int x = 0, y = 0;
	int used = 0;

	if (!strchr(v, 'x'))
		return parse_uint(v, SPEC_CLUSTER_MAX, ret);
	if (sscanf(v, "%5ux%5u%n", &x, &y, &used) != 2 ||
	    (size_t)used != strlen(v) || !x || !y ||
	    (uint64_t)x * y > SPEC_CLUSTER_MAX)
		return -EINVAL;
	*ret = x * y;
	return 0;
}

/* "direct,tma" -> a KERNEL_BIT mask; an unknown name spoils the note. */
static int parse_list(const char *v, int (*from_string)(const char *),
		      unsigned int *ret)
{
	char buf[64], *save = NULL, *tok;
	unsigned int mask = 0;

	if (strlen(v) >= sizeof(buf))
		return -ENAMETOOLONG;
	strcpy(buf, v);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		int r = from_string(tok);

		if (r < 0)
			return r;
		mask |= KERNEL_BIT(r);
	}
	if (!mask)
		return -EINVAL;
	*ret = mask;
	return 0;
}

static int parse_flag(const char *v, bool *ret)
{
	unsigned int x = 0;
	int r = parse_uint(v, 1, &x);

	if (r < 0)
		return r;
	*ret = x;
	return 0;
}

/* "sm_90a", "sm_80": kept as a string, checked for its shape only. */
static int parse_arch(const char *v, char *buf, size_t len)
{
	if (strncmp(v, "sm_", 3) != 0 || !v[3] || strlen(v) >= len ||
	    strspn(v + 3, "0123456789abcdefghijklmnopqrstuvwxyz") !=
		    strlen(v + 3))
		return -EINVAL;
	strcpy(buf, v);
	return 0;
}

bool kernel_is_sm80(const struct kernel_info *k)
{
	return strcmp(k->arch, "sm_80") == 0;
}

bool kernel_has_packed_entry(const struct kernel_info *k)
{
	return k->schedule == GEMM_SCHEDULE_WS ||
	       k->schedule == GEMM_SCHEDULE_COOPERATIVE ||
	       k->schedule == GEMM_SCHEDULE_PINGPONG;
}

static int set_enum(const char *v, int (*from_string)(const char *), int *ret)
{
	int r = from_string(v);

	if (r < 0)
		return r;
	*ret = r;
	return 0;
}

/* One key=value pair of a note; unknown keys are skipped (newer cubins). */
static int kernel_info_set(struct kernel_info *k, const char *key,
			   const char *v)
{
	int e, r = 0;

	if (strcmp(key, "kernel") == 0) {
		if (strlen(v) >= sizeof(k->name))
			return -ENAMETOOLONG;
		strcpy(k->name, v);
	} else if (strcmp(key, "schedule") == 0) {
		r = set_enum(v, gemm_schedule_from_string, &e);
		k->schedule = e;
	} else if (strcmp(key, "dtype") == 0) {
		r = set_enum(v, gemm_dtype_from_string, &e);
		k->dtype = e;
	} else if (strcmp(key, "out") == 0) {
		r = parse_list(v, gemm_dtype_from_string, &k->outs);
	} else if (strcmp(key, "layout") == 0) {
		r = set_enum(v, gemm_layout_from_string, &e);
		k->layout = e;
	} else if (strcmp(key, "tile") == 0) {
		r = tile_parse(v, &k->tile);
	} else if (strcmp(key, "threads") == 0) {
		r = parse_uint(v, NOTE_UINT_MAX, &k->threads);
	} else if (strcmp(key, "smem_fixed") == 0) {
		r = parse_uint(v, NOTE_UINT_MAX, &k->smem_fixed);
	} else if (strcmp(key, "smem_stage") == 0) {
		r = parse_uint(v, NOTE_UINT_MAX, &k->smem_stage);
	} else if (strcmp(key, "min_stages") == 0) {
		r = parse_uint(v, NOTE_UINT_MAX, &k->min_stages);
	} else if (strcmp(key, "max_stages") == 0) {
		r = parse_uint(v, NOTE_UINT_MAX, &k->max_stages);
	} else if (strcmp(key, "cluster") == 0) {
		r = parse_cluster(v, &k->cluster_max);
	} else if (strcmp(key, "persistent") == 0) {
		r = parse_flag(v, &k->persistent);
	} else if (strcmp(key, "pdl") == 0) {
		r = parse_flag(v, &k->pdl);
	} else if (strcmp(key, "placement") == 0) {
		r = parse_flag(v, &k->placement);
	} else if (strcmp(key, "epilogue") == 0) {
		r = parse_list(v, gemm_epilogue_from_string, &k->epilogues);
	} else if (strcmp(key, "smem_epilogue") == 0) {
		r = parse_uint(v, NOTE_UINT_MAX, &k->smem_epilogue);
	} else if (strcmp(key, "arch") == 0) {
		r = parse_arch(v, k->arch, sizeof(k->arch));
	}
	return r;
}

/*
 * A v1 note (the first ws kernels) lacks the newer keys; its defaults say
 * what those kernels are: no clusters, not persistent, the direct
 * epilogue, D of the input type, SM90.
 */
int kernel_info_parse(const char *note, const char *cubin,
		      struct kernel_info *ret)
{
	struct kernel_info k = { .cluster_max = 1, .arch = "sm_90a" };
	char buf[512], *save = NULL, *tok;
	bool has_schedule = false;

	if (strlen(note) >= sizeof(buf) || strlen(cubin) >= sizeof(k.cubin))
		return -ENAMETOOLONG;
	strcpy(buf, note);
	strcpy(k.cubin, cubin);
	k.epilogues = KERNEL_BIT(GEMM_EPILOGUE_DIRECT);

	for (tok = strtok_r(buf, " \t\n", &save); tok;
	     tok = strtok_r(NULL, " \t\n", &save)) {
		char *eq = strchr(tok, '=');
		int r;

		if (!eq)
			return -EINVAL;
		*eq = '\0';
		r = kernel_info_set(&k, tok, eq + 1);
		if (r < 0)
			return r;
		has_schedule |= strcmp(tok, "schedule") == 0;
	}
	if (!k.name[0] || !has_schedule || !k.tile.m || !k.threads ||
	    !k.smem_stage || k.min_stages < 1 || k.max_stages < k.min_stages ||
	    !k.cluster_max || k.dtype == GEMM_DTYPE_FP32)
		return -EINVAL;
	if (!k.outs)
		k.outs = KERNEL_BIT(k.dtype);
	*ret = k;
	return 0;
}

/* Bounds-checked view of the ELF pieces we need. */
struct elf_view {
	const uint8_t *data;
	size_t len;
	const Elf64_Shdr *sh;
	size_t shnum;
	unsigned int sm; /* the SM its code is for: 90; 0 if not known */
};

/*
 * The SM version a cubin's code is for, from its ELF header: e_flags bits
 * 8-15 since the CUDA ELF ABI version 8 (CUDA 12.8), bits 0-7 before.
 * It does not tell sm_90a from sm_90; the kernels of both run on 9.0.
 */
static unsigned int elf_sm(const Elf64_Ehdr *eh)
{
	if (eh->e_machine != EM_CUDA)
		return 0;
	if (eh->e_ident[EI_ABIVERSION] >= 8)
		return (eh->e_flags >> 8) & 0xff;
	return eh->e_flags & 0xff;
}

static bool in_file(const struct elf_view *e, uint64_t off, uint64_t size)
{
	return off <= e->len && size <= e->len - off;
}

static int elf_open(struct elf_view *e, const uint8_t *data, size_t len)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)data;

	e->data = data;
	e->len = len;
	if (len < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shentsize != sizeof(Elf64_Shdr))
		return -ENOEXEC;
	if (!in_file(e, eh->e_shoff,
		     (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)) ||
	    eh->e_shoff % 8)
		return -ENOEXEC;
	e->sh = (const Elf64_Shdr *)(data + eh->e_shoff);
	e->shnum = eh->e_shnum;
	e->sm = elf_sm(eh);
	return 0;
}

static const char *elf_string(const struct elf_view *e, size_t strtab,
			      uint32_t off)
{
	const Elf64_Shdr *s;
	const char *p;

	if (strtab >= e->shnum)
		return NULL;
	s = &e->sh[strtab];
	if (!in_file(e, s->sh_offset, s->sh_size) || off >= s->sh_size)
		return NULL;
	/*
	 * A table that ends in NUL ends every string in it: checked once a
	 * name, a search to the end of the table per symbol made a crafted
	 * cubin's start quadratic in its size.
	 */
	p = (const char *)e->data + s->sh_offset;
	if (p[s->sh_size - 1] != '\0')
		return NULL;
	return p + off;
}

/* The bytes a symbol's value points at, as a NUL-terminated string. */
static const char *elf_symbol_string(const struct elf_view *e,
				     const Elf64_Sym *sym)
{
	const Elf64_Shdr *s;
	const char *p;

	if (sym->st_shndx == SHN_UNDEF || sym->st_shndx >= e->shnum ||
	    !sym->st_size)
		return NULL;
	s = &e->sh[sym->st_shndx];
	/*
	 * The section in the file first, then the symbol in the section:
	 * sh_offset + st_value, summed unchecked, can wrap past 2^64 back
	 * into the file, at bytes that are not the symbol's.
	 */
	if (s->sh_type == SHT_NOBITS || !in_file(e, s->sh_offset, s->sh_size) ||
	    sym->st_value > s->sh_size ||
	    sym->st_size > s->sh_size - sym->st_value)
		return NULL;
	p = (const char *)e->data + s->sh_offset + sym->st_value;
	if (p[sym->st_size - 1] != '\0')
		return NULL;
	return p;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * The names of the functions among n symbols, sorted, in *ret (freed by
 * the caller), their count in *count: the notes are looked up in it.  A
 * scan of the table per note took time quadratic in the size of a
 * crafted cubin, at every start.  Names too long for a kernel are left
 * out: no note can name them, and sorting many long ones that differ
 * only at the end would be slow again.
 */
static int elf_functions(const struct elf_view *e, const Elf64_Sym *syms,
			 size_t n, uint32_t strtab, const char ***ret,
			 size_t *count)
{
	const char **names = calloc(n ? n : 1, sizeof(*names));
	size_t i, used = 0;

	if (!names)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const char *sn = elf_string(e, strtab, syms[i].st_name);

		if (ELF64_ST_TYPE(syms[i].st_info) == STT_FUNC && sn &&
		    strnlen(sn, KERNEL_NAME_SIZE) < KERNEL_NAME_SIZE)
			names[used++] = sn;
	}
	qsort(names, used, sizeof(*names), cmp_str);
	*ret = names;
	*count = used;
	return 0;
}

static bool has_function(const char **functions, size_t n, const char *name)
{
	return bsearch(&name, functions, n, sizeof(*functions), cmp_str);
}

/* Whether k's cubin is named after it, as this build installs kernels. */
static bool in_own_cubin(const struct kernel_info *k)
{
	size_t n = strlen(k->name);

	return strncmp(k->cubin, k->name, n) == 0 &&
	       strcmp(k->cubin + n, ".cubin") == 0;
}

/*
 * k is already listed from another cubin: a file an older build left
 * beside the new ones, say, whose kernel would take arguments of another
 * layout.  The cubin named after the kernel wins; between two that are
 * not, the first read, which catalog_load() makes the first by name.
 * Either way the operator is told.
 */
static void keep_one(struct catalog *c, const struct kernel_info *k)
{
	struct kernel_info *old = NULL;
	size_t i;

	for (i = 0; i < c->n && !old; i++)
		if (strcmp(c->kernels[i].name, k->name) == 0)
			old = &c->kernels[i];
	if (!old)
		return;
	if (in_own_cubin(k) && !in_own_cubin(old)) {
		log_warning("kernel %s is in %s and in %s: using %s", k->name,
			    old->cubin, k->cubin, k->cubin);
		*old = *k;
	} else {
		log_warning("kernel %s is in %s and in %s: using %s", k->name,
			    old->cubin, k->cubin, old->cubin);
	}
	c->duplicates++;
}

static int read_symtab(struct catalog *c, const struct elf_view *e,
		       const Elf64_Shdr *symtab, const char *cubin,
		       const char *digest)
{
	_cleanup_free_ const char **functions = NULL;
	const Elf64_Sym *syms;
	size_t i, n, n_functions;
	int found = 0, r;

	if (!in_file(e, symtab->sh_offset, symtab->sh_size) ||
	    symtab->sh_offset % 8)
		return -ENOEXEC;
	syms = (const Elf64_Sym *)(e->data + symtab->sh_offset);
	n = symtab->sh_size / sizeof(Elf64_Sym);
	r = elf_functions(e, syms, n, symtab->sh_link, &functions,
			  &n_functions);
	if (r < 0)
		return r;

	for (i = 0; i < n; i++) {
		const char *name =
			elf_string(e, symtab->sh_link, syms[i].st_name);
		const char *note, *why;
		struct kernel_info k;

		if (!name || strncmp(name, META_PREFIX, strlen(META_PREFIX)) ||
		    ELF64_ST_TYPE(syms[i].st_info) != STT_OBJECT)
			continue;
		note = elf_symbol_string(e, &syms[i]);
		if (!note)
			why = "is not a string within the file";
		else if (kernel_info_parse(note, cubin, &k) < 0)
			why = "does not parse";
		else if (strcmp(k.name, name + strlen(META_PREFIX)) != 0)
			why = "names another kernel";
		else if (!has_function(functions, n_functions, k.name))
			why = "names a kernel the cubin has no entry for";
		else
			why = NULL;
		if (why) {
			/*
			 * A warning, not a debug line: the kernel is missing
			 * from the catalog, and nothing else would say so.
			 */
			log_warning("%s: ignoring note %s, which %s: its "
				    "kernel is not listed",
				    cubin, name, why);
			c->bad_notes++;
			continue;
		}
		snprintf(k.digest, sizeof(k.digest), "%s", digest);
		k.sm = e->sm;
		r = catalog_add(c, &k);
		if (r == 0)
			found++;
		else if (r == -EEXIST)
			keep_one(c, &k);
		else /* over CATALOG_MAX, or out of memory: not silently */
			log_warning("%s: kernel %s is not listed: %s", cubin,
				    k.name, strerror(-r));
	}
	return found;
}

int catalog_read_cubin(struct catalog *c, const char *path)
{
	_cleanup_free_ uint8_t *data = NULL;
	const char *base = strrchr(path, '/');
	char digest[SHA256_TAG_LEN];
	struct elf_view e;
	size_t len = 0, i;
	int r, found = 0;

	base = base ? base + 1 : path;
	r = read_file(path, CUBIN_SIZE_MAX, &data, &len);
	if (r < 0)
		return r;
	sha256_tag(data, len, digest);
	r = elf_open(&e, data, len);
	if (r < 0)
		return r;
	for (i = 0; i < e.shnum; i++) {
		if (e.sh[i].sh_type != SHT_SYMTAB)
			continue;
		r = read_symtab(c, &e, &e.sh[i], base, digest);
		if (r < 0)
			return r;
		found += r;
	}
	return found;
}

static bool is_cubin(const char *name)
{
	size_t n = strlen(name);

	return n > 6 && strcmp(name + n - 6, ".cubin") == 0;
}

static int cmp_kernel(const void *a, const void *b)
{
	return strcmp(((const struct kernel_info *)a)->name,
		      ((const struct kernel_info *)b)->name);
}

static int cubin_entry(const struct dirent *de)
{
	return is_cubin(de->d_name);
}

/* Byte order, not alphasort()'s strcoll(), which follows the locale. */
static int cmp_entry(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

int catalog_load(const char *dir, struct catalog **ret)
{
	struct dirent **de = NULL;
	struct catalog *c;
	int i, n;

	/*
	 * The files in name order, not readdir()'s, which differs between
	 * file systems and directories: of two cubins that hold one kernel
	 * and are neither named after it, the first read is listed, and
	 * its digest goes into kernels_digest, which must be the same on
	 * every node that has the same files.
	 */
	n = scandir(dir, &de, cubin_entry, cmp_entry);
	if (n < 0)
		return -errno;
	c = catalog_new();
	for (i = 0; i < n; i++) {
		char path[4096];
		int r;

		if (c) {
			snprintf(path, sizeof(path), "%s/%s", dir,
				 de[i]->d_name);
			r = catalog_read_cubin(c, path);
			if (r < 0)
				log_warning_errno(r, "Skipping %s: %m", path);
		}
		free(de[i]);
	}
	free(de);
	if (!c)
		return -ENOMEM;
	/* The listing by name, whatever file each kernel came from. */
	if (c->n)
		qsort(c->kernels, c->n, sizeof(*c->kernels), cmp_kernel);
	*ret = c;
	return 0;
}

/* The names of a KERNEL_BIT mask, in enum order. */
static json_t *mask_to_json(unsigned int mask, const char *(*name)(int), int n)
{
	json_t *a = json_array();
	int i;

	for (i = 0; a && i < n; i++)
		if (mask & KERNEL_BIT(i))
			json_array_append_new(a, json_string(name(i)));
	return a;
}

static const char *dtype_name(int i)
{
	return gemm_dtype_to_string(i);
}

static const char *epilogue_name(int i)
{
	return gemm_epilogue_to_string(i);
}

static const char *decomposition_name(int i)
{
	return gemm_decomposition_to_string(i);
}

/* Not in the note: the schedule decides (gemm_schedule_has_decomposition). */
static json_t *decompositions_to_json(const struct kernel_info *k)
{
	unsigned int mask = 0;
	int i;

	for (i = 0; i < _GEMM_DECOMP_MAX; i++)
		if (gemm_schedule_has_decomposition(k->schedule, i))
			mask |= KERNEL_BIT(i);
	return mask_to_json(mask, decomposition_name, _GEMM_DECOMP_MAX);
}

/* "sm_90": what the cubin's code is for; null if not known. */
static json_t *sm_to_json(unsigned int sm)
{
	char buf[16];

	if (!sm)
		return json_null();
	snprintf(buf, sizeof(buf), "sm_%u", sm);
	return json_string(buf);
}

json_t *kernel_info_to_json(const struct kernel_info *k)
{
	return json_pack(
		"{s:s, s:s, s:s, s:s, s:o, s:s, s:[i,i,i], s:i, s:i, s:i,"
		" s:i, s:i, s:i, s:i, s:b, s:b, s:b, s:o, s:o, s:s, s:o, s:o}",
		"name", k->name, "cubin", k->cubin, "schedule",
		gemm_schedule_to_string(k->schedule), "dtype",
		gemm_dtype_to_string(k->dtype), "outs",
		mask_to_json(k->outs, dtype_name, _GEMM_DTYPE_MAX), "layout",
		gemm_layout_to_string(k->layout), "tile", k->tile.m, k->tile.n,
		k->tile.k, "threads", k->threads, "smem_fixed", k->smem_fixed,
		"smem_stage", k->smem_stage, "smem_epilogue", k->smem_epilogue,
		"min_stages", k->min_stages, "max_stages", k->max_stages,
		"cluster_max", k->cluster_max, "persistent", k->persistent,
		"pdl", k->pdl, "placement", k->placement, "epilogues",
		mask_to_json(k->epilogues, epilogue_name, _GEMM_EPILOGUE_MAX),
		"decompositions", decompositions_to_json(k), "arch", k->arch,
		"built_for", sm_to_json(k->sm), "digest",
		k->digest[0] ? json_string(k->digest) : json_null());
}

void catalog_digest(const struct catalog *c, char out[SHA256_TAG_LEN])
{
	uint8_t digest[SHA256_BYTES];
	struct sha256 s;
	size_t i;

	sha256_init(&s);
	for (i = 0; i < catalog_size(c); i++) {
		const struct kernel_info *k = &c->kernels[i];

		sha256_update(&s, k->name, strlen(k->name));
		sha256_update(&s, " ", 1);
		sha256_update(&s, k->digest, strlen(k->digest));
		sha256_update(&s, "\n", 1);
	}
	sha256_final(&s, digest);
	sha256_format(digest, out);
}

json_t *catalog_to_json(const struct catalog *c)
{
	json_t *a = json_array();
	size_t i;

	if (!a)
		return NULL;
	for (i = 0; i < catalog_size(c); i++)
		json_array_append_new(a, kernel_info_to_json(&c->kernels[i]));
	return a;
}
