/* train_image.c -- the images(...) reader of train and eval: its spec (checked by the compiler,
 * lang/builtins_action.c) turned into the reader's options (vm/reader/reader.h,
 * pd_dataset_images), the class list noted on the progress stream, and train's augmentations
 * (crop_padding, flip), which only train applies: eval and validation read the images as they
 * are. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "train/train_int.h"

static bool number(const pd_cval *v, double *out) {
  if (v && v->kind == PD_CVAL_INT) *out = (double)v->i;
  else if (v && v->kind == PD_CVAL_FLOAT) *out = v->f;
  else return false;
  return true;
}

/* mean or std: a number for every channel, or one per channel. */
static void per_channel(const pd_cval *v, int channels, double def, double *out) {
  for (int c = 0; c < 4; c++) out[c] = def;
  double x;
  if (number(v, &x))
    for (int c = 0; c < channels; c++) out[c] = x;
  else if (v && v->kind == PD_CVAL_LIST)
    for (int c = 0; c < channels && c < v->n; c++) number(v->items[c], &out[c]);
}

void pd_train_images_options(const pd_cval *spec, pd_image_options *o) {
  memset(o, 0, sizeof *o);
  const pd_cval *shape = pd_cval_field(spec, "shape");
  int64_t dims[3] = {3, 32, 32};
  for (int k = 0; shape && shape->kind == PD_CVAL_LIST && k < 3 && k < shape->n; k++)
    if (shape->items[k]->kind == PD_CVAL_INT) dims[k] = shape->items[k]->i;
  o->channels = (int)dims[0];
  o->height = (int)dims[1];
  o->width = (int)dims[2];
  per_channel(pd_cval_field(spec, "mean"), o->channels, 0, o->mean);
  per_channel(pd_cval_field(spec, "std"), o->channels, 1, o->std);
}

bool pd_train_is_images(const pd_cval *spec) {
  return spec && spec->kind == PD_CVAL_RECORD && spec->str && strcmp(spec->str, "images") == 0;
}

pd_status pd_train_images_open(const pd_cval *spec, const char *dir, FILE *note,
                               pd_dataset **out, pd_error *err) {
  pd_image_options o;
  pd_train_images_options(spec, &o);
  char **classes = NULL;
  int nc = 0;
  pd_status st = pd_dataset_images(dir, &o, out, &classes, &nc, err);
  if (st) return st;
  if (note) {
    fprintf(note, "images: %s: %lld images in %d classes:", dir, (long long)pd_dataset_size(*out),
            nc);
    for (int k = 0; k < nc && k < 20; k++) fprintf(note, "%s %d %s", k ? "," : "", k, classes[k]);
    fprintf(note, "%s\n", nc > 20 ? ", ..." : "");
  }
  pd_image_classes_free(classes, nc);
  return PD_OK;
}

bool pd_train_images_augment(const pd_cval *spec, pd_image_augment *aug) {
  if (!pd_train_is_images(spec)) return false;
  memset(aug, 0, sizeof *aug);
  pd_train_images_options(spec, &aug->o);
  aug->pad = (int)pd_cval_int_field(spec, "crop_padding", 0);
  aug->flip = pd_cval_bool_field(spec, "flip", false);
  return aug->pad > 0 || aug->flip;
}
