/* infershape_sequence.c -- shape functions of the ops on sequences (LoD tensors): sequence_pool
 * and lod_reset. A sequence batch's first dim counts the steps of all its sequences together;
 * how many sequences there are is only known at run time. */
#include "config.h"
#include "vm/ops/infershape.h"

#include <inttypes.h>

/* sequence_pool: one row per sequence: Out = [-1] + X.dims[1:], one LoD level fewer. MaxIndex
 * (int32, for MAX pooling's backward pass) is shaped like Out. */
pd_status pd_infer_sequence_pool(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d;
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st) return st;
  if (d.n == 0) return pd_infer_fail(c, PD_ESHAPE, "X must have at least 1 dim, got []");
  if (d.n > 0) d.d[0] = -1;
  int lod = x->lod_level > 0 ? x->lod_level - 1 : 0;
  if ((st = pd_infer_set_out(c, "Out", 0, &d, x->dtype, lod))) return st;
  return pd_infer_set_out(c, "MaxIndex", 0, &d, PD_INT32, lod);
}

/* lod_reset: X's data with new sequence boundaries: those of Y (its LoD, or its data when it has
 * none), or target_lod (offsets from 0 to X's first dim); with append, they are added as a new
 * innermost level. target_lod may instead end at the number of X's top-level sequences when X
 * has LoD: it groups them, a new top level (checked at run time). Out has X's shape. */
pd_status pd_infer_lod_reset(pd_infer_ctx *c) {
  const pd_var_desc *x, *y = NULL;
  pd_infer_dims d;
  char s[PD_DIMS_BUF], sl[PD_LIST_BUF];
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st) return st;
  if (pd_infer_nin(c, "Y") > 0 && (st = pd_infer_in(c, "Y", 0, &y, NULL))) return st;
  bool group = false;
  if (!y) {
    int n = pd_infer_attr_len(c, "target_lod");
    if (n < 2)
      return pd_infer_fail(c, PD_EINVAL, "without Y, target_lod must give at least 2 offsets, got %s",
                           pd_infer_attr_ints_str(c, "target_lod", sl));
    bool ok = pd_infer_attr_ints_at(c, "target_lod", 0) == 0;
    for (int i = 1; ok && i < n; i++)
      ok = pd_infer_attr_ints_at(c, "target_lod", i) >= pd_infer_attr_ints_at(c, "target_lod", i - 1);
    if (!ok)
      return pd_infer_fail(c, PD_EINVAL, "target_lod %s must start at 0 and never decrease",
                           pd_infer_attr_ints_str(c, "target_lod", sl));
    int64_t last = pd_infer_attr_ints_at(c, "target_lod", n - 1);
    group = x->lod_level > 0 && !pd_infer_attr_bool(c, "append") && d.n > 0 && d.d[0] >= 0 &&
            last != d.d[0];
    if (d.n > 0 && d.d[0] >= 0 && last != d.d[0] && !group)
      return pd_infer_fail(c, PD_ESHAPE, "target_lod %s ends at %" PRId64 " but X %s has %" PRId64
                           " rows", pd_infer_attr_ints_str(c, "target_lod", sl), last,
                           pd_infer_dims_str(&d, s), d.d[0]);
  }
  int level = y && y->lod_level > 0 ? y->lod_level : 1;
  if (pd_infer_attr_bool(c, "append") || group) level = x->lod_level + 1;
  return pd_infer_set_out(c, "Out", 0, &d, x->dtype, level);
}

/* elman_rnn: Input [T, H] with one LoD level, Weight [H, H], H0 [H] or [sequences, H] (the
 * number of sequences is known at run time only); Hidden is Input's shape and LoD. */
pd_status pd_infer_elman_rnn(pd_infer_ctx *c) {
  const pd_var_desc *x, *w, *h0 = NULL;
  pd_infer_dims d, wd, hd;
  char s1[PD_DIMS_BUF], s2[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, "Input", 0, &x, &d);
  if (!st) st = pd_infer_in(c, "Weight", 0, &w, &wd);
  if (!st && pd_infer_nin(c, "H0") > 0) st = pd_infer_in(c, "H0", 0, &h0, &hd);
  if (st) return st;
  if (x->lod_level != 1 || (d.n >= 0 && d.n != 2))
    return pd_infer_fail(c, PD_ESHAPE, "Input must be a batch of sequences of rows ([T, H], one "
                         "LoD level); it is %s with %d LoD levels", pd_infer_dims_str(&d, s1),
                         x->lod_level);
  int64_t hid = d.n == 2 ? d.d[1] : -1;
  if (w->dtype != x->dtype || (wd.n >= 0 && (wd.n != 2 || !pd_infer_dim_compatible(wd.d[0], hid) ||
                                             !pd_infer_dim_compatible(wd.d[1], hid))))
    return pd_infer_fail(c, PD_ESHAPE, "Weight must be [H, H] with Input's H and dtype (Input "
                         "is %s); it is %s", pd_infer_dims_str(&d, s1),
                         pd_infer_dims_str(&wd, s2));
  if (h0 && (h0->dtype != x->dtype ||
             (hd.n >= 0 && (hd.n < 1 || hd.n > 2 || !pd_infer_dim_compatible(hd.d[hd.n - 1], hid)))))
    return pd_infer_fail(c, PD_ESHAPE, "H0 must be [H] or [sequences, H] with Input's H and "
                         "dtype (Input is %s); it is %s", pd_infer_dims_str(&d, s1),
                         pd_infer_dims_str(&hd, s2));
  return pd_infer_set_out(c, "Hidden", 0, &d, x->dtype, 1);
}
