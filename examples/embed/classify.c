/* classify.c -- a host program embedding pdlang through its C library (pdlang.h): loads the
 * Fashion-MNIST classifier that examples/train.pd saves (fashion.pdmodel + fashion.pdiparams),
 * runs it on the first N images of the Fashion-MNIST test set, and prints each prediction next
 * to the true label, then the accuracy.
 *
 *     usage: classify [-n N] [-d DIR] [MODEL.pdmodel]
 *
 * MODEL defaults to fashion.pdmodel, N to 20, DIR (which holds t10k-images-idx3-ubyte.gz and
 * t10k-labels-idx1-ubyte.gz) to /usr/share/datasets/fashion-mnist (Debian's package
 * dataset-fashion-mnist). The files are read with zlib. Build it with the Makefile beside it,
 * which asks pkg-config for the installed library: `make`, then `./classify -n 100`. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pdlang.h>
#include <zlib.h>

static const char *const class_names[10] = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot",
};

/* Read an IDX file (big-endian header: magic 0x0000080R with R dims, then the dims, then
 * unsigned bytes) whose data is `rank` dims; the first dim is the count, capped at max.
 * Returns the bytes (malloc'd; *count items of *item bytes each), or NULL with a message. */
static unsigned char *read_idx(const char *path, int rank, long max, long *count, long *item) {
  gzFile f = gzopen(path, "rb");
  if (!f) {
    fprintf(stderr, "classify: cannot open %s\n", path);
    return NULL;
  }
  unsigned char head[4 + 4 * 3];
  unsigned char *data = NULL;
  int hlen = 4 + 4 * rank;
  if (gzread(f, head, (unsigned)hlen) != hlen || head[0] || head[1] || head[2] != 0x08 ||
      head[3] != rank) {
    fprintf(stderr, "classify: %s is not an IDX file of unsigned bytes with %d dims\n", path,
            rank);
    goto out;
  }
  long dims[3];
  for (int i = 0; i < rank; i++)
    dims[i] = (long)head[4 + 4 * i] << 24 | (long)head[5 + 4 * i] << 16 |
              (long)head[6 + 4 * i] << 8 | (long)head[7 + 4 * i];
  *count = dims[0] < max ? dims[0] : max;
  *item = 1;
  for (int i = 1; i < rank; i++) *item *= dims[i];
  size_t bytes = (size_t)(*count * *item);
  data = malloc(bytes ? bytes : 1);
  if (!data || gzread(f, data, (unsigned)bytes) != (int)bytes) {
    fprintf(stderr, "classify: %s is shorter than its header says\n", path);
    free(data);
    data = NULL;
  }
out:
  gzclose(f);
  return data;
}

int main(int argc, char **argv) {
  const char *model = "fashion.pdmodel", *dir = "/usr/share/datasets/fashion-mnist";
  long n = 20;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) n = atol(argv[++i]);
    else if (strcmp(argv[i], "-d") == 0 && i + 1 < argc) dir = argv[++i];
    else if (argv[i][0] != '-') model = argv[i];
    else {
      fprintf(stderr, "usage: classify [-n N] [-d DIR] [MODEL.pdmodel]\n");
      return 2;
    }
  }
  if (n < 1) n = 1;

  /* The test images and labels. */
  char path[4096];
  long count = 0, pixels = 0, nlabels = 0, one = 0;
  snprintf(path, sizeof path, "%s/t10k-images-idx3-ubyte.gz", dir);
  unsigned char *images = read_idx(path, 3, n, &count, &pixels);
  snprintf(path, sizeof path, "%s/t10k-labels-idx1-ubyte.gz", dir);
  unsigned char *labels = images ? read_idx(path, 1, n, &nlabels, &one) : NULL;
  float *x = labels ? malloc((size_t)(count * pixels) * sizeof *x) : NULL;
  if (!x || nlabels < count) {
    if (labels && nlabels < count) fprintf(stderr, "classify: fewer labels than images\n");
    free(images);
    free(labels);
    free(x);
    return 1;
  }
  for (long i = 0; i < count * pixels; i++) x[i] = images[i] / 255.0f;  /* as pdlang's reader */

  /* The model: load it, feed the batch to its one input, run, fetch its one output. */
  int rc = 1;
  pd_state *st = NULL;
  if (pd_state_new(&st) != PD_RESULT_OK) {
    fprintf(stderr, "classify: out of memory\n");
    goto out;
  }
  int nin = 0, nout = 0;
  const char *const *inputs, *const *outputs;
  pd_tensor_info in, out;
  if (pd_state_load_model(st, model) || pd_state_inputs(st, &nin, &inputs) ||
      pd_state_outputs(st, &nout, &outputs))
    goto fail;
  if (nin != 1 || nout != 1) {
    fprintf(stderr, "classify: %s has %d inputs and %d outputs; this program wants one each\n",
            model, nin, nout);
    goto out;
  }
  /* The input's shape with the batch in front: [-1, 784] for an MLP, [-1, 1, 28, 28] for a
   * CNN; the pixels of an image fill the rest. */
  if (pd_state_describe(st, inputs[0], &in)) goto fail;
  int64_t dims[PD_STATE_MAX_DIMS] = {count};
  long rest = 1;
  for (int k = 1; k < in.ndims; k++) rest *= (long)(dims[k] = in.dims[k]);
  if (in.ndims < 2 || rest != pixels) {
    fprintf(stderr, "classify: the model's input %s does not take %ld-pixel images\n",
            inputs[0], pixels);
    goto out;
  }
  if (pd_state_feed(st, inputs[0], PD_DTYPE_FLOAT32, in.ndims, dims, x) || pd_state_run(st) ||
      pd_state_fetch(st, outputs[0], &out))
    goto fail;
  if (out.dtype != PD_DTYPE_FLOAT32 || out.ndims != 2 || out.dims[0] != count ||
      out.dims[1] != 10) {
    fprintf(stderr, "classify: expected %ld x 10 float32 scores from %s\n", count, outputs[0]);
    goto out;
  }

  /* out.data stays valid until the next run: read the scores now. */
  const float *scores = out.data;
  long right = 0;
  for (long i = 0; i < count; i++) {
    int best = 0;
    for (int c = 1; c < 10; c++)
      if (scores[i * 10 + c] > scores[i * 10 + best]) best = c;
    right += best == labels[i];
    printf("%4ld: predicted %-11s  true %s%s\n", i, class_names[best],
           class_names[labels[i] % 10], best == labels[i] ? "" : "  <- wrong");
  }
  printf("accuracy: %.4f (%ld of %ld)\n", (double)right / (double)count, right, count);
  rc = 0;
  goto out;
fail:
  /* The library prints nothing itself: the host decides where errors go. */
  fputs(pd_state_error(st)->text, stderr);
out:
  pd_state_free(st);
  free(images);
  free(labels);
  free(x);
  return rc;
}
