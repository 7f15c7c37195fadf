/* params.h -- the on-disk formats of tensor values: PaddlePaddle Fluid's LoDTensor stream (what
 * Fluid's save / save_combine / load_combine ops write and read), the combined parameters file
 * (.pdiparams) made of such streams, and pdlang's own checkpoint file (training state).
 *
 * ---- LoDTensor stream (Paddle: paddle/fluid/framework/lod_tensor.cc SerializeToStream and
 * tensor_util.cc TensorToStream; phi/core/serialization.cc in Paddle 2.x). Little-endian. ----
 *     uint32  LoD-tensor version, 0
 *     uint64  number of LoD levels L
 *     L x {   uint64 byte size S of the level (8 x offsets),
 *             S/8 x uint64 offsets (Fluid's size_t) }
 *     uint32  tensor version, 0
 *     int32   byte size D of the TensorDesc
 *     D bytes VarType.TensorDesc protobuf (framework.proto): data_type, dims (rank 0: no dims)
 *     the elements, row-major, numel x element size bytes, little-endian
 * The element count follows from the dims, so streams can be concatenated.
 *
 * ---- Combined parameters (.pdiparams; Fluid's save_combine / Paddle 2.x jit.save) ----
 * The streams of the parameters, in the order of the name list given (Paddle sorts the names of
 * the persistable vars), nothing before, between or after them.
 *
 * ---- Checkpoint (pdlang's own; little-endian) ----
 *     8 bytes  magic "PDCKPT01"
 *     uint32   number of vars N
 *     N x {    uint32 name length (1 .. PD_CKPT_MAX_NAME), the name bytes (no NUL),
 *              the var's LoDTensor stream (above) }
 *     uint32   number of metadata entries M
 *     M x {    uint32 key length (1 .. PD_CKPT_MAX_NAME), the key bytes,
 *              uint8 tag: 'i' int64 (8 bytes) | 'd' IEEE-754 double (8 bytes) |
 *                         's' string (uint32 length, the bytes, no NUL) }
 *     uint32   CRC-32 (zlib's crc32) of every byte before it
 * Metadata keys written: epoch, step, global_step, rng_offset, seed (int64; the uint64 fields as
 * their bit pattern), loss (double), note, setup (strings; setup: what identifies the training
 * setup, see pd_ckpt_meta). Reading ignores keys it does not know (so newer writers can add
 * some) but refuses a known key with another tag, a repeated key, an unknown tag, a repeated
 * var name.
 *
 * Reading untrusted bytes: every reader checks everything (versions, sizes against the bytes
 * left, the TensorDesc, the dtype, dims non-negative and their product not overflowing, LoD
 * offsets starting at 0, never decreasing and ending at the row count) before it allocates
 * anything sized by the input beyond the input's own size, and never crashes or leaks on any
 * input. Malformed input gives PD_EFORMAT (PD_EUNSUPPORTED for a Fluid dtype pdlang lacks,
 * such as COMPLEX64, or a rank above PD_TENSOR_MAX_DIMS) with a message naming the byte offset
 * ("byte 12: tensor version 7 is not supported (expected 0)").
 *
 * Loading is all-or-nothing: pd_params_load and pd_checkpoint_load read and check everything into
 * temporaries first, then create the vars they need in the scope, then move the tensors in; a
 * failure at any point (PD_ENOMEM included) leaves the scope as it was (vars that existed keep
 * their values; vars created for the load are erased again).
 *
 * Errors of the file functions name the file in err->loc.file (rendered "model.pdiparams: error:
 * holds 3 tensors but the model has 4 parameters"), like pd_program_load.
 *
 * Ownership: the caller owns every argument; the functions copy what they keep. Tensors read
 * become the caller's (pd_tensor_read_stream) or the scope's (the loads). pd_params_path_for
 * returns a heap string the caller frees with pd_free. pd_ckpt_meta has no heap parts. */
#ifndef PD_PARAMS_H
#define PD_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "vm/ir/program.h"
#include "vm/run/scope.h"
#include "vm/run/tensor.h"

/* ---- One LoDTensor stream ---- */

/* Append t's stream to out. t must be initialized and its LoD valid (pd_tensor_validate_lod):
 * PD_EINVAL otherwise. On failure out->len is restored (after PD_ENOMEM out is in its oom
 * state, as pd_buf leaves it). */
pd_status pd_tensor_write_stream(const pd_tensor *t, pd_buf *out, pd_error *err);
/* Read one stream starting at data[*pos] (len is the size of all of data; byte offsets in
 * messages count from data). On success t's old contents are released, t holds the tensor
 * (with its LoD) and *pos is just past the stream; on failure t and *pos are unchanged. */
pd_status pd_tensor_read_stream(const uint8_t *data, size_t len, size_t *pos, pd_tensor *t,
                                pd_error *err);

/* ---- Combined parameters file ---- */

/* Write the tensors of the n vars names[0..n) (each found with pd_scope_find_var, so in scope or
 * a parent; each must hold an initialized tensor) to path, atomically. PD_ENOTFOUND for a
 * missing var, PD_ETYPE for one that is not a tensor, PD_EINVAL for an uninitialized one or a
 * bad argument, PD_EIO, PD_ENOMEM. */
pd_status pd_params_save(const char *path, pd_scope *scope, int n, const char *const *names,
                         pd_error *err);
