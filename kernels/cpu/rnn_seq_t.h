/* rnn_seq_t.h -- the typed parts of rnn_seq.c (included once per float type with T and TN set;
 * cpu.h's template convention): one part's share of one step of the fused LSTM and GRU,
 * forward and backward, and the weights' column permutation. Part t owns the hidden units
 * cut[t] .. cut[t + 1] - 1 (u of them); "own columns" are those units' columns of every gate.
 * In the permuted layout (wp, dwp, the backward's dg) part t's columns are side by side from
 * gates * cut[t] on, gate by gate: column gates * lo + q u + x is gate q's unit lo + x. */

/* wp = w [H, gates H] with its columns permuted, or (trans) that transposed, [gates H, H]:
 * for the products without packed weights (fp64, CPUs without AVX-512). Row by row of w. */
static void TF(seq_permute)(const seq_job *j, const T *w, T *wp, bool trans) {
  const int64_t H = j->s->hid, G = j->gates * H;
  for (int64_t i = 0; i < H; i++)
    for (int t = 0; t < j->nparts; t++) {
      const int64_t lo = j->cut[t], u = j->cut[t + 1] - lo;
      for (int q = 0; q < j->gates; q++)
        for (int64_t x = 0; x < u; x++) {
          const int64_t to = j->gates * lo + q * u + x;
          if (trans) wp[to * H + i] = w[i * G + q * H + lo + x];
          else wp[i * G + to] = w[i * G + q * H + lo + x];
        }
    }
}

/* dw [H, gates H] from dwp (row stride ldw) in the permuted layout, and db [gates H] from dbp
 * when given. */
static void TF(seq_unpermute)(const seq_job *j, const T *dwp, T *dw, const double *dbp, T *db) {
  const int64_t H = j->s->hid, G = j->gates * H;
  for (int64_t i = -1; i < H; i++) /* i = -1: db */
    for (int t = 0; t < j->nparts; t++) {
      const int64_t lo = j->cut[t], u = j->cut[t + 1] - lo;
      for (int q = 0; q < j->gates; q++)
        for (int64_t x = 0; x < u; x++) {
          const int64_t to = q * H + lo + x, from = j->gates * lo + q * u + x;
          if (i >= 0) dw[i * G + to] = dwp[i * j->ldw + from];
          else if (db) db[to] = (T)dbp[from];
        }
    }
}

/* h of step k - 1 for the rows of step `it`, [m, H]: the initial states for step 0, else the
 * forward's hidden rows of step k - 1 gathered into the part's scratch. */
static const T *TF(seq_prev_h)(const seq_job *j, int64_t it, int64_t m, T *scratch) {
  const pd_k_rnn_seq *s = j->s;
  const int64_t H = s->hid;
  if (it == 0) return (const T *)j->h0;
  const int64_t *prow = s->row + s->koff[it - 1];
  for (int64_t r = 0; r < m; r++)
    memcpy(scratch + r * H, (const T *)j->hidden_in + prow[r] * H, (size_t)H * sizeof(T));
  return scratch;
}

/* out = a + b over n elements, either absent (NULL) counting as zeros. */
static void TF(seq_sum)(int64_t n, const T *restrict a, const T *restrict b, T *restrict out) {
  if (a && b) {
    PD_SIMD for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
  } else if (a || b) {
    memcpy(out, a ? a : b, (size_t)n * sizeof(T));
  } else {
    memset(out, 0, (size_t)n * sizeof(T));
  }
}

/* One row of lstm_cell_grad's arithmetic (rnn_cell.c) on u units: the gates i f g o, the
 * previous cells, tanh of the cells, dh and dc in; the four gates' gradients out twice (into
 * the step's dg and Input's gradient row), and the previous cells' (dc f). */
