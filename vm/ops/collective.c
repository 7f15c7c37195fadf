/* collective.c -- the collective ops of data-parallel training, Fluid's c_allreduce_sum,
 * c_broadcast and c_sync_comm_stream (ring 0: every rank of the job), over the communicator of
 * vm/run/comm.h. vm/passes/data_parallel.h inserts them; in a job of one process each is the
 * identity.
 *
 * c_allreduce_sum with use_calc_stream = false (what the pass emits) hands X to the gradient
 * buckets and returns at once (the sum runs while the backward pass goes on); the
 * c_sync_comm_stream that follows waits and writes each sum back into its var, so Out must be X.
 * A gradient that fills a bucket by itself, or one of the last bucket's large ones, is summed in
 * its var's own storage, as Fluid's c_allreduce_sum does on its communication stream: its value
 * is then unspecified until the c_sync_comm_stream (the ops between read and write other vars).
 * Storage a var shares with another is never written through: the other var keeps its values.
 * With use_calc_stream = true the sum is written before the op returns. c_broadcast is
 * blocking.
 * On the GPU place (GPU ranks, flag GPU) the tensors are device memory and the communicator
 * sums and broadcasts them through NCCL, queued on the GPU: "written" then means queued before
 * any later kernel. */
#include "config.h"

#include "vm/ops/infershape.h"
#include "vm/ops/kern.h"
#include "vm/run/comm.h"

/* c_allreduce_sum, c_broadcast: Out is X's shape, dtype and LoD. */
pd_status pd_infer_collective(pd_infer_ctx *c) {
  int64_t ring = pd_infer_attr_int(c, "ring_id");
  if (ring != 0)
    return pd_infer_fail(c, PD_EUNSUPPORTED, "ring_id %" PRId64 ": pdlang has ring 0 only (every "
                         "rank of the job)", ring);
  return pd_infer_same_as_x(c, -1);
}

/* c_sync_comm_stream: Out[i] is X[i]. */
pd_status pd_infer_c_sync_comm_stream(pd_infer_ctx *c) {
  int n = pd_infer_nin(c, "X");
  if (pd_infer_nout(c, "Out") != n)
    return pd_infer_fail(c, PD_EINVAL, "X has %d vars but Out %d; Out must list X's vars", n,
                         pd_infer_nout(c, "Out"));
  for (int i = 0; i < n; i++) {
    const pd_var_desc *x;
    pd_infer_dims d;
    pd_status st = pd_infer_in(c, "X", i, &x, &d);
    if (st) return st;
    if ((st = pd_infer_set_out(c, "Out", i, &d, x->dtype, x->lod_level))) return st;
  }
  return PD_OK;
}

static pd_status ring0(const pd_exec_ctx *ctx) {
  int64_t ring = pd_ctx_attr_int(ctx, "ring_id");
  if (ring != 0)
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "ring_id %" PRId64 ": pdlang has ring 0 only", ring);
  return PD_OK;
}

/* The communicator's error (it has no location) as the op's. */
static pd_status comm_fail(const pd_exec_ctx *ctx, pd_status st, pd_error *e) {
  pd_status r = pd_ctx_fail(ctx, st, "%s", e->msg ? e->msg : pd_status_str(st));
  pd_error_clear(e);
  return r;
}

/* X and Out as tensors; Out gets X's value when it is another var. */
static pd_status x_to_out(pd_exec_ctx *ctx, const pd_tensor **x, pd_tensor **out) {
  pd_status st;
  if ((st = ring0(ctx)) || (st = in1(ctx, "X", x)) || (st = out1(ctx, "Out", out))) return st;
  if (*out != *x && pd_tensor_copy(*out, *x)) return nomem(ctx);
  pd_tensor_touch(*out); /* written in place below, without a resize */
  return PD_OK;
}

static void release_keep(void *keep) { pd_tensor_free(keep); }

