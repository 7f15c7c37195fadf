/* image_decode.c -- PNG (libpng) and JPEG (libjpeg) files decoded from memory into 8- or 16-bit
 * samples (vm/reader/image.h). The libraries report errors by longjmp: each decode runs in a
 * function of its own whose state lives in a job record of the caller's, so that nothing the
 * jump skips is lost, and the caller frees what the job holds. libjpeg's warnings (corrupt data,
 * a premature end of the file, which it would fill with grey) are errors here too. */
#include "config.h"

#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#ifdef PD_HAVE_PNG
#include <png.h>
#endif
#ifdef PD_HAVE_JPEG
#include <jpeglib.h>
#endif

#include "vm/reader/image.h"

static const pd_loc nowhere = {0};

pd_image_kind pd_image_sniff(const unsigned char *b, size_t len) {
  static const unsigned char png_sig[8] = {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a};
  if (len >= 8 && memcmp(b, png_sig, 8) == 0) return PD_IMAGE_PNG;
  if (len >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff) return PD_IMAGE_JPEG;
  return PD_IMAGE_NONE;
}

void pd_image_release(pd_image *im) {
  pd_free(im->px);
  memset(im, 0, sizeof *im);
}

#if defined(PD_HAVE_PNG) || defined(PD_HAVE_JPEG)
static pd_status too_large(const char *path, const char *what, uint64_t w, uint64_t h,
                           pd_error *err) {
  return pd_error_set(err, PD_EUNSUPPORTED, nowhere,
                      "%s: the %s image is %llu x %llu pixels, more than the %llu pixels an "
                      "image may have",
                      path, what, (unsigned long long)w, (unsigned long long)h,
                      (unsigned long long)PD_IMAGE_MAX_PIXELS);
}
#endif

/* ---------------------------------------------------------------- PNG */

#ifdef PD_HAVE_PNG
typedef struct png_job {
  const unsigned char *bytes;
  size_t len, pos;
  char msg[256];        /* libpng's error message */
  bool oom, big;
  png_structp png;
  png_infop info;
  unsigned char *buf;   /* the decoded rows */
  png_bytep *rows;
  uint32_t w, h;
  int channels, depth;
} png_job;

static void png_read_cb(png_structp png, png_bytep data, size_t n) {
  png_job *j = png_get_io_ptr(png);
  if (n > j->len - j->pos) png_error(png, "the file ends early (truncated)");
  memcpy(data, j->bytes + j->pos, n);
  j->pos += n;
}

static void png_error_cb(png_structp png, png_const_charp msg) {
  png_job *j = png_get_error_ptr(png);
  snprintf(j->msg, sizeof j->msg, "%s", msg ? msg : "unknown error");
  png_longjmp(png, 1);
}

static void png_warning_cb(png_structp png, png_const_charp msg) {
  (void)png;   /* warnings (an unknown profile, a bad ancillary chunk) leave the pixels right */
  (void)msg;
}

static png_voidp png_malloc_cb(png_structp png, png_alloc_size_t n) {
  png_job *j = png_get_mem_ptr(png);
  void *p = pd_malloc(n ? n : 1);
  if (!p && j) j->oom = true;
  return p;
}

static void png_free_cb(png_structp png, png_voidp p) {
  (void)png;
  pd_free(p);
}

/* The decode proper; 0 when it succeeded. Everything it makes is kept in j. */
static int png_run(png_job *j) {
  if (setjmp(png_jmpbuf(j->png))) return 1;
  png_set_read_fn(j->png, j, png_read_cb);
  png_read_info(j->png, j->info);
  uint32_t w = png_get_image_width(j->png, j->info), h = png_get_image_height(j->png, j->info);
  if (w == 0 || h == 0 || (uint64_t)w * h > PD_IMAGE_MAX_PIXELS) {
    j->w = w;
    j->h = h;
    j->big = true;
    return 1;
  }
  png_set_expand(j->png);   /* palette -> RGB, 1/2/4-bit grey -> 8 bits, tRNS -> alpha */
  png_set_interlace_handling(j->png);
  png_read_update_info(j->png, j->info);
  j->w = w;
  j->h = h;
  j->channels = png_get_channels(j->png, j->info);
  j->depth = png_get_bit_depth(j->png, j->info);
  size_t rowbytes = png_get_rowbytes(j->png, j->info);
  j->buf = pd_malloc(rowbytes * h);
  j->rows = pd_malloc(sizeof *j->rows * h);
  if (!j->buf || !j->rows) {
    j->oom = true;
    return 1;
  }
  for (uint32_t y = 0; y < h; y++) j->rows[y] = j->buf + (size_t)y * rowbytes;
  png_read_image(j->png, j->rows);
  png_read_end(j->png, NULL);
  return 0;
}

