/* image_write.h -- test fixtures: PNG files written with libpng and JPEG files with libjpeg
 * (the libraries the images reader decodes with, used here the other way), for
 * tests/vm/reader/test_image.c and tests/vm/reader/make_shapes.c. Header-only; every function is static.
 * Returns 0 on success, -1 when the file cannot be written (the caller reports it). */
#ifndef PD_TESTS_IMAGE_WRITE_H
#define PD_TESTS_IMAGE_WRITE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PD_HAVE_PNG
#include <png.h>

/* A PNG of w x h pixels of PNG colour type `type` (PNG_COLOR_TYPE_GRAY, _RGB, _RGBA,
 * _GRAY_ALPHA, _PALETTE) and `depth` bits per sample: data holds the rows packed as the PNG
 * format packs them (16-bit samples big-endian, sub-byte samples most significant bits first).
 * A palette image takes npal RGB entries and ntrns alpha values for the first entries. */
static int __attribute__((unused))
write_png(const char *path, int w, int h, int type, int depth, const unsigned char *data,
          const png_color *pal, int npal, const unsigned char *trns, int ntrns) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  if (!info || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, info ? &info : NULL);
    fclose(f);
    return -1;
  }
  png_init_io(png, f);
  png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, depth, type, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (pal) png_set_PLTE(png, info, pal, npal);
  if (trns) png_set_tRNS(png, info, trns, ntrns, NULL);
  png_write_info(png, info);
  int ch = type == PNG_COLOR_TYPE_GRAY || type == PNG_COLOR_TYPE_PALETTE ? 1
           : type == PNG_COLOR_TYPE_GRAY_ALPHA                          ? 2
           : type == PNG_COLOR_TYPE_RGB                                 ? 3
                                                                        : 4;
  size_t rowbytes = ((size_t)w * (size_t)ch * (size_t)depth + 7) / 8;
  for (int y = 0; y < h; y++) png_write_row(png, data + (size_t)y * rowbytes);
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  return fclose(f) == 0 ? 0 : -1;
}
#endif

#ifdef PD_HAVE_JPEG
#include <jpeglib.h>

/* A baseline JPEG of w x h pixels of 1 (grey) or 3 (RGB) channels, interleaved rows, at
 * `quality`, without chroma subsampling (4:4:4). */
static int __attribute__((unused))
write_jpeg(const char *path, int w, int h, int channels, const unsigned char *data,
           int quality) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr e;
  c.err = jpeg_std_error(&e);
  jpeg_create_compress(&c);
  jpeg_stdio_dest(&c, f);
  c.image_width = (JDIMENSION)w;
  c.image_height = (JDIMENSION)h;
  c.input_components = channels;
  c.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, quality, TRUE);
  for (int i = 0; i < c.num_components; i++) c.comp_info[i].h_samp_factor = c.comp_info[i].v_samp_factor = 1;
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = (JSAMPROW)(data + (size_t)c.next_scanline * (size_t)w * (size_t)channels);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  return fclose(f) == 0 ? 0 : -1;
}
#endif

#endif /* PD_TESTS_IMAGE_WRITE_H */