static void TF(lstm_bw_row)(int64_t u, const T *restrict gi, const T *restrict gf,
                            const T *restrict gg, const T *restrict go, const T *restrict pc,
                            const T *restrict tc, const T *restrict dh, const T *restrict dc,
                            T *restrict d, T *restrict dx, int64_t ldx, T *restrict dpc) {
  /* d: the four gradients side by side (u apart), dx: the same, ldx apart */
  PD_SIMD for (int64_t x = 0; x < u; x++) {
    T i = gi[x], f = gf[x], g = gg[x], o = go[x], th = tc[x];
    T dcj = dc[x] + dh[x] * o * ((T)1 - th * th);
    T vi = dcj * g * i * ((T)1 - i), vf = dcj * pc[x] * f * ((T)1 - f);
    T vg = dcj * i * ((T)1 - g * g), vo = dh[x] * th * o * ((T)1 - o);
    d[x] = dx[x] = vi;
    d[u + x] = dx[ldx + x] = vf;
    d[2 * u + x] = dx[2 * ldx + x] = vg;
    d[3 * u + x] = dx[3 * ldx + x] = vo;
    dpc[x] = dcj * f;
  }
}

/* acc[c] += the sum of the m rows of x (row stride ld) in column c, in double, rows in order. */
static void TF(seq_colsum)(int64_t m, int64_t w, const T *restrict x, int64_t ld,
                           double *restrict acc) {
  for (int64_t r = 0; r < m; r++) {
    const T *restrict xr = x + r * ld;
    PD_SIMD for (int64_t c = 0; c < w; c++) acc[c] += (double)xr[c];
  }
}

/* One row of gru_cell_grad's arithmetic (rnn_cell.c) on u units: r, z, n, hn and the previous
 * h in, with d the step's dh; Input's gradients (dr, dz, dn), those of h W + b (dr, dz, dn r)
 * and h's direct part (d z) out. */
static void TF(gru_bw_row)(int64_t u, const T *restrict sr, const T *restrict sz,
                           const T *restrict sn, const T *restrict shn, const T *restrict ph,
                           const T *restrict dh, T *restrict dxr, T *restrict dxz,
                           T *restrict dxn, T *restrict dpr, T *restrict dpz, T *restrict dpn,
                           T *restrict direct) {
  PD_SIMD for (int64_t x = 0; x < u; x++) {
    T d = dh[x], rg = sr[x], z = sz[x], ng = sn[x], hn = shn[x];
    T dn = d * ((T)1 - z) * ((T)1 - ng * ng);
    T dr = dn * hn * rg * ((T)1 - rg), dz = d * (ph[x] - ng) * z * ((T)1 - z);
    dxr[x] = dpr[x] = dr;
    dxz[x] = dpz[x] = dz;
    dxn[x] = dn;
    dpn[x] = dn * rg;
    direct[x] = d * z;
  }
}

/* gru_cell's arithmetic on one row of u units (rnn_cell.c's order of additions): the
 * pre-activations of r and z, and hn = P_n + b_n. */
static void TF(gru_pre_row)(int64_t u, const T *restrict xr, const T *restrict xz,
                            const T *restrict pr, const T *restrict pz, const T *restrict pn,
                            const T *restrict br, const T *restrict bz, const T *restrict bn,
                            T *restrict r, T *restrict z, T *restrict hn) {
  PD_SIMD for (int64_t i = 0; i < u; i++) {
    r[i] = xr[i] + pr[i] + br[i];
    z[i] = xz[i] + pz[i] + bz[i];
    hn[i] = pn[i] + bn[i];
  }
}

/* n's pre-activation x_n + r hn. */
static void TF(gru_cand_row)(int64_t u, const T *restrict xn, const T *restrict r,
                             const T *restrict hn, T *restrict n) {
  PD_SIMD for (int64_t i = 0; i < u; i++) n[i] = xn[i] + r[i] * hn[i];
}

/* h = (1 - z) n + z h_prev. */
static void TF(gru_out_row)(int64_t u, const T *restrict z, const T *restrict n,
                            const T *restrict ph, T *restrict h) {
  PD_SIMD for (int64_t i = 0; i < u; i++) h[i] = ((T)1 - z[i]) * n[i] + z[i] * ph[i];
}