static pd_status decode_png(const char *path, const unsigned char *bytes, size_t len,
                            pd_image *out, pd_error *err) {
  png_job j = {.bytes = bytes, .len = len};
  j.png = png_create_read_struct_2(PNG_LIBPNG_VER_STRING, &j, png_error_cb, png_warning_cb, &j,
                                   png_malloc_cb, png_free_cb);
  if (j.png) j.info = png_create_info_struct(j.png);
  pd_status st = PD_OK;
  if (!j.png || !j.info) st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory decoding %s", path);
  else if (png_run(&j) != 0) {
    if (j.oom) st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory decoding %s", path);
    else if (j.big && (j.w == 0 || j.h == 0))
      st = pd_error_set(err, PD_EFORMAT, nowhere, "%s: corrupt PNG: the image is %u x %u pixels",
                        path, (unsigned)j.w, (unsigned)j.h);
    else if (j.big) st = too_large(path, "PNG", j.w, j.h, err);
    else st = pd_error_set(err, PD_EFORMAT, nowhere, "%s: corrupt PNG: %s", path, j.msg);
  }
  if (!st && (j.channels < 1 || j.channels > 4 || (j.depth != 8 && j.depth != 16)))
    st = pd_error_set(err, PD_EUNSUPPORTED, nowhere,
                      "%s: a PNG of %d channels of %d bits is not supported", path, j.channels,
                      j.depth);
  if (!st) {
    size_t n = (size_t)j.w * j.h * (size_t)j.channels;
    out->px = pd_malloc(n * sizeof *out->px);
    if (!out->px) st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory decoding %s", path);
    for (size_t i = 0; !st && i < n; i++)   /* 16-bit samples are big-endian in the file */
      out->px[i] = j.depth == 16 ? (uint16_t)(j.buf[2 * i] << 8 | j.buf[2 * i + 1]) : j.buf[i];
    if (!st) {
      out->width = (int)j.w;
      out->height = (int)j.h;
      out->channels = j.channels;
      out->maxval = j.depth == 16 ? 65535 : 255;
    }
  }
  if (j.png) png_destroy_read_struct(&j.png, j.info ? &j.info : NULL, NULL);
  pd_free(j.buf);
  pd_free(j.rows);
  return st;
}
#endif

/* ---------------------------------------------------------------- JPEG */

#ifdef PD_HAVE_JPEG
typedef struct jpeg_job {
  struct jpeg_error_mgr pub;   /* first: libjpeg hands it back as the error manager */
  jmp_buf jump;
  char msg[JMSG_LENGTH_MAX];
  char warning[JMSG_LENGTH_MAX];
  long warnings;
  bool cmyk, oom, big;
  struct jpeg_decompress_struct cinfo;
  bool created;
  unsigned char *buf;
  unsigned w, h;
  int channels;
} jpeg_job;

static void jpeg_exit_cb(j_common_ptr c) {
  jpeg_job *j = (jpeg_job *)(void *)c->err;
  c->err->format_message(c, j->msg);
  longjmp(j->jump, 1);
}

static void jpeg_emit_cb(j_common_ptr c, int level) {
  jpeg_job *j = (jpeg_job *)(void *)c->err;
  if (level >= 0) return;   /* trace messages */
  if (j->warnings++ == 0) c->err->format_message(c, j->warning);
}

static void jpeg_output_cb(j_common_ptr c) { (void)c; /* the library never prints */ }