pd_status pd_kernel_c_allreduce_sum(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_tensor *out;
  pd_status st = x_to_out(ctx, &x, &out);
  if (st || pd_comm_size() == 1) return st;
  if ((st = want_float(ctx, "X", x))) return st;
  bool now = pd_ctx_attr_bool(ctx, "use_calc_stream");
  if (!now && out != x)
    return pd_ctx_fail(ctx, PD_EINVAL, "with use_calc_stream = false the sum is written back at "
                       "c_sync_comm_stream, so Out must be X ('%s'), not '%s'",
                       in_name(ctx, "X", 0), pd_ctx_out_name(ctx, "Out", 0));
  if (now && pd_comm_grad_pending())
    return pd_ctx_fail(ctx, PD_EINVAL, "use_calc_stream = true while %d sums are in flight; a "
                       "c_sync_comm_stream must come first", pd_comm_grad_pending());
  if (now && out->storage && out->storage->refs > 1) {
    /* Summed before the op returns, where the sum is made: never through storage that another
     * var shares (which keeps its values); Out gets a copy of its own first. */
    pd_tensor *shared = pd_tensor_new();
    st = !shared || pd_tensor_share(shared, out) || pd_tensor_copy(out, shared) ? PD_ENOMEM : PD_OK;
    pd_tensor_free(shared);
    if (st) return nomem(ctx);
  }
  pd_error e = {0};
  if (pd_ctx_place(ctx) == PD_K_CUDA) {
    st = pd_comm_grad_start_dev(pd_tensor_data(out), pd_tensor_numel(out), out->dtype, &e);
  } else {
    /* The communicator reads the var's storage when it packs its bucket, or sums it there
     * (when no other var shares it); a second reference keeps it alive until then (a later op
     * that wrote the var would get new storage, and c_sync_comm_stream then copies the sum into
     * it). */
    pd_comm_grad g = {.data = pd_tensor_data(out), .n = pd_tensor_numel(out),
                      .dtype = out->dtype, .own = out->storage && out->storage->refs == 1};
    if (out->storage) {
      pd_tensor *keep = pd_tensor_new();
      if (!keep || pd_tensor_share(keep, out)) {
        pd_tensor_free(keep);
        return nomem(ctx);
      }
      g.release = release_keep;
      g.keep = keep;
    }
    st = pd_comm_grad_start(&g, &e);
  }
  if (st) return comm_fail(ctx, st, &e);
  if (!now) return PD_OK;
  void *dst = pd_tensor_data(out);
  if ((st = pd_comm_grad_finish(&dst, &e))) return comm_fail(ctx, st, &e);
  return PD_OK;
}

pd_status pd_kernel_c_broadcast(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_tensor *out;
  pd_status st = x_to_out(ctx, &x, &out);
  if (st) return st;
  int64_t root = pd_ctx_attr_int(ctx, "root");
  if (root < 0 || root >= pd_comm_size())
    return pd_ctx_fail(ctx, PD_EINVAL, "root %" PRId64 " is not a rank of this job (0 to %d)",
                       root, pd_comm_size() - 1);
  if (pd_comm_size() == 1) return PD_OK;
  pd_error e = {0};
  size_t bytes = (size_t)pd_tensor_numel(out) * pd_dtype_size(out->dtype);
  st = pd_ctx_place(ctx) == PD_K_CUDA ? pd_comm_bcast_dev(pd_tensor_data(out), bytes, (int)root, &e)
                                       : pd_comm_bcast(pd_tensor_data(out), bytes, (int)root, &e);
  if (st) return comm_fail(ctx, st, &e);
  return PD_OK;
}

pd_status pd_kernel_c_sync_comm_stream(pd_exec_ctx *ctx) {
  pd_status st = ring0(ctx);
  if (st) return st;
  int n = pd_ctx_nin(ctx, "X");
  if (pd_ctx_nout(ctx, "Out") != n)
    return pd_ctx_fail(ctx, PD_EINVAL, "X has %d vars but Out %d", n, pd_ctx_nout(ctx, "Out"));
  if (pd_comm_size() == 1) return PD_OK;
  int pending = pd_comm_grad_pending();
  if (pending != n)
    return pd_ctx_fail(ctx, PD_EINVAL, "%d sums are in flight but X lists %d vars; X must list "
                       "the vars of the c_allreduce_sum ops since the last sync, in their order",
                       pending, n);
  local_buf lb = {0};
  void **dst = local_get(&lb, sizeof *dst * (size_t)(n ? n : 1));
  if (!dst) return nomem(ctx);
  for (int i = 0; i < n && !st; i++) {
    pd_tensor *o;
    if ((st = out_at(ctx, "Out", i, true, &o))) break;
    if (o != pd_ctx_in_at(ctx, "X", i)) {
      st = pd_ctx_fail(ctx, PD_EINVAL, "Out[%d] '%s' must be X[%d] '%s' (the sums are written in "
                       "place)", i, pd_ctx_out_name(ctx, "Out", i), i, in_name(ctx, "X", i));
      break;
    }
    /* Never write through shared storage; the communicator's own reference to a var it still
     * holds (summed in place, or not yet packed) is not another user. */
    const void *held = pd_comm_grad_held(i);
    int mine = held && o->storage && o->storage->data == held;
    if (o->storage && o->storage->refs > 1 + mine) {
      hold h;
      hold_init(&h);
      const pd_tensor *keep = o;
      if (!(st = unalias(ctx, &h, o, &keep)))
        st = resize(ctx, o, keep->dtype, keep->ndims, keep->dims, keep);
      hold_free(&h);
      if (st) break;
    }
    int64_t k;
    pd_dtype dt;
    pd_comm_grad_info(i, &k, &dt);
    if (pd_tensor_numel(o) != k || o->dtype != dt) {
      st = pd_ctx_fail(ctx, PD_ESHAPE, "X[%d] '%s' holds %" PRId64 " %s values but the %d-th sum "
                       "in flight has %" PRId64 " %s", i, in_name(ctx, "X", i), pd_tensor_numel(o),
                       pd_dtype_name(o->dtype), i + 1, k, pd_dtype_name(dt));
      break;
    }
    dst[i] = pd_tensor_data(o);
  }
  pd_error e = {0};
  if (!st && (st = pd_comm_grad_finish(dst, &e))) st = comm_fail(ctx, st, &e);
  local_free(&lb);
  return st;
}