/* c = f pc + i g (lstm_cell's order). */
static void TF(lstm_c_row)(int64_t u, const T *restrict i, const T *restrict f,
                           const T *restrict g, const T *restrict pc, T *restrict c) {
  PD_SIMD for (int64_t x = 0; x < u; x++) c[x] = f[x] * pc[x] + i[x] * g[x];
}

/* h *= o. */
static void TF(seq_mul_row)(int64_t u, const T *restrict o, T *restrict h) {
  PD_SIMD for (int64_t x = 0; x < u; x++) h[x] *= o[x];
}

/* ---- LSTM */

/* Step k, part t: its gate columns of x's rows, plus h_k-1 times its columns of w, activated;
 * then its units' c and h, written to the outputs and to hbuf[k & 1] for step k + 1. */
static pd_status TF(lstm_fwd_part)(seq_job *j, int t) {
  const pd_k_rnn_seq *s = j->s;
  const int64_t H = s->hid, lo = j->cut[t], u = j->cut[t + 1] - lo, k = j->k;
  const int64_t n = s->koff[k + 1] - s->koff[k], *rows = s->row + s->koff[k];
  const int64_t *prow = k ? s->row + s->koff[k - 1] : NULL;
  if (u == 0 || n == 0) return PD_OK;
  T *g = (T *)(j->scratch + (size_t)t * j->part_bytes); /* [n, 4u] */
  const T *x = (const T *)j->x;
  for (int64_t r = 0; r < n; r++)
    for (int q = 0; q < 4; q++)
      memcpy(g + r * 4 * u + q * u, x + rows[r] * 4 * H + q * H + lo, (size_t)u * sizeof(T));
  const T *hp = k ? (const T *)j->hbuf[(k - 1) & 1] : (const T *)j->h0;
  pd_status st = seq_gemm_w(j, t, n, 4 * u, H, hp, H, (const T *)j->wp + 4 * lo, 4 * H, 1.0,
                            g, 4 * u);
  T *hn = (T *)j->hbuf[k & 1], *cell = (T *)j->cell, *hid = (T *)j->hidden;
  T *gate = (T *)j->gate;
  for (int64_t r = 0; r < n && !st; r++) {
    const T *gr = g + r * 4 * u;
    T *ga = gate + rows[r] * 4 * H + lo; /* the activations go straight to the output's row */
    if ((st = pd_kcpu_unary(PD_K_SIGMOID, s->dt, u, gr, ga)) ||
        (st = pd_kcpu_unary(PD_K_SIGMOID, s->dt, u, gr + u, ga + H)) ||
        (st = pd_kcpu_unary(PD_K_TANH, s->dt, u, gr + 2 * u, ga + 2 * H)) ||
        (st = pd_kcpu_unary(PD_K_SIGMOID, s->dt, u, gr + 3 * u, ga + 3 * H)))
      break;
    const T *pc = prow ? cell + prow[r] * H + lo : (const T *)j->c0 + r * H + lo;
    T *c = cell + rows[r] * H + lo, *h = hid + rows[r] * H + lo;
    TF(lstm_c_row)(u, ga, ga + H, ga + 2 * H, pc, c);
    if ((st = pd_kcpu_unary(PD_K_TANH, s->dt, u, c, h))) break;
    TF(seq_mul_row)(u, ga + 3 * H, h);
    memcpy(hn + r * H + lo, h, (size_t)u * sizeof(T));
  }
  return st;
}

/* Iteration `it` (steps down to 0), part t: step it's products, when it < steps (the carry
 * into step it - 1's h, dg_it w^T, on the part's units; w's gradient, h_it-1^T dg_it, on its
 * gate columns), then step it - 1's gate gradients on its units, when it >= 1. */
