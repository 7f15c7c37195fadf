/* image.h -- private to the image reader (vm/reader/reader_image.c): PNG and JPEG files decoded
 * in memory through libpng and libjpeg (vm/reader/image_decode.c), with every error of the
 * libraries (libpng's longjmp, libjpeg's error_exit, and libjpeg's warnings about corrupt or
 * truncated data) turned into a status and a message naming the file.
 *
 * Ownership: pd_image_decode borrows the bytes and the path; the decoded image's pixels are the
 * caller's, freed with pd_image_release. */
#ifndef PD_IMAGE_H
#define PD_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

/* The most pixels (width * height) an image may have: 64 megapixels. */
#define PD_IMAGE_MAX_PIXELS ((uint64_t)1 << 26)

typedef enum pd_image_kind { PD_IMAGE_NONE, PD_IMAGE_PNG, PD_IMAGE_JPEG } pd_image_kind;

/* A decoded image: height rows of width pixels of `channels` interleaved samples, each in
 * [0, maxval]: channels 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA; maxval 255 (8-bit) or 65535
 * (a 16-bit PNG). A palette PNG comes out RGB (RGBA with a transparent entry), greyscale of 1,
 * 2 or 4 bits is scaled to 8 bits, a tRNS colour becomes an alpha channel. */
typedef struct pd_image {
  int width, height, channels;
  int maxval;
  uint16_t *px;
} pd_image;

/* What the first bytes say the file is (PNG's signature, JPEG's FF D8 FF), else NONE. */
pd_image_kind pd_image_sniff(const unsigned char *bytes, size_t len);

/* Decode a PNG or JPEG file's bytes (path names it in messages). PD_EFORMAT for a file that is
 * neither, or a corrupt or truncated one ("PATH: corrupt PNG: ..."), PD_EUNSUPPORTED for an
 * image larger than PD_IMAGE_MAX_PIXELS, a CMYK JPEG, or a format this pdlang was built
 * without (configure found no libpng or libjpeg), PD_ENOMEM. On failure *out is left empty. */
pd_status pd_image_decode(const char *path, unsigned char *bytes, size_t len, pd_image *out,
                          pd_error *err);

void pd_image_release(pd_image *im);

#endif /* PD_IMAGE_H */