static int jpeg_run(jpeg_job *j, unsigned char *bytes, size_t len) {
  if (setjmp(j->jump)) return 1;
  jpeg_create_decompress(&j->cinfo);
  j->created = true;
  jpeg_mem_src(&j->cinfo, bytes, (unsigned long)len);
  jpeg_read_header(&j->cinfo, TRUE);
  J_COLOR_SPACE cs = j->cinfo.jpeg_color_space;
  if (cs == JCS_CMYK || cs == JCS_YCCK) {
    j->cmyk = true;
    return 1;
  }
  j->cinfo.out_color_space = cs == JCS_GRAYSCALE ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&j->cinfo);
  j->w = j->cinfo.output_width;
  j->h = j->cinfo.output_height;
  j->channels = j->cinfo.output_components;
  if ((uint64_t)j->w * j->h > PD_IMAGE_MAX_PIXELS) {
    j->big = true;
    return 1;
  }
  size_t stride = (size_t)j->w * (size_t)j->channels;
  if (!(j->buf = pd_malloc(stride * j->h > 0 ? stride * j->h : 1))) {
    j->oom = true;
    return 1;
  }
  while (j->cinfo.output_scanline < j->h) {
    JSAMPROW row = j->buf + (size_t)j->cinfo.output_scanline * stride;
    jpeg_read_scanlines(&j->cinfo, &row, 1);
  }
  jpeg_finish_decompress(&j->cinfo);
  return 0;
}

static pd_status decode_jpeg(const char *path, unsigned char *bytes, size_t len, pd_image *out,
                             pd_error *err) {
  jpeg_job *j = pd_calloc(1, sizeof *j);
  if (!j) return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory decoding %s", path);
  j->cinfo.err = jpeg_std_error(&j->pub);
  j->pub.error_exit = jpeg_exit_cb;
  j->pub.emit_message = jpeg_emit_cb;
  j->pub.output_message = jpeg_output_cb;
  pd_status st = PD_OK;
  if (jpeg_run(j, bytes, len) != 0) {
    if (j->oom) st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory decoding %s", path);
    else if (j->cmyk)
      st = pd_error_set(err, PD_EUNSUPPORTED, nowhere,
                        "%s: a CMYK JPEG is not supported (save it as RGB or greyscale)", path);
    else if (j->big) st = too_large(path, "JPEG", j->w, j->h, err);
    else st = pd_error_set(err, PD_EFORMAT, nowhere, "%s: corrupt JPEG: %s", path, j->msg);
  } else if (j->warnings) {
    st = pd_error_set(err, PD_EFORMAT, nowhere, "%s: corrupt JPEG: %s", path, j->warning);
  } else if (j->channels != 1 && j->channels != 3) {
    st = pd_error_set(err, PD_EUNSUPPORTED, nowhere, "%s: a JPEG of %d channels is not supported",
                      path, j->channels);
  } else {
    size_t n = (size_t)j->w * j->h * (size_t)j->channels;
    if (!(out->px = pd_malloc(n ? n * sizeof *out->px : 1)))
      st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory decoding %s", path);
    for (size_t i = 0; !st && i < n; i++) out->px[i] = j->buf[i];
    if (!st) {
      out->width = (int)j->w;
      out->height = (int)j->h;
      out->channels = j->channels;
      out->maxval = 255;
    }
  }
  if (j->created) jpeg_destroy_decompress(&j->cinfo);
  pd_free(j->buf);
  pd_free(j);
  return st;
}
#endif

pd_status pd_image_decode(const char *path, unsigned char *bytes, size_t len, pd_image *out,
                          pd_error *err) {
  memset(out, 0, sizeof *out);
  switch (pd_image_sniff(bytes, len)) {
    case PD_IMAGE_PNG:
#ifdef PD_HAVE_PNG
      return decode_png(path, bytes, len, out, err);
#else
      return pd_error_set(err, PD_EUNSUPPORTED, nowhere,
                          "%s: this pdlang was built without libpng, so it cannot read PNG "
                          "files (install libpng-dev and run configure again)", path);
#endif
    case PD_IMAGE_JPEG:
#ifdef PD_HAVE_JPEG
      return decode_jpeg(path, bytes, len, out, err);
#else
      return pd_error_set(err, PD_EUNSUPPORTED, nowhere,
                          "%s: this pdlang was built without libjpeg, so it cannot read JPEG "
                          "files (install libjpeg-dev and run configure again)", path);
#endif
    default: {
      char hex[40] = "";
      for (size_t i = 0, at = 0; i < len && i < 8; i++)
        at += (size_t)snprintf(hex + at, sizeof hex - at, "%s%02x", i ? " " : "", bytes[i]);
      return pd_error_set(err, PD_EFORMAT, nowhere,
                          "%s is neither a PNG nor a JPEG file (%s%s%s)", path,
                          len ? "it starts with the bytes " : "it is empty", hex,
                          len > 8 ? " ..." : "");
    }
  }
}
