/* grid_sample_t.h -- the arithmetic of grid_sample that the CPU's loops (kernels/cpu/interp_t.h)
 * and the CUDA kernels (kernels/cuda/interp.cu) share: a grid value's source coordinate with
 * its derivative, and a sample point's four bilinear corners. A template for one float type:
 * the includer defines T and PD_K_GS(name), the name of each function for that type (the CPU
 * appends its type suffix; CUDA keeps the names, which C++ overloads), and PD_K_GS_HD, what the
 * functions are qualified with (__device__ in CUDA, nothing in C). No include guard: it is
 * included once per type; it #undefs nothing. */

/* The source coordinate of grid value g on an axis of size s (align_corners ac; padding 0
 * zeros, 1 border, 2 reflection), and its derivative by g in *d. */
static inline PD_K_GS_HD T PD_K_GS(gs_coord)(T g, int64_t s, bool ac, int padding, T *d) {
  T hi = (T)(s - 1), f = (T)((double)(ac ? s - 1 : s) * 0.5);
  T u = ac ? (g + (T)1) * f : (g + (T)1) * f - (T)0.5, dd = f;
  if (padding == 2) {
    if (ac && s == 1) {
      u = 0, dd = 0;
    } else {
      T a0 = ac ? u : u + (T)0.5, range = (T)((double)(ac ? s - 1 : s) * 2);
      T a = a0 < 0 ? -a0 : a0, sg = a0 < 0 ? (T)-1 : (T)1;
      T extra = a - (T)floor((double)(a / range)) * range;
      if (extra <= range - extra) {
        u = extra, dd *= sg;
      } else {
        u = range - extra, dd *= -sg;
      }
      if (!ac) u = u - (T)0.5;
    }
  }
  if (padding >= 1 && !(ac && padding == 2)) {
    if (u < 0) u = 0, dd = 0;
    if (u > hi) u = hi, dd = 0;
  }
  *d = dd;
  return u;
}

/* The corners of source point (u, v) in an h x w plane, in the order (y0, x0), (y0, x1),
 * (y1, x0), (y1, x1): whether each is inside (in), its offset in the plane (off, 0 outside),
 * and the distances f = {u - x0, x1 - u, v - y0, y1 - v} that weigh them (corner 0 by
 * f[1] * f[3], 1 by f[0] * f[3], 2 by f[1] * f[2], 3 by f[0] * f[2]). */
static inline PD_K_GS_HD void PD_K_GS(gs_corners)(int64_t h, int64_t w, T u, T v, T f[4],
                                                  bool in[4], int64_t off[4]) {
  T x0 = (T)floor((double)u), y0 = (T)floor((double)v), x1 = x0 + 1, y1 = y0 + 1;
  f[0] = u - x0, f[1] = x1 - u, f[2] = v - y0, f[3] = y1 - v;
  bool ix0 = x0 >= 0 && x0 <= (T)(w - 1), ix1 = x1 >= 0 && x1 <= (T)(w - 1);
  bool iy0 = y0 >= 0 && y0 <= (T)(h - 1), iy1 = y1 >= 0 && y1 <= (T)(h - 1);
  int64_t c0 = ix0 ? (int64_t)x0 : 0, c1 = ix1 ? (int64_t)x1 : 0;
  int64_t r0 = iy0 ? (int64_t)y0 * w : 0, r1 = iy1 ? (int64_t)y1 * w : 0;
  in[0] = iy0 && ix0, in[1] = iy0 && ix1, in[2] = iy1 && ix0, in[3] = iy1 && ix1;
  off[0] = r0 + c0, off[1] = r0 + c1, off[2] = r1 + c0, off[3] = r1 + c1;
}

/* The nearest source pixel of (u, v): whether it is inside, and its offset in *off. */
static inline PD_K_GS_HD bool PD_K_GS(gs_nearest)(int64_t h, int64_t w, T u, T v, int64_t *off) {
  T xr = (T)round((double)u), yr = (T)round((double)v);
  bool in = xr >= 0 && xr <= (T)(w - 1) && yr >= 0 && yr <= (T)(h - 1);
  *off = in ? (int64_t)yr * w + (int64_t)xr : 0;
  return in;
}