static pd_status TF(lstm_bwd_part)(seq_job *j, int t) {
  const pd_k_rnn_seq *s = j->s;
  const int64_t H = s->hid, lo = j->cut[t], u = j->cut[t + 1] - lo, it = j->k;
  if (u == 0) return PD_OK;
  T *hprev = (T *)(j->scratch + (size_t)t * j->part_bytes); /* [nseq, H] */
  T *tc = hprev + s->nseq * H, *dh = tc + u, *dc = dh + u;  /* [u] each */
  T *carry_h = (T *)j->carry_h, *carry_c = (T *)j->carry_c;
  pd_status st = PD_OK;
  int64_t m = 0;
  if (it < s->steps && (m = s->koff[it + 1] - s->koff[it]) > 0) {
    const T *dgs = (const T *)j->dg[it & 1];
    if ((st = seq_gemm_w(j, t, m, u, 4 * H, dgs, j->ldg, (const T *)j->wp + lo, H, 0.0,
                         carry_h + lo, H)))
      return st;
    const T *hp = TF(seq_prev_h)(j, it, m, hprev);
    if ((st = seq_gemm_dw(j, H, 4 * u, m, hp, H, dgs + 4 * lo, j->ldg, (T *)j->dwp + 4 * lo,
                          j->ldw)))
      return st;
  }
  if (it == 0) return PD_OK;
  const int64_t k = it - 1, n = s->koff[k + 1] - s->koff[k], *rows = s->row + s->koff[k];
  const int64_t *prow = k ? s->row + s->koff[k - 1] : NULL;
  const T *gate = (const T *)j->gate_in, *cell = (const T *)j->cell_in;
  const T *dhid = (const T *)j->dhidden, *dcell = (const T *)j->dcell;
  T *dgo = (T *)j->dg[k & 1], *dx = (T *)j->dx;
  for (int64_t r = 0; r < n; r++) {
    const int64_t at = rows[r];
    const T *gi = gate + at * 4 * H + lo;
    const T *pc = prow ? cell + prow[r] * H + lo : (const T *)j->c0 + r * H + lo;
    if ((st = pd_kcpu_unary(PD_K_TANH, s->dt, u, cell + at * H + lo, tc))) return st;
    /* dh, dc: the step's own gradients plus what step k + 1 carried back to its rows */
    TF(seq_sum)(u, dhid ? dhid + at * H + lo : NULL, r < m ? carry_h + r * H + lo : NULL, dh);
    TF(seq_sum)(u, dcell ? dcell + at * H + lo : NULL, r < m ? carry_c + r * H + lo : NULL, dc);
    T *d = dgo + r * j->ldg + 4 * lo;
    TF(lstm_bw_row)(u, gi, gi + H, gi + 2 * H, gi + 3 * H, pc, tc, dh, dc, d,
                    dx + at * 4 * H + lo, H, carry_c + r * H + lo);
  }
  return PD_OK;
}

/* ---- GRU */

/* Step k, part t: P = h_k-1 times its columns of w; r, z, n and hn on its units (gru_cell's
 * arithmetic), h to the outputs and to hbuf[k & 1]. */
static pd_status TF(gru_fwd_part)(seq_job *j, int t) {
  const pd_k_rnn_seq *s = j->s;
  const int64_t H = s->hid, lo = j->cut[t], u = j->cut[t + 1] - lo, k = j->k;
  const int64_t n = s->koff[k + 1] - s->koff[k], *rows = s->row + s->koff[k];
  if (u == 0 || n == 0) return PD_OK;
  T *p = (T *)(j->scratch + (size_t)t * j->part_bytes); /* [n, 3u] */
  const T *hp = k ? (const T *)j->hbuf[(k - 1) & 1] : (const T *)j->h0;
  pd_status st = seq_gemm_w(j, t, n, 3 * u, H, hp, H, (const T *)j->wp + 3 * lo, 3 * H, 0.0,
                            p, 3 * u);
  const T *x = (const T *)j->x, *b = (const T *)j->b + lo;
  T *hn = (T *)j->hbuf[k & 1], *hid = (T *)j->hidden, *gate = (T *)j->gate;
  for (int64_t r = 0; r < n && !st; r++) {
    const T *xr = x + rows[r] * 3 * H + lo, *pr = p + r * 3 * u, *ph = hp + r * H + lo;
    T *sr = gate + rows[r] * 4 * H + lo, *h = hid + rows[r] * H + lo; /* r z n hn, in place */
    TF(gru_pre_row)(u, xr, xr + H, pr, pr + u, pr + 2 * u, b, b + H, b + 2 * H, sr, sr + H,
                    sr + 3 * H);
    if ((st = pd_kcpu_unary(PD_K_SIGMOID, s->dt, u, sr, sr)) ||
        (st = pd_kcpu_unary(PD_K_SIGMOID, s->dt, u, sr + H, sr + H)))
      break;
    TF(gru_cand_row)(u, xr + 2 * H, sr, sr + 3 * H, sr + 2 * H);
    if ((st = pd_kcpu_unary(PD_K_TANH, s->dt, u, sr + 2 * H, sr + 2 * H))) break;
    TF(gru_out_row)(u, sr + H, sr + 2 * H, ph, h);
    memcpy(hn + r * H + lo, h, (size_t)u * sizeof(T));
  }
  return st;
}

