// SPDX-License-Identifier: MIT
/*
 * cublaslt.c - cuBLASLt through dlopen(): load, describe our GEMM in any
 * layout, ask the heuristic, launch.
 *
 * Our GEMM in cuBLASLt's column-major terms.  Row-major D (m x n) is
 * column-major D^T (n x m, ld n), and D^T = B^T A^T: cuBLASLt's "A"
 * operand is our B buffer, its "B" our A buffer, its m our n and its n
 * our m.  Read as column-major, a buffer holds its operand either as
 * itself or transposed, and op() undoes that so that op(A_lt) = B^T
 * (n x k) and op(B_lt) = A^T (k x m):
 *
 *   layout  our B in memory   A_lt as stored          transa
 *   tn, nn  n x k, K-major    k x n, ld k: B          T
 *   nt, tt  k x n, N-major    n x k, ld n: B^T        N
 *
 *   layout  our A in memory   B_lt as stored          transb
 *   tn, tt  m x k, K-major    k x m, ld k: A^T        N
 *   nt, nn  k x m, M-major    m x k, ld m: A          T
 *
 * So our tn runs cuBLASLt's "TN" (what torch's a @ b.t() hands to cuBLAS
 * for row-major tensors), nt its "NT", nn "TT" and tt "NN".  C and D are
 * both column-major n x m with ld n, of the output type.
 *
 * Types (fp32 compute and scale): A and B bf16 or fp16, C and D of the
 * input type or fp32.  cuBLASLt has no bf16 -> fp16 or fp16 -> bf16
 * GEMM, and C must have D's type.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cublaslt.h"
#include "util.h"

#ifdef HAVE_CUBLASLT

/* The CUDA headers are not clean under our warnings: quiet them there. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wfloat-equal"
#pragma GCC diagnostic ignored "-Wundef"
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <cublasLt.h>
#pragma GCC diagnostic pop

/* X(name): every cuBLASLt function used. */
#define LT_FUNCS(X)                             \
	X(cublasLtGetVersion)                   \
	X(cublasLtGetStatusName)                \
	X(cublasLtCreate)                       \
	X(cublasLtDestroy)                      \
	X(cublasLtMatmulDescCreate)             \
	X(cublasLtMatmulDescDestroy)            \
	X(cublasLtMatmulDescSetAttribute)       \
	X(cublasLtMatrixLayoutCreate)           \
	X(cublasLtMatrixLayoutDestroy)          \
	X(cublasLtMatmulPreferenceCreate)       \
	X(cublasLtMatmulPreferenceDestroy)      \
	X(cublasLtMatmulPreferenceSetAttribute) \
	X(cublasLtMatmulAlgoGetHeuristic)       \
	X(cublasLtMatmulAlgoConfigGetAttribute) \
	X(cublasLtMatmul)

#define LT_MEMBER(name) __typeof__(name) *name;

static struct {
	bool tried;
	int error;
	char why[320];
	void *dl;
	int version;
	struct {
		LT_FUNCS(LT_MEMBER)
	} f;
} lt;

#undef LT_MEMBER