/* Read path, which must hold exactly n tensors, and install the i-th as the value of the var
 * names[i] of scope itself (pd_scope_var: created when scope has none; an existing var must be
 * UNSET or a tensor, else PD_ETYPE). When expect is not NULL, each name must be a tensor var of
 * its block 0 (PD_ENOTFOUND) with the tensor's dtype (PD_ETYPE) and rank and the known (>= 0)
 * dims (PD_ESHAPE); a var whose shape is unknown (ndims -1) matches any shape. All-or-nothing
 * (see above). PD_EIO when the file cannot be read, PD_EFORMAT for too few or too many tensors
 * ("holds 3 tensors but the model has 4 parameters"), trailing bytes or a malformed stream. */
pd_status pd_params_load(const char *path, pd_scope *scope, int n, const char *const *names,
                         const pd_program *expect, pd_error *err);
/* The bytes pd_params_save writes (the streams of names[0..n) in scope), appended to out;
 * errors as pd_params_save's, naming path. */
pd_status pd_params_encode(const char *path, pd_scope *scope, int n, const char *const *names,
                           pd_buf *out, pd_error *err);

/* ---- The identity of a model's parameter file. A model saved by pdlang records the size and
 * FNV-1a 64 hash (pd_hash_bytes) of the .pdiparams saved with it, in the name of a var of
 * block 0 that no op uses (RAW, not persistable: other tools ignore it),
 * "@PDLANG_PARAMS@SIZE:HASH" (decimal, 16 hex digits), so that a mismatched pair is refused. */
#define PD_PARAMS_IDENTITY_PREFIX "@PDLANG_PARAMS@"
/* Record the identity of the parameter bytes data[0, len) in p (replacing one it had).
 * PD_ENOMEM or PD_OK. */
pd_status pd_params_set_identity(pd_program *p, const void *data, size_t len);
/* When p records an identity, read params_path and check it: PD_EFORMAT ("'m.pdiparams' is not
 * the parameter file saved with this model ...") on a mismatch, PD_EIO when it cannot be read.
 * A model without one (PaddlePaddle's own files) passes. Errors name params_path. */
pd_status pd_params_check_identity(const pd_program *p, const char *params_path, pd_error *err);

/* "X.pdiparams" for "X.pdmodel" or "X.json" (PIR), else model_path + ".pdiparams". Heap (pd_free); NULL on out of
 * memory or a NULL argument. */
char *pd_params_path_for(const char *model_path);

/* The names of the parameters of program p: its persistable tensor vars of block 0, sorted by
 * name -- the order save writes a .pdiparams file in and a load reads it. *names is a heap
 * array (pd_free) of names borrowed from p; *n its length. PD_ENOMEM or PD_OK. */
pd_status pd_params_names(const pd_program *p, const char ***names, int *n);

/* ---- Checkpoints ---- */

#define PD_CKPT_MAGIC "PDCKPT01"
#define PD_CKPT_MAX_NAME 4096     /* longest var name or metadata key, in bytes */
#define PD_CKPT_NOTE_SIZE 128     /* room for the note, its NUL included */
#define PD_CKPT_SETUP_SIZE 1024   /* room for the setup, its NUL included */

/* The training progress saved beside the tensors. A zeroed struct ({0}) is a valid "nothing
 * yet"; a checkpoint that lacks a key leaves its field 0 (note ""). */
typedef struct pd_ckpt_meta {
  int64_t epoch;          /* epochs completed (the epoch to resume in, 0-based) */
  int64_t step;           /* steps (minibatches) done in that epoch */
  int64_t global_step;    /* steps done since training began */
  uint64_t rng_offset;    /* the executor's random-stream offset (pd_exec_rng_offset) */
  uint64_t seed;          /* the seed training started with */
  double loss;            /* the last reported loss, 0 when none */
  char note[PD_CKPT_NOTE_SIZE];  /* free-form, NUL-terminated (longer notes are cut on save) */
  /* What identifies the training setup the checkpoint belongs to: "KEY=VALUE" entries separated
   * by '\n' (a VALUE starting with '#' is a hash, compared but not shown). "" (checkpoints of
   * older writers): not known, never compared. Longer texts are cut on save. */
  char setup[PD_CKPT_SETUP_SIZE];
} pd_ckpt_meta;

/* Write the n vars names[0..n) (found as for pd_params_save; no name twice: PD_EINVAL) and meta
 * (NULL: all zero) to path, atomically. Errors as pd_params_save. */
pd_status pd_checkpoint_save(const char *path, pd_scope *scope, int n, const char *const *names,
                             const pd_ckpt_meta *meta, pd_error *err);
/* Read a checkpoint, check it whole (CRC first: PD_EFORMAT "checksum mismatch" for a damaged
 * or truncated file), and install every var in it into scope itself (pd_scope_var, as
 * pd_params_load) and the metadata into *meta (meta may be NULL). When expect is not NULL, every
 * var of the checkpoint must be declared by its block 0 with the same dtype and shape, as for
 * pd_params_load: a var it does not declare is PD_ENOTFOUND naming the var. All-or-nothing:
 * on failure neither the scope nor *meta changes. */
pd_status pd_checkpoint_load(const char *path, pd_scope *scope, const pd_program *expect,
                             pd_ckpt_meta *meta, pd_error *err);
/* pd_checkpoint_load that first compares the checkpoint's setup (when it has one) with setup
 * (when not NULL), before anything is installed: PD_EINVAL naming path, "written by another
 * training setup: the optimizer is sgd(lr=0.1) in the checkpoint but adam(...) now; the
 * parameters differ", every entry that differs. */
pd_status pd_checkpoint_load_setup(const char *path, pd_scope *scope, const pd_program *expect,
                                   const char *setup, pd_ckpt_meta *meta, pd_error *err);

#endif /* PD_PARAMS_H */