/* Iteration `it`, part t: step it's products when it < steps (carry_h, which holds step it's
 * direct part dh z, gets dP_it w^T on the part's units; w's gradient h_it-1^T dP_it and b's
 * column sums on its gate columns), then step it - 1's gate gradients when it >= 1. */
static pd_status TF(gru_bwd_part)(seq_job *j, int t) {
  const pd_k_rnn_seq *s = j->s;
  const int64_t H = s->hid, lo = j->cut[t], u = j->cut[t + 1] - lo, it = j->k;
  if (u == 0) return PD_OK;
  T *hprev = (T *)(j->scratch + (size_t)t * j->part_bytes); /* [nseq, H] */
  T *carry_h = (T *)j->carry_h;
  pd_status st = PD_OK;
  int64_t m = 0;
  if (it < s->steps && (m = s->koff[it + 1] - s->koff[it]) > 0) {
    const T *dps = (const T *)j->dg[it & 1];
    if ((st = seq_gemm_w(j, t, m, u, 3 * H, dps, j->ldg, (const T *)j->wp + lo, H, 1.0,
                         carry_h + lo, H)))
      return st;
    const T *hp = TF(seq_prev_h)(j, it, m, hprev);
    if ((st = seq_gemm_dw(j, H, 3 * u, m, hp, H, dps + 3 * lo, j->ldg, (T *)j->dwp + 3 * lo,
                          j->ldw)))
      return st;
    TF(seq_colsum)(m, 3 * u, dps + 3 * lo, j->ldg, j->db + 3 * lo);
  }
  if (it == 0) return PD_OK;
  const int64_t k = it - 1, n = s->koff[k + 1] - s->koff[k], *rows = s->row + s->koff[k];
  const int64_t *prow = k ? s->row + s->koff[k - 1] : NULL;
  const T *gate = (const T *)j->gate_in, *hid = (const T *)j->hidden_in;
  const T *dhid = (const T *)j->dhidden;
  T *dpo = (T *)j->dg[k & 1], *dx = (T *)j->dx;
  T *dh = hprev + s->nseq * H; /* [u] */
  for (int64_t r = 0; r < n; r++) {
    const int64_t at = rows[r];
    const T *sg = gate + at * 4 * H + lo;
    const T *ph = prow ? hid + prow[r] * H + lo : (const T *)j->h0 + r * H + lo;
    T *dp = dpo + r * j->ldg + 3 * lo, *dxr = dx + at * 3 * H + lo, *ch = carry_h + r * H + lo;
    TF(seq_sum)(u, dhid ? dhid + at * H + lo : NULL, r < m ? ch : NULL, dh);
    TF(gru_bw_row)(u, sg, sg + H, sg + 2 * H, sg + 3 * H, ph, dh, dxr, dxr + H, dxr + 2 * H, dp,
                   dp + u, dp + 2 * u, ch);
  }
  return PD_OK;
}

#undef T
#undef TN
