/* tensor.h -- the VM's dense tensor (Fluid's LoDTensor): a dtype, a shape, 64-byte aligned
 * contiguous row-major storage, and an optional LoD (level of detail) describing how rows group
 * into sequences. Also pd_tensor_array, a growable array of tensors (LoDTensorArray).
 *
 * LoD follows Fluid: level l is an array of offsets that starts at 0 and never decreases; the
 * last level indexes rows of the tensor (its last offset is dims[0]), and each higher level
 * indexes sequences of the level below (its last offset is that level's sequence count). Two
 * sequences of lengths 3 and 2 are lod = [[0, 3, 5]] on a tensor of 5 rows.
 *
 * Ownership: a pd_tensor owns its LoD arrays and holds one reference to its storage; storage is
 * shared between tensors by pd_tensor_share (reference counted, freed with the last tensor that
 * uses it). A tensor embedded in another struct is set up with pd_tensor_init and released with
 * pd_tensor_release; pd_tensor_new/pd_tensor_free do both for a heap tensor. pd_tensor_array
 * owns its tensors. Tensors are used by one thread at a time (reference counts are not atomic).
 *
 * Places: a tensor's storage lives in host memory (PD_K_HOST) or in the memory of the open GPU
 * (PD_K_CUDA, kernels/kernels.h). t->place says where: where the storage is, and where resize
 * allocates new storage. pd_tensor_data gives a pointer into that memory, so host code may only
 * dereference it for a host tensor; pd_tensor_to_place and pd_tensor_copy_to move data between
 * places. Every function below works on tensors of either place (printing and set_data copy
 * through the host); a new tensor is on the host.
 *
 * Failure: every function that allocates returns PD_ENOMEM on failure and leaves the tensor as
 * it was (so a failed resize keeps the old shape and data). A failed copy between places gives
 * PD_ERUNTIME (pd_k_cuda_error() says why). */
#ifndef PD_TENSOR_H
#define PD_TENSOR_H

#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"
#include "base/dtype.h"
#include "kernels/kernels.h"

#define PD_TENSOR_MAX_DIMS PD_K_MAX_DIMS

/* Reference-counted aligned storage. Private to tensor.c; exposed for debugging. */
typedef struct pd_storage {
  int refs;
  pd_k_place place;   /* where data lives: host (pd_k_host_alloc) or GPU (pd_k_dev_alloc) */
  size_t cap;   /* bytes */
  void *data;   /* host: PD_K_ALIGN-aligned */
  pd_k_prepared *prep;  /* a backend's copy of the values in its own layout, or NULL (owned;
                           see pd_tensor_prepared) */
} pd_storage;

typedef struct pd_lod_level {
  int64_t n;          /* number of offsets (sequences + 1) */
  int64_t *offsets;   /* owned */
} pd_lod_level;

typedef struct pd_tensor {
  pd_dtype dtype;
  int ndims;                              /* 0 = a scalar (one element) */
  int64_t dims[PD_TENSOR_MAX_DIMS];
  pd_storage *storage;                    /* NULL until the first resize ("not initialized") */
  pd_k_place place;                       /* where storage is (or will be allocated) */
  int nlod;                               /* LoD levels, 0 = none */
  pd_lod_level *lod;                      /* nlod levels, owned */
} pd_tensor;

/* ---- Life cycle ---- */
void pd_tensor_init(pd_tensor *t);        /* empty: fp32, rank 0, no storage, no LoD */
void pd_tensor_release(pd_tensor *t);     /* drops storage and LoD; t is empty again, but keeps
                                             its place (an output stays where its op runs) */
pd_tensor *pd_tensor_new(void);           /* heap, empty; NULL on out of memory */
void pd_tensor_free(pd_tensor *t);        /* release + free; NULL is a no-op */

/* Give t this dtype and shape with storage for its elements. The storage is kept when it is
 * big enough and not shared; otherwise t gets new storage (a shared one is left to the other
 * tensors). Element values are unspecified after a resize that changes the storage (use
 * pd_tensor_fill). LoD is kept (pd_tensor_validate_lod checks it still fits). PD_EINVAL for a
 * bad dtype, ndims outside [0, PD_TENSOR_MAX_DIMS], a negative dim or a size that overflows. */
pd_status pd_tensor_resize(pd_tensor *t, pd_dtype dtype, int ndims, const int64_t *dims);
/* Resize, then copy numel elements from data (a dense row-major HOST buffer of that dtype),
 * uploading it when t is on the GPU. */
pd_status pd_tensor_set_data(pd_tensor *t, pd_dtype dtype, int ndims, const int64_t *dims,
                             const void *data);
/* Change the shape without touching the data (reshape): the element count must not change.
 * PD_ESHAPE otherwise. */
pd_status pd_tensor_reshape(pd_tensor *t, int ndims, const int64_t *dims);

/* Elements of the shape (1 for rank 0); size in bytes of the elements. */
int64_t pd_tensor_numel(const pd_tensor *t);
size_t pd_tensor_nbytes(const pd_tensor *t);
/* The elements, NULL before the first resize. Typed views for the common dtypes. */
void *pd_tensor_data(const pd_tensor *t);
#define PD_TENSOR_F32(t) ((float *)pd_tensor_data(t))
#define PD_TENSOR_F64(t) ((double *)pd_tensor_data(t))
#define PD_TENSOR_I32(t) ((int32_t *)pd_tensor_data(t))
#define PD_TENSOR_I64(t) ((int64_t *)pd_tensor_data(t))
#define PD_TENSOR_BOOL(t) ((uint8_t *)pd_tensor_data(t))
bool pd_tensor_initialized(const pd_tensor *t);   /* has storage */
/* Element i of a host tensor as a double (integers exactly up to 2^53; an int64 past it
 * rounds), for host code that reads values one at a time (conversions, messages); 0 for a
 * dtype without numbers. */