static int lt_bind(const char *name)
{
#define LT_BIND(fn)                                                          \
	lt.f.fn = (__typeof__(lt.f.fn))dlsym(lt.dl, #fn);                    \
	if (!lt.f.fn) {                                                      \
		snprintf(lt.why, sizeof(lt.why), "%s has no %s", name, #fn); \
		return -ENOSYS;                                              \
	}
	LT_FUNCS(LT_BIND)
#undef LT_BIND
	return 0;
}

/* GEMMD_CUBLASLT_LIBRARY, or the first of the usual names that loads. */
static int lt_open(void)
{
	static const char *const names[] = {
		"libcublasLt.so.13",
		"libcublasLt.so.12",
		"libcublasLt.so",
	};
	const char *env = getenv("GEMMD_CUBLASLT_LIBRARY");
	const char *name = NULL;

	if (env && *env) {
		name = env;
		lt.dl = dlopen(env, RTLD_NOW | RTLD_LOCAL);
	} else {
		for (size_t i = 0; !lt.dl && i < ARRAY_SIZE(names); i++) {
			name = names[i];
			lt.dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
		}
	}
	if (!lt.dl) {
		snprintf(lt.why, sizeof(lt.why), "cuBLASLt not found (%s)",
			 dlerror());
		return -ENOENT;
	}
	return lt_bind(name);
}

int cublaslt_load(char *err, size_t errlen)
{
	if (!lt.tried) {
		lt.tried = true;
		lt.error = lt_open();
		if (lt.error && lt.dl) {
			dlclose(lt.dl);
			lt.dl = NULL;
		}
		if (!lt.error)
			lt.version = (int)lt.f.cublasLtGetVersion();
	}
	if (lt.error)
		snprintf(err, errlen, "%s", lt.why);
	return lt.error;
}

int cublaslt_version(void)
{
	return lt.error ? 0 : lt.version;
}

/* "cublasLtXxx: CUBLAS_STATUS_NAME"; returns the errno for it. */
static int lt_error(cublasStatus_t s, const char *call, char *err,
		    size_t errlen)
{
	const char *name = lt.f.cublasLtGetStatusName(s);

	if (name)
		snprintf(err, errlen, "%s: %s", call, name);
	else
		snprintf(err, errlen, "%s: cuBLAS status %d", call, (int)s);
	switch ((int)s) {
	case CUBLAS_STATUS_ALLOC_FAILED:
		return -ENOMEM;
	case CUBLAS_STATUS_NOT_SUPPORTED:
	case CUBLAS_STATUS_ARCH_MISMATCH:
		return -EOPNOTSUPP;
	case CUBLAS_STATUS_INVALID_VALUE:
		return -EINVAL;
	default:
		return -EIO;
	}
}

#define LT_TRY(err, errlen, call, ...)                       \
	({                                                   \
		cublasStatus_t _s_ = lt.f.call(__VA_ARGS__); \
		_s_ == CUBLAS_STATUS_SUCCESS ?               \
			0 :                                  \
			lt_error(_s_, #call, err, errlen);   \
	})

struct cublaslt_gemm {
	cublasLtHandle_t handle;
	cublasLtMatmulDesc_t op;
	cublasLtMatrixLayout_t la, lb, ld;
	cublasLtMatmulPreference_t pref;
	cublasLtMatmulHeuristicResult_t algos[CUBLASLT_ALGOS_MAX];
	unsigned int want_algos, n_algos, selected;
	/* cuBLASLt's A (our B), B (our A), C and D */
	CUdeviceptr a, b, c, d;
	float alpha, beta;
	CUdeviceptr workspace;
	size_t workspace_bytes;
};

/* One operand as cuBLASLt sees it: stored rows x cols, ld, and op(). */
struct lt_operand {
	int32_t op; /* cublasOperation_t, as the attribute wants it */
	uint64_t rows, cols, ld;
};

/* The table at the top of the file. */
static void lt_operands(const struct cublaslt_gemm_desc *d,
			struct lt_operand *lt_a, struct lt_operand *lt_b)
{
	const bool a_kmajor = d->layout == GEMM_LAYOUT_TN ||
			      d->layout == GEMM_LAYOUT_TT;
	const bool b_kmajor = d->layout == GEMM_LAYOUT_TN ||
			      d->layout == GEMM_LAYOUT_NN;

	if (b_kmajor)
		*lt_a = (struct lt_operand){ CUBLAS_OP_T, d->k, d->n, d->k };
	else
		*lt_a = (struct lt_operand){ CUBLAS_OP_N, d->n, d->k, d->n };
	if (a_kmajor)
		*lt_b = (struct lt_operand){ CUBLAS_OP_N, d->k, d->m, d->k };
	else
		*lt_b = (struct lt_operand){ CUBLAS_OP_T, d->m, d->k, d->m };
}

static int gemm_op(struct cublaslt_gemm *g, const struct lt_operand *lt_a,
		   const struct lt_operand *lt_b, char *err, size_t errlen)
{
	int e;

	e = LT_TRY(err, errlen, cublasLtMatmulDescCreate, &g->op,
		   CUBLAS_COMPUTE_32F, CUDA_R_32F);
	if (!e)
		e = LT_TRY(err, errlen, cublasLtMatmulDescSetAttribute, g->op,
			   CUBLASLT_MATMUL_DESC_TRANSA, &lt_a->op,
			   sizeof(lt_a->op));
	if (!e)
		e = LT_TRY(err, errlen, cublasLtMatmulDescSetAttribute, g->op,
			   CUBLASLT_MATMUL_DESC_TRANSB, &lt_b->op,
			   sizeof(lt_b->op));
	return e;
}

static cudaDataType lt_type(enum gemm_dtype t)
{
	switch (t) {
	case GEMM_DTYPE_BF16:
		return CUDA_R_16BF;
	case GEMM_DTYPE_FP16:
		return CUDA_R_16F;
	case GEMM_DTYPE_FP32:
	case _GEMM_DTYPE_MAX:
	default:
		return CUDA_R_32F;
	}
}

/* Column-major layouts; see the top of the file.  C shares D's. */
static int gemm_layouts(struct cublaslt_gemm *g,
			const struct cublaslt_gemm_desc *d,
			const struct lt_operand *lt_a,
			const struct lt_operand *lt_b, char *err, size_t errlen)
{
	const cudaDataType in = lt_type(d->dtype);
	int e;

	e = LT_TRY(err, errlen, cublasLtMatrixLayoutCreate, &g->la, in,
		   lt_a->rows, lt_a->cols, (int64_t)lt_a->ld);
	if (!e)
		e = LT_TRY(err, errlen, cublasLtMatrixLayoutCreate, &g->lb, in,
			   lt_b->rows, lt_b->cols, (int64_t)lt_b->ld);
	if (!e)
		e = LT_TRY(err, errlen, cublasLtMatrixLayoutCreate, &g->ld,
			   lt_type(d->out), d->n, d->m, (int64_t)d->n);
	return e;
}

/* What cuBLASLt cannot do is refused before it is asked. */
static int gemm_check(const struct cublaslt_gemm_desc *d, char *err,
		      size_t errlen)
{
	if (d->dtype != GEMM_DTYPE_BF16 && d->dtype != GEMM_DTYPE_FP16) {
		snprintf(err, errlen, "cuBLASLt: inputs must be bf16 or fp16");
		return -EINVAL;
	}
	if ((unsigned int)d->layout >= _GEMM_LAYOUT_MAX) {
		snprintf(err, errlen, "cuBLASLt: unknown layout");
		return -EINVAL;
	}
	if (d->out != d->dtype && d->out != GEMM_DTYPE_FP32) {
		snprintf(err, errlen,
			 "cuBLASLt has no GEMM from %s inputs to %s output "
			 "(only %s or fp32)",
			 gemm_dtype_to_string(d->dtype),
			 gemm_dtype_to_string(d->out),
			 gemm_dtype_to_string(d->dtype));
		return -EOPNOTSUPP;
	}
	return 0;
}

static int gemm_heuristic(struct cublaslt_gemm *g, char *err, size_t errlen)
{
	const uint64_t ws = g->workspace_bytes;
	int n = 0, e;

	e = LT_TRY(err, errlen, cublasLtMatmulPreferenceCreate, &g->pref);
	if (!e)
		e = LT_TRY(err, errlen, cublasLtMatmulPreferenceSetAttribute,
			   g->pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
			   &ws, sizeof(ws));
	if (!e)
		e = LT_TRY(err, errlen, cublasLtMatmulAlgoGetHeuristic,
			   g->handle, g->op, g->la, g->lb, g->ld, g->ld,
			   g->pref, (int)g->want_algos, g->algos, &n);
	if (e)
		return e;
	/* Keep those that came back usable, in the heuristic's order. */
	for (int i = 0; i < n && i < (int)g->want_algos; i++)
		if (g->algos[i].state == CUBLAS_STATUS_SUCCESS &&
		    g->algos[i].workspaceSize <= ws)
			g->algos[g->n_algos++] = g->algos[i];
	if (!g->n_algos) {
		snprintf(err, errlen,
			 "cublasLtMatmulAlgoGetHeuristic: no algorithm for "
			 "this GEMM");
		return -EOPNOTSUPP;
	}
	return 0;
}

int cublaslt_gemm_new(const struct cublaslt_gemm_desc *desc,
		      struct cublaslt_gemm **ret, char *err, size_t errlen)
{
	struct lt_operand lt_a, lt_b;
	struct cublaslt_gemm *g;
	int e;

	e = cublaslt_load(err, errlen);
	if (!e)
		e = gemm_check(desc, err, errlen);
	if (e)
		return e;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	lt_operands(desc, &lt_a, &lt_b);
	g->a = desc->b;
	g->b = desc->a;
	g->d = desc->d;
	/* Never read with beta 0; D stands in, as cuBLASLt allows. */
	g->c = desc->c ? desc->c : desc->d;
	g->alpha = desc->alpha;
	g->beta = desc->beta;
	g->workspace = desc->workspace;
	g->workspace_bytes = desc->workspace_bytes;
	g->want_algos = desc->algos && desc->algos < CUBLASLT_ALGOS_MAX ?
				desc->algos :
				CUBLASLT_ALGOS_MAX;
	e = LT_TRY(err, errlen, cublasLtCreate, &g->handle);
	if (!e)
		e = gemm_op(g, &lt_a, &lt_b, err, errlen);
	if (!e)
		e = gemm_layouts(g, desc, &lt_a, &lt_b, err, errlen);
	if (!e)
		e = gemm_heuristic(g, err, errlen);
	if (e) {
		cublaslt_gemm_free(g);
		return e;
	}
	*ret = g;
	return 0;
}

struct cublaslt_gemm *cublaslt_gemm_free(struct cublaslt_gemm *g)
{
	if (!g)
		return NULL;
	if (g->pref)
		lt.f.cublasLtMatmulPreferenceDestroy(g->pref);
	if (g->ld)
		lt.f.cublasLtMatrixLayoutDestroy(g->ld);
	if (g->lb)
		lt.f.cublasLtMatrixLayoutDestroy(g->lb);
	if (g->la)
		lt.f.cublasLtMatrixLayoutDestroy(g->la);
	if (g->op)
		lt.f.cublasLtMatmulDescDestroy(g->op);
	if (g->handle)
		lt.f.cublasLtDestroy(g->handle);
	free(g);
	return NULL;
}

unsigned int cublaslt_gemm_algos(const struct cublaslt_gemm *g)
{
	return g->n_algos;
}

int cublaslt_gemm_algo_id(const struct cublaslt_gemm *g, unsigned int i)
{
	size_t written = 0;
	int id = -1;

	if (i >= g->n_algos ||
	    lt.f.cublasLtMatmulAlgoConfigGetAttribute(
		    &g->algos[i].algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof(id),
		    &written) != CUBLAS_STATUS_SUCCESS ||
	    written != sizeof(id))
		return -1;
	return id;
}

/*
 * Names of the configuration ids, for the sizes SM90 kernels use; the
 * enums have hundreds of others (an unnamed one prints as "#<id>").
 */
#define LT_NAME(prefix, x) [prefix##x] = #x
#define TILE(x) LT_NAME(CUBLASLT_MATMUL_TILE_, x)
static const char *const tile_names[] = {
	TILE(64x64),   TILE(64x128),  TILE(128x64),  TILE(64x256),
	TILE(128x128), TILE(256x64),  TILE(128x256), TILE(256x128),
	TILE(64x96),   TILE(96x64),   TILE(96x128),  TILE(128x96),
	TILE(128x160), TILE(160x128), TILE(192x128), TILE(128x192),
	TILE(64x192),  TILE(32x64),   TILE(64x32),   TILE(32x128),
	TILE(128x32),  TILE(32x256),  TILE(256x32),  TILE(16x64),
	TILE(320x128), TILE(128x320), TILE(176x128), TILE(128x176),
	TILE(192x192), TILE(144x64),  TILE(64x144),  TILE(256x192),
	TILE(192x256), TILE(256x256), TILE(256x160), TILE(160x256),
};
#undef TILE
#define STAGES(x) LT_NAME(CUBLASLT_MATMUL_STAGES_, x)
static const char *const stages_names[] = {
	STAGES(32x1),	  STAGES(32x2),	   STAGES(32x3),    STAGES(32x4),
	STAGES(32x5),	  STAGES(32x6),	   STAGES(64x1),    STAGES(64x2),
	STAGES(64x3),	  STAGES(64x4),	   STAGES(64x5),    STAGES(64x6),
	STAGES(128x1),	  STAGES(128x2),   STAGES(128x3),   STAGES(128x4),
	STAGES(128x5),	  STAGES(128x6),   STAGES(32x10),   STAGES(16x10),
	STAGES(16xAUTO),  STAGES(32xAUTO), STAGES(64xAUTO), STAGES(128xAUTO),
	STAGES(256xAUTO),
};
#undef STAGES
#define CLUSTER(x) LT_NAME(CUBLASLT_CLUSTER_SHAPE_, x)
static const char *const cluster_names[] = {
	[CUBLASLT_CLUSTER_SHAPE_AUTO] = "auto",
	CLUSTER(1x1x1),
	CLUSTER(2x1x1),
	CLUSTER(4x1x1),
	CLUSTER(1x2x1),
	CLUSTER(2x2x1),
	CLUSTER(4x2x1),
	CLUSTER(1x4x1),
	CLUSTER(2x4x1),
	CLUSTER(4x4x1),
	CLUSTER(8x1x1),
	CLUSTER(1x8x1),
	CLUSTER(8x2x1),
	CLUSTER(2x8x1),
};
#undef CLUSTER
#undef LT_NAME

static int algo_attr(const cublasLtMatmulAlgo_t *a,
		     cublasLtMatmulAlgoConfigAttributes_t attr, void *buf,
		     size_t size)
{
	size_t written = 0;

	if (lt.f.cublasLtMatmulAlgoConfigGetAttribute(
		    a, attr, buf, size, &written) != CUBLAS_STATUS_SUCCESS ||
	    written != size)
		return -EIO;
	return 0;
}

/*
 * names[id], "#id" when it has none, "" when the library does not say.
 * The cluster shape id is a uint16_t, the others uint32_t.
 */
static void algo_name(const cublasLtMatmulAlgo_t *a,
		      cublasLtMatmulAlgoConfigAttributes_t attr,
		      const char *const *names, size_t n, char *buf, size_t len)
{
	uint32_t id;
	uint16_t id16;

	buf[0] = '\0';
	if (attr == CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID) {
		if (algo_attr(a, attr, &id16, sizeof(id16)))
			return;
		id = id16;
	} else if (algo_attr(a, attr, &id, sizeof(id))) {
		return;
	}
	if (id < n && names[id])
		snprintf(buf, len, "%s", names[id]);
	else
		snprintf(buf, len, "#%u", id);
}

static const char *reduction_name(uint32_t scheme)
{
	switch (scheme) {
	case CUBLASLT_REDUCTION_SCHEME_NONE:
		return "none";
	case CUBLASLT_REDUCTION_SCHEME_INPLACE:
		return "inplace";
	case CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE:
		return "compute_type";
	case CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE:
		return "output_type";
	default:
		return "other";
	}
}

void cublaslt_gemm_algo_describe(const struct cublaslt_gemm *g, unsigned int i,
				 struct gemm_lt_algo *ret)
{
	const cublasLtMatmulAlgo_t *a;
	uint32_t scheme, u;
	int32_t v;

	memset(ret, 0, sizeof(*ret));
	ret->split_k = ret->swizzle = ret->custom = -1;
	if (i >= g->n_algos)
		return;
	a = &g->algos[i].algo;
	ret->known = true;
	algo_name(a, CUBLASLT_ALGO_CONFIG_TILE_ID, tile_names,
		  ARRAY_SIZE(tile_names), ret->tile, sizeof(ret->tile));
	algo_name(a, CUBLASLT_ALGO_CONFIG_STAGES_ID, stages_names,
		  ARRAY_SIZE(stages_names), ret->stages, sizeof(ret->stages));
	algo_name(a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, cluster_names,
		  ARRAY_SIZE(cluster_names), ret->cluster,
		  sizeof(ret->cluster));
	if (!algo_attr(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &v, sizeof(v)))
		ret->split_k = v;
	if (!algo_attr(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme,
		       sizeof(scheme)))
		snprintf(ret->reduction, sizeof(ret->reduction), "%s",
			 reduction_name(scheme));
	if (!algo_attr(a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &u, sizeof(u)))
		ret->swizzle = (int)u;
	if (!algo_attr(a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &u, sizeof(u)))
		ret->custom = (int)u;
}

void cublaslt_gemm_select(struct cublaslt_gemm *g, unsigned int i)
{
	if (i < g->n_algos)
		g->selected = i;
}

/* D = alpha * op(A) op(B) + beta * C; C is D when beta is 0. */
int cublaslt_gemm_launch(struct cublaslt_gemm *g, CUstream stream, char *err,
			 size_t errlen)
{
	return LT_TRY(err, errlen, cublasLtMatmul, g->handle, g->op, &g->alpha,
		      (const void *)(uintptr_t)g->a, g->la,
		      (const void *)(uintptr_t)g->b, g->lb, &g->beta,
		      (const void *)(uintptr_t)g->c, g->ld,
		      (void *)(uintptr_t)g->d, g->ld,
		      &g->algos[g->selected].algo,
		      (void *)(uintptr_t)g->workspace, g->workspace_bytes,
		      (cudaStream_t)stream);
}

#else /* !HAVE_CUBLASLT */

struct cublaslt_gemm {
	int unused;
};

int cublaslt_load(char *err, size_t errlen)
{
	snprintf(err, errlen,
		 "cuBLASLt unavailable: gemmd was built without cublasLt.h");
	return -ENOSYS;
}

int cublaslt_version(void)
{
	return 0;
}

int cublaslt_gemm_new(const struct cublaslt_gemm_desc *desc,
		      struct cublaslt_gemm **ret, char *err, size_t errlen)
{
	return cublaslt_load(err, errlen);
}

struct cublaslt_gemm *cublaslt_gemm_free(struct cublaslt_gemm *g)
{
	return NULL;
}

unsigned int cublaslt_gemm_algos(const struct cublaslt_gemm *g)
{
	return 0;
}

int cublaslt_gemm_algo_id(const struct cublaslt_gemm *g, unsigned int i)
{
	return -1;
}

void cublaslt_gemm_algo_describe(const struct cublaslt_gemm *g, unsigned int i,
				 struct gemm_lt_algo *ret)
{
	memset(ret, 0, sizeof(*ret));
}

void cublaslt_gemm_select(struct cublaslt_gemm *g, unsigned int i)
{
}

int cublaslt_gemm_launch(struct cublaslt_gemm *g, CUstream stream, char *err,
			 size_t errlen)
{
	return cublaslt_load(err, errlen);
}

#endif /* HAVE_CUBLASLT */

json_t *cublaslt_to_json(void)
{
	char why[320];
	bool ok = cublaslt_load(why, sizeof(why)) == 0;

	return json_pack("{s:b, s:o}", "available", ok, "version",
			 ok ? json_integer(cublaslt_version()) : json_null());
}
