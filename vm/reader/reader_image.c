/* reader_image.c -- a folder of class folders of PNG and JPEG images as a dataset ("images":
 * float32 [C, H, W], converted, resized bilinearly and normalised; "label": the class), and
 * the augmentations of training (random crop with padding, horizontal flip) that the batcher
 * applies on its prefetch thread. See pd_dataset_images in vm/reader/reader.h for the rules. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vm/reader/image.h"
#include "vm/reader/reader.h"
#include "vm/reader/reader_int.h"

static const pd_loc nowhere = {0};

#define MAX_DEPTH 16   /* folders inside a class folder */

typedef struct names {
  char **v;
  size_t n, cap;
} names;

static void names_free(names *l) {
  for (size_t i = 0; i < l->n; i++) pd_free(l->v[i]);
  pd_free(l->v);
  l->v = NULL;
  l->n = l->cap = 0;
}

static int cmp_str(const void *x, const void *y) {
  return strcmp(*(char *const *)x, *(char *const *)y);
}

static char *join(const char *dir, const char *name) {
  pd_buf b;
  pd_buf_init(&b);
  size_t n = strlen(dir);
  pd_buf_printf(&b, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name);
  return pd_buf_take(&b);
}

/* The entries of dir not starting with '.', sorted by name (heap strings). */
static pd_status list_dir(const char *dir, names *out, pd_error *err) {
  DIR *d = opendir(dir);
  if (!d) {
    int e = errno;
    return pd_error_set(err, e == ENOENT ? PD_ENOTFOUND : PD_EIO, nowhere,
                        "images: cannot open the folder '%s': %s", dir, strerror(e));
  }
  pd_status st = PD_OK;
  struct dirent *e;
  while (!st && (errno = 0, e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char *s = pd_strdup(e->d_name);
    if (!s || PD_GROW(out->v, out->cap, out->n + 1)) {
      pd_free(s);
      st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory listing '%s'", dir);
      break;
    }
    out->v[out->n++] = s;
  }
  if (!st && errno)
    st = pd_error_set(err, PD_EIO, nowhere, "images: cannot read the folder '%s': %s", dir,
                      strerror(errno));
  closedir(d);
  if (st) names_free(out);
  else if (out->n) qsort(out->v, out->n, sizeof *out->v, cmp_str);
  return st;
}

static bool is_dir(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Not a folder and not a regular file (a FIFO, a socket, a device, a broken link): reading it
 * could block or make no sense. */
static bool is_special(const char *path) {
  struct stat sb;
  return stat(path, &sb) != 0 || !S_ISREG(sb.st_mode);
}

/* Every file under dir (recursively, sorted by path at each level) appended to files, each
 * with its class in labels. */
static pd_status collect(const char *dir, int depth, int64_t label, names *files,
                         int64_t **labels, size_t *lcap, pd_error *err) {
  if (depth > MAX_DEPTH)
    return pd_error_set(err, PD_EFORMAT, nowhere,
                        "images: '%s' is more than %d folders deep inside its class folder", dir,
                        MAX_DEPTH);
  names l = {0};
  pd_status st = list_dir(dir, &l, err);
  for (size_t i = 0; !st && i < l.n; i++) {
    char *p = join(dir, l.v[i]);
    if (!p) {
      st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
      break;
    }
    if (is_dir(p)) {
      st = collect(p, depth + 1, label, files, labels, lcap, err);
      pd_free(p);
      continue;
    }
    if (is_special(p)) {
      st = pd_error_set(err, PD_EFORMAT, nowhere,
                        "images: '%s' is neither an image file nor a folder (a broken link, a "
                        "FIFO or a device)", p);
      pd_free(p);
      break;
    }
    if (PD_GROW(files->v, files->cap, files->n + 1) || PD_GROW(*labels, *lcap, files->n + 1)) {
      pd_free(p);
      st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
      break;
    }
    (*labels)[files->n] = label;
    files->v[files->n++] = p;
  }
  names_free(&l);
  return st;
}

/* ---------------------------------------------------------------- pixels */

/* Sample (y, x) of the image as `channels` values in [0, 1] (pd_image_options' conversion). */
static void pixel(const pd_image *im, int y, int x, int channels, float *v) {
  const uint16_t *p = im->px + ((size_t)y * (size_t)im->width + (size_t)x) * (size_t)im->channels;
  float s = 1.0f / (float)im->maxval;
  bool grey = im->channels <= 2;
  float r = p[0] * s, g = grey ? r : p[1] * s, b = grey ? r : p[2] * s;
  float alpha = im->channels == 2 ? p[1] * s : im->channels == 4 ? p[3] * s : 1.0f;
  if (channels == 1) {
    v[0] = grey ? r : 0.299f * r + 0.587f * g + 0.114f * b;
    return;
  }
  v[0] = r;
  v[1] = g;
  v[2] = b;
  if (channels == 4) v[3] = alpha;
}

/* The bilinear source coordinate of output index i (half-pixel centres, clamped below at 0
 * as PyTorch does): *i0, *i1 and the weight of *i1. */
static void source(int i, int in, int out, int *i0, int *i1, float *w1) {
  float s = ((float)i + 0.5f) * ((float)in / (float)out) - 0.5f;
  if (s < 0) s = 0;
  int k = (int)s;
  if (k > in - 1) k = in - 1;
  *i0 = k;
  *i1 = k < in - 1 ? k + 1 : k;
  *w1 = s - (float)k;
}

/* The image converted, resized and normalised into dst (C x H x W floats). */
static void convert(const pd_image *im, const pd_image_options *o, float *dst) {
  int C = o->channels, H = o->height, W = o->width;
  size_t plane = (size_t)H * (size_t)W;
  for (int y = 0; y < H; y++) {
    int y0, y1;
    float wy;
    if (H == im->height) y0 = y1 = y, wy = 0;
    else source(y, im->height, H, &y0, &y1, &wy);
    for (int x = 0; x < W; x++) {
      int x0, x1;
      float wx;
      if (W == im->width) x0 = x1 = x, wx = 0;
      else source(x, im->width, W, &x0, &x1, &wx);
      float a[4], b[4], c[4], d[4];
      pixel(im, y0, x0, C, a);
      pixel(im, y0, x1, C, b);
      pixel(im, y1, x0, C, c);
      pixel(im, y1, x1, C, d);
      for (int k = 0; k < C; k++) {
        float v = (1 - wy) * ((1 - wx) * a[k] + wx * b[k]) + wy * ((1 - wx) * c[k] + wx * d[k]);
        dst[(size_t)k * plane + (size_t)y * (size_t)W + (size_t)x] =
            (float)((v - o->mean[k]) / o->std[k]);
      }
    }
  }
}

/* ---------------------------------------------------------------- the dataset */

/* One file, decoded and converted into dst (channels x height x width values). */
static pd_status load_one(const char *path, const pd_image_options *o, float *dst,
                          pd_error *err) {
  char *bytes = NULL;
  size_t len;
  pd_image im = {0};
  pd_status st = pd_read_file(path, &bytes, &len, err);
  if (!st) st = pd_image_decode(path, (unsigned char *)bytes, len, &im, err);
  if (!st) convert(&im, o, dst);
  pd_image_release(&im);
  pd_free(bytes);
  return st;
}

static pd_status check_options(const pd_image_options *o, pd_error *err) {
  if (o->channels != 1 && o->channels != 3 && o->channels != 4)
    return pd_error_set(err, PD_EINVAL, nowhere,
                        "images: an image has 1 (grey), 3 (RGB) or 4 (RGBA) channels, not %d",
                        o->channels);
  if (o->height < 1 || o->height > 4096 || o->width < 1 || o->width > 4096)
    return pd_error_set(err, PD_EINVAL, nowhere,
                        "images: the height and width must be 1 to 4096, not %d x %d", o->height,
                        o->width);
  for (int c = 0; c < o->channels; c++)
    if (!pd_image_norm_ok(o->mean[c], o->std[c]))
      return pd_error_set(err, PD_EINVAL, nowhere,
                          "images: channel %d: the mean must be finite and the std a positive "
                          "number, with every value normalised (0..1 - mean) / std a float32, "
                          "not mean %g and std %g", c, o->mean[c], o->std[c]);
  return PD_OK;
}

bool pd_image_norm_ok(double mean, double std) {
  return isfinite(mean) && isfinite(std) && std > 0 && (fabs(mean) + 1) / std <= FLT_MAX;
}

pd_status pd_image_files(const pd_image_options *o, int n, const char *const *paths, int vnd,
                         const int64_t *vdims, pd_tensor *out, pd_error *err) {
  pd_status st = check_options(o, err);
  if (st) return st;
  if (n < 1) return pd_error_set(err, PD_EINVAL, nowhere, "no image file");
  int64_t dims[4] = {n, o->channels, o->height, o->width};
  if ((st = pd_tensor_resize(out, PD_FP32, 4, dims)))
    return pd_error_set(err, st, nowhere, "out of memory for %d images", n);
  size_t per = (size_t)o->channels * (size_t)o->height * (size_t)o->width;
  for (int i = 0; i < n; i++)
    if ((st = load_one(paths[i], o, PD_TENSOR_F32(out) + (size_t)i * per, err))) return st;
  int64_t vper = 1;
  bool known = vnd >= 1 && vnd <= PD_TENSOR_MAX_DIMS && vnd != 4;
  for (int k = 1; known && k < vnd; k++) known = vdims[k] >= 0, vper *= vdims[k];
  if (known && vper == (int64_t)per) {
    int64_t d[PD_TENSOR_MAX_DIMS];
    memcpy(d, vdims, sizeof *d * (size_t)vnd);
    d[0] = n;
    if ((st = pd_tensor_reshape(out, vnd, d))) return pd_error_set(err, st, nowhere, "reshape");
  }
  return PD_OK;
}

void pd_image_classes_free(char **classes, int nclasses) {
  for (int i = 0; classes && i < nclasses; i++) pd_free(classes[i]);
  pd_free(classes);
}

pd_status pd_dataset_images(const char *dir, const pd_image_options *o, pd_dataset **out,
                            char ***classes, int *nclasses, pd_error *err) {
  *out = NULL;
  if (classes) *classes = NULL;
  if (nclasses) *nclasses = 0;
  if (!dir) return pd_error_set(err, PD_EINVAL, nowhere, "images: needs a folder");
  pd_status st = check_options(o, err);
  if (st) return st;
  struct stat sb;
  if (stat(dir, &sb) != 0) {
    int e = errno;
    return pd_error_set(err, e == ENOENT ? PD_ENOTFOUND : PD_EIO, nowhere,
                        "images: cannot open the folder '%s': %s", dir, strerror(e));
  }
  if (!S_ISDIR(sb.st_mode))
    return pd_error_set(err, PD_EIO, nowhere,
                        "images: '%s' is not a folder (expected a folder of class folders: "
                        "%s/CLASS/IMAGE.png)", dir, dir);
  names top = {0}, cls = {0}, files = {0};
  int64_t *labels = NULL;
  size_t lcap = 0;
  pd_dataset *d = NULL;
  if ((st = list_dir(dir, &top, err))) goto out;
  for (size_t i = 0; i < top.n; i++) {   /* the class folders, sorted */
    char *p = join(dir, top.v[i]);
    if (!p) {
      st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
      goto out;
    }
    bool folder = is_dir(p);
    pd_free(p);
    if (!folder) continue;
    if (PD_GROW(cls.v, cls.cap, cls.n + 1)) {
      st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
      goto out;
    }
    cls.v[cls.n++] = top.v[i];
    top.v[i] = NULL;
  }
  if (cls.n == 0) {
    st = pd_error_set(err, PD_EFORMAT, nowhere,
                      "images: '%s' has no class folders (expected one folder of images per "
                      "class: %s/cat/1.png, %s/dog/2.jpg, ...)", dir, dir, dir);
    goto out;
  }
  for (size_t k = 0; k < cls.n; k++) {
    size_t before = files.n;
    char *p = join(dir, cls.v[k]);
    if (!p) {
      st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
      goto out;
    }
    st = collect(p, 0, (int64_t)k, &files, &labels, &lcap, err);
    if (!st && files.n == before)
      st = pd_error_set(err, PD_EFORMAT, nowhere,
                        "images: the class folder '%s' has no images (class %zu of %zu)", p, k,
                        cls.n);
    pd_free(p);
    if (st) goto out;
  }
  int64_t n = (int64_t)files.n;
  int64_t shape[3] = {o->channels, o->height, o->width}, one = 1;
  void *xs, *ls;
  if ((st = pd_dataset_new(n, &d, err)) ||
      (st = pd_dataset_add_field(d, "images", PD_FP32, 3, shape, &xs, err)) ||
      (st = pd_dataset_add_field(d, "label", PD_INT64, 1, &one, &ls, err)))
    goto out;
  memcpy(ls, labels, (size_t)n * sizeof *labels);
  size_t per = (size_t)o->channels * (size_t)o->height * (size_t)o->width;
  for (int64_t i = 0; i < n; i++)
    if ((st = load_one(files.v[i], o, (float *)xs + (size_t)i * per, err))) {
      pd_error_prefix(err, "images");  /* name the reader */
      goto out;
    }
  if (classes) {
    if (!(*classes = pd_calloc(cls.n, sizeof **classes))) {
      st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
      goto out;
    }
    memcpy(*classes, cls.v, cls.n * sizeof *cls.v);
    *nclasses = (int)cls.n;
    pd_free(cls.v);
    cls = (names){0};
  }
  *out = d;
  d = NULL;
out:
  pd_dataset_free(d);
  names_free(&top);
  names_free(&cls);
  names_free(&files);
  pd_free(labels);
  return st;
}

/* ---------------------------------------------------------------- augmentation */

static void augment_image(const void *ctx, void *sample, void *scratch, uint64_t key) {
  const pd_image_augment *a = ctx;
  int C = a->o.channels, H = a->o.height, W = a->o.width, pad = a->pad;
  size_t plane = (size_t)H * (size_t)W;
  float *x = sample, *t = scratch;
  uint64_t s = key;
  int oy = pad ? (int)pd_reader_uniform(&s, (uint64_t)(2 * pad + 1)) - pad : 0;
  int ox = pad ? (int)pd_reader_uniform(&s, (uint64_t)(2 * pad + 1)) - pad : 0;
  bool flip = a->flip && (pd_reader_splitmix64(&s) & 1);
  if (!oy && !ox && !flip) return;
  memcpy(t, x, plane * (size_t)C * sizeof *x);
  for (int c = 0; c < C; c++) {
    float fill = (float)(-a->o.mean[c] / a->o.std[c]);
    const float *src = t + (size_t)c * plane;
    float *dst = x + (size_t)c * plane;
    for (int y = 0; y < H; y++)
      for (int xx = 0; xx < W; xx++) {
        int sy = y + oy, sx = (flip ? W - 1 - xx : xx) + ox;
        dst[(size_t)y * (size_t)W + (size_t)xx] =
            sy >= 0 && sy < H && sx >= 0 && sx < W ? src[(size_t)sy * (size_t)W + (size_t)sx]
                                                   : fill;
      }
  }
}

pd_batch_augment pd_image_augmenter(const pd_image_augment *a) {
  return (pd_batch_augment){
      .field = 0,
      .fn = augment_image,
      .ctx = a,
      .scratch_bytes = (size_t)a->o.channels * (size_t)a->o.height * (size_t)a->o.width *
                       sizeof(float)};
}