double pd_tensor_get(const pd_tensor *t, int64_t i);
/* The slot of a backend's prepared copy of t's values (kernels.h, pd_k_prepared: a constant
 * operand in the layout a product reads), NULL before the first resize. The storage owns what
 * is put there and releases it when its values may change: on a resize that keeps the storage
 * (every writer resizes first: kernels their outputs, loaders their tensors),
 * pd_tensor_set_data, pd_tensor_fill, and when the storage goes. Kernels fill it only for an
 * input that no op of the running program writes (pd_ctx_in_const, vm/run/exec.h). Code that
 * writes through pd_tensor_data into a tensor it did not resize must call pd_tensor_touch
 * first. A cache: it may be filled through a const tensor (tensors are used by one thread at a
 * time). */
pd_k_prepared **pd_tensor_prepared(const pd_tensor *t);
void pd_tensor_touch(pd_tensor *t);

/* dst = a deep copy of src (dtype, shape, data, LoD) on src's place; dst's old contents are
 * released first on success. dst == src is a no-op. */
pd_status pd_tensor_copy(pd_tensor *dst, const pd_tensor *src);
/* The same with the copy made on `place` (a fetch: pd_tensor_copy_to(out, t, PD_K_HOST)).
 * dst == src moves src (pd_tensor_to_place). */
pd_status pd_tensor_copy_to(pd_tensor *dst, const pd_tensor *src, pd_k_place place);
/* Move t's data to `place` (new storage there, the data copied, the old storage dropped); a
 * tensor already there, or without storage, only gets t->place set. Other tensors sharing the
 * old storage keep it. */
pd_status pd_tensor_to_place(pd_tensor *t, pd_k_place place);
bool pd_tensor_on_gpu(const pd_tensor *t);
/* Copy bytes between places (host memcpy, upload, download or device copy). */
pd_status pd_mem_copy(void *dst, pd_k_place dst_place, const void *src, pd_k_place src_place,
                      size_t nbytes);
/* dst shares src's storage (Fluid's ShareDataWith): same dtype, shape, LoD; writes through one
 * are seen through the other until one of them is resized onto new storage. */
pd_status pd_tensor_share(pd_tensor *dst, const pd_tensor *src);
/* Set every element to value (converted to the dtype; see pd_k_cast_fn). PD_EINVAL before the
 * first resize. */
pd_status pd_tensor_fill(pd_tensor *t, double value);

/* ---- LoD ---- */
/* Replace t's LoD with nlevels levels; level l has lens[l] offsets copied from offsets[l].
 * nlevels 0 clears it. The LoD is not validated here (see below). */
pd_status pd_tensor_set_lod(pd_tensor *t, int nlevels, const int64_t *const *offsets,
                            const int64_t *lens);
/* Copy src's LoD onto dst. */
pd_status pd_tensor_copy_lod(pd_tensor *dst, const pd_tensor *src);
void pd_tensor_clear_lod(pd_tensor *t);
/* Check the LoD against the rules above and dims[0]: PD_OK, or PD_ESHAPE with a message
 * ("lod level 0 ends at 4 but the tensor has 5 rows"). A tensor without LoD is valid. */
pd_status pd_tensor_validate_lod(const pd_tensor *t, pd_error *err);

/* ---- Printing ----
 * Append t the way a framework prints it:
 *     Tensor(shape=[3, 1], dtype=float32, lod=[[0, 2, 3]])
 *     [[  1],
 *      [2.5],
 *      [  3]]
 * The header omits lod when there is none. Values: floats with %g's 6 significant digits
 * (nan, inf, -inf), integers in full, bools as true/false, right-aligned to a common width.
 * Tensors of more than PD_TENSOR_PRINT_MAX elements show the first and last
 * PD_TENSOR_PRINT_EDGE entries of every dim with "..." between (as NumPy summarises). A rank-0
 * tensor prints its value after the header; an uninitialized one prints
 * "Tensor(not initialized)". Rows of a rank-2 block end in ",\n", blocks of higher rank are
 * separated by blank lines, as in NumPy. Ends with a newline. */
#define PD_TENSOR_PRINT_MAX 1000
#define PD_TENSOR_PRINT_EDGE 3
void pd_tensor_print(const pd_tensor *t, pd_buf *out);

/* ---- Tensor arrays (LoDTensorArray; also the feed and fetch lists) ---- */
typedef struct pd_tensor_array {
  size_t n, cap;
  pd_tensor **items;   /* n owned tensors; pointers stay valid while the array grows */
} pd_tensor_array;

void pd_tensor_array_init(pd_tensor_array *a);
void pd_tensor_array_release(pd_tensor_array *a);     /* frees every tensor */
/* Append an empty tensor and return it (owned by the array); NULL on out of memory. */
pd_tensor *pd_tensor_array_push(pd_tensor_array *a);
/* Grow to at least n tensors (new ones empty), as write_to_array does for an index past the
 * end; shrinking is not done here (see truncate). */
pd_status pd_tensor_array_reserve(pd_tensor_array *a, int64_t n);
void pd_tensor_array_truncate(pd_tensor_array *a, int64_t n);  /* frees tensors [n, len) */
pd_tensor *pd_tensor_array_get(const pd_tensor_array *a, int64_t i);  /* NULL if out of range */

#endif /* PD_TENSOR_H */
