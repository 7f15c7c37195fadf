/* reader.h -- training data: in-memory datasets read from IDX (MNIST, Fashion-MNIST), CSV,
 * NumPy .npy and text files (fixed windows, or one variable-length sequence per line), and
 * batchers that cut a dataset into (optionally shuffled) minibatches, prefetching the next batch
 * on a second thread while the caller computes.
 *
 * A dataset holds N samples of a few named fields; every field has a dtype and a per-sample shape
 * and stores its N samples contiguously (row-major, sample after sample). A batch of `rows`
 * samples of a field is a tensor of shape [rows, per-sample dims...].
 *
 * A sequence field (pd_dataset_add_seq_field) is ragged instead: sample i is a sequence of
 * len_i >= 0 rows, each row of one fixed inner shape (rank 0: one element per row). Its data is
 * every sample's rows, sample after sample, with offsets[i] = len_0 + ... + len_{i-1} (N + 1
 * offsets, offsets[N] = the total rows). A batch of samples s_1..s_k of it is one tensor
 * [len_{s_1} + ... + len_{s_k}, inner dims...] holding their rows in batch order, with the
 * one-level LoD [[0, len_{s_1}, len_{s_1} + len_{s_2}, ...]] (Fluid's LoDTensor of sequences).
 *
 * Ownership: a pd_dataset owns its names and data; the loaders hand a new one to the caller, who
 * releases it with pd_dataset_free. A pd_batcher borrows its dataset (which must outlive it and
 * not change while it exists) and owns its permutation, staging buffers and thread; release it
 * with pd_batcher_free. The batch tensors belong to the caller: pd_batcher_next only resizes
 * them and writes their data. Paths and names passed in are borrowed for the call only.
 *
 * Errors: every loader returns PD_OK, or a non-zero status with a message in `err` (which may be
 * NULL) naming the file and, for bad contents, the offset, line or column at fault:
 * PD_ENOTFOUND (missing file or column), PD_EIO (unreadable file), PD_EFORMAT (malformed,
 * truncated or inconsistent contents, corrupt gzip stream), PD_EUNSUPPORTED (a dtype or layout
 * these readers do not handle), PD_EINVAL (bad arguments), PD_ENOMEM. A failed call leaves
 * nothing allocated. Every file may also be gzip-compressed (detected by its magic bytes). */
#ifndef PD_READER_H
#define PD_READER_H

#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"
#include "base/dtype.h"
#include "vm/run/tensor.h"

/* A dataset has at most this many fields, with names of at most PD_DATASET_NAME_MAX bytes, and a
 * per-sample rank of at most PD_TENSOR_MAX_DIMS - 1 (the batch adds one dim). */
#define PD_DATASET_MAX_FIELDS 8
#define PD_DATASET_NAME_MAX 31

typedef struct pd_dataset pd_dataset;

/* ---- Inspecting a dataset. `i` indexes fields in [0, nfields); out of range gives NULL, -1 or
 * PD_FP32 (dtype) and leaves dims alone. ---- */
int64_t pd_dataset_size(const pd_dataset *d);              /* N, the number of samples */
int pd_dataset_nfields(const pd_dataset *d);
const char *pd_dataset_field_name(const pd_dataset *d, int i);   /* owned by d */
int pd_dataset_field_index(const pd_dataset *d, const char *name);  /* -1 when absent */
pd_dtype pd_dataset_field_dtype(const pd_dataset *d, int i);
/* Writes the per-sample dims into dims (room for PD_TENSOR_MAX_DIMS) and returns the per-sample
 * rank (>= 1 for the loaders below). For a sequence field: the dims and rank of one row. */
int pd_dataset_field_shape(const pd_dataset *d, int i, int64_t *dims);
/* The N samples of field i, contiguous, as the dataset holds them: in the field's stored dtype
 * (below; its dtype but for a unit-bytes field), owned by d; NULL when i is out of range. For
 * a sequence field: all the rows, sample after sample. */
const void *pd_dataset_field_data(const pd_dataset *d, int i);
/* Whether field i is a sequence field (false when i is out of range). */
bool pd_dataset_field_is_seq(const pd_dataset *d, int i);
/* A sequence field's N + 1 row offsets (sample j is rows [off[j], off[j + 1]); owned by d), or
 * NULL for a fixed-shape field or i out of range. */
const int64_t *pd_dataset_field_offsets(const pd_dataset *d, int i);
void pd_dataset_free(pd_dataset *d);   /* NULL is a no-op */
/* ---- Fields held more compactly than they batch. A unit-bytes field (IDX images) batches as
 * fp32 (its dtype) but holds one unsigned byte b per element, which a batch reads as
 * b / 255.0f (converted in pd_batcher_next's gather: on the prefetch thread when there is one);
 * 60,000 Fashion-MNIST images take 47 MB instead of 188 MB. ---- */
/* The dtype field i's data is held in: PD_UINT8 for a unit-bytes field, else its dtype (PD_FP32
 * when i is out of range). */
pd_dtype pd_dataset_field_stored_dtype(const pd_dataset *d, int i);
/* The bytes field i's data takes (all N samples); -1 when i is out of range. */
int64_t pd_dataset_field_stored_bytes(const pd_dataset *d, int i);
/* Add a unit-bytes field (dtype PD_FP32; the rules of pd_dataset_add_field for name and shape):
 * its storage, n * per-sample elements bytes, zero-filled, owned by d, is returned in *data for
 * the caller to fill with the bytes. */
pd_status pd_dataset_add_unit_bytes_field(pd_dataset *d, const char *name, int ndims,
                                          const int64_t *dims, void **data, pd_error *err);

/* ---- Building a dataset in memory (the loaders use these; so can tests and programs). ---- */
/* An empty dataset of n >= 1 samples and no fields. */
pd_status pd_dataset_new(int64_t n, pd_dataset **out, pd_error *err);
/* Add a field: a unique name (1..PD_DATASET_NAME_MAX bytes), a dtype, the per-sample shape
 * (ndims in [0, PD_TENSOR_MAX_DIMS - 1], dims >= 1). Its storage (n * per-sample bytes,
 * zero-filled, owned by d) is returned in *data for the caller to fill. */
pd_status pd_dataset_add_field(pd_dataset *d, const char *name, pd_dtype dtype, int ndims,
                               const int64_t *dims, void **data, pd_error *err);
/* Add a sequence field: the same rules for name, dtype and the shape of one row (ndims, dims;
 * ndims 0 is one element per row), and lengths[0..n) >= 0, the rows of each sample (borrowed).
 * Its storage (sum(lengths) rows, zero-filled, owned by d; non-NULL even for 0 rows) is returned
 * in *data for the caller to fill, sample after sample. PD_EINVAL for a negative length or
 * sizes that overflow. */
pd_status pd_dataset_add_seq_field(pd_dataset *d, const char *name, pd_dtype dtype, int ndims,
                                   const int64_t *dims, const int64_t *lengths, void **data,
                                   pd_error *err);

/* ---- Loaders: on success *out is a new dataset owned by the caller; on failure *out = NULL. */

/* MNIST or Fashion-MNIST (`which` is "mnist" or "fashion_mnist"; "fashion-mnist" also works),
 * split "train" (60000 samples) or "test" (10000), from the IDX files
 * {train,t10k}-{images-idx3,labels-idx1}-ubyte, gzipped (".gz", tried first) or not, in `dir`.
 * dir NULL means $PDLANG_FASHION_MNIST (resp. $PDLANG_MNIST) when set and not empty, else
 * /usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist; resp.
 * /usr/share/datasets/mnist). Fields as pd_dataset_idx gives them:
 *   "images": fp32 [784], the 28x28 pixels row by row, byte b read as b / 255.0f, so in [0, 1]
 *             (a unit-bytes field: held as the bytes, converted per batch);
 *   "label":  int64 [1], the class 0..9. */
pd_status pd_dataset_mnist(const char *which, const char *split, const char *dir,
                           pd_dataset **out, pd_error *err);

/* A pair of IDX files (unsigned-byte data, gzipped or not): images of shape [N, d1, ..., dk]
 * and labels of shape [N]. Fields "images": fp32 [d1*...*dk] (flattened; bytes scaled by
 * 1/255 to [0, 1]; a unit-bytes field, held as the bytes) and "label": int64 [1]. The two N
 * must agree, and each file must hold
 * exactly the bytes its header announces. */
pd_status pd_dataset_idx(const char *images_path, const char *labels_path, pd_dataset **out,
                         pd_error *err);

/* A CSV file with a header row naming the columns (comma-separated; cells may be quoted with
 * "..."; CRLF or LF line ends; a UTF-8 BOM and blank lines are skipped; cells are trimmed).
 * `label` names the label column (NULL: the last column). `features` lists nfeatures column
 * names in the order wanted (features NULL, or nfeatures 0: every column but the label, in file
 * order). Only the chosen columns must be numeric and finite; others are ignored. Fields:
 *   "features": fp32 [k], k = the number of feature columns;
 *   "label":    int64 [1] when every label cell is written as an integer ("3", "-1"), else
 *               fp32 [1] ("3.0", "0.5", "1e2") -- as pandas infers the column type. A
 *               classifier's labels thus come out int64 and a regression target fp32 (write
 *               one cell as "1.0" to force fp32).
 * Errors name the line and the column ("f.csv:7: column 'age' (2): 'n/a' is not a number"). */
pd_status pd_dataset_csv(const char *path, const char *label, int nfeatures,
                         const char *const *features, pd_dataset **out, pd_error *err);
/* pd_dataset_csv with options: the same three, a delimiter (0 means ','; ';' and '\t' are
 * common; not a quote, a space or a line end), and a fill value for missing cells (empty, "NA",
 * "N/A", "NaN", "nan", "null", "NULL"), which are otherwise an error naming line and column. */
/* The categories of a run's CSV text columns (vm/reader/reader_categories.c): for each column
 * name, its values in id order. The first reader of a column fixes them (its distinct values
 * sorted by their bytes); later readers map through them and refuse a value it did not have.
 * Owned by the caller. */
typedef struct pd_categories pd_categories;
pd_categories *pd_categories_new(void);   /* NULL when out of memory */
void pd_categories_free(pd_categories *c);
int pd_categories_count(const pd_categories *c);   /* columns */
/* Write them to path atomically: a comment line, then "COLUMN<tab>VALUE" per value in id
 * order (tab, newline, carriage return and backslash written \t \n \r \\). */
pd_status pd_categories_save(const pd_categories *c, const char *path, pd_error *err);
/* The text pd_categories_save writes, appended to b (b->oom out of memory). */
void pd_categories_format(const pd_categories *c, pd_buf *b);
/* Read a file pd_categories_save wrote into c: its columns join c; a column c has already must
 * have the same values (else PD_EINVAL naming it). PD_ENOTFOUND when the file is not there. */
pd_status pd_categories_load(pd_categories *c, const char *path, pd_error *err);

/* categorical names columns of text (the label or features) mapped to ids through categories
 * (when NULL, through a set of this file's own): the label becomes int64 [1], the id; a
 * feature becomes its category's one-hot vector of K values in "features" (K the column's
 * category count), in the feature's place. */
typedef struct pd_csv_options {
  const char *label;
  int nfeatures;
  const char *const *features;
  char delimiter;
  bool has_fill;
  double fill;
  int ncategorical;
  const char *const *categorical;
  pd_categories *categories;
} pd_csv_options;
pd_status pd_dataset_csv_opts(const char *path, const pd_csv_options *o, pd_dataset **out,
                              pd_error *err);

/* A NumPy .npy file (format version 1, 2 or 3; C order; dtype <f4 <f8 <i4 <i8 |u1 |i1 |b1,
 * little-endian host) holding an array of shape [N, ...], and optionally a second .npy
 * (label_path, may be NULL) with N labels. Fields "x" and "label", in the stored dtype
 * (float32, float64, int32, int64, uint8, int8, bool), per-sample shape the array's shape
 * without its first dim -- except that a 1-D array gets per-sample shape [1], so labels of
 * shape [N] batch as [rows, 1]. fortran_order True, big-endian or structured dtypes, and 0-d
 * arrays are refused. */
pd_status pd_dataset_npy(const char *path, const char *label_path, pd_dataset **out,
                         pd_error *err);
/* The header of a .npy file alone (the data is not read): its dtype, rank and dims (room for
 * PD_TENSOR_MAX_DIMS), checked as pd_dataset_npy checks them. For the compiler, which checks
 * an npy(...) reader's shape against data() before anything runs. */
pd_status pd_npy_header(const char *path, pd_dtype *dtype, int *rank, int64_t *dims,
                        pd_error *err);
/* How many columns the first row of a CSV file has (the header row: fields split at the
 * delimiter, ',' when 0, outside double quotes; at most the first 1 MiB is read). */
pd_status pd_csv_columns(const char *path, char delimiter, int *ncols, pd_error *err);
/* Write t (host memory; float32, float64, int32, int64 or bool) to path as a .npy file of its
 * shape, atomically (vm/reader/npy_write.c). */
pd_status pd_npy_save(const char *path, const pd_tensor *t, pd_error *err);

/* A text file for character-level models (vm/reader/reader_text.c): its bytes cut into consecutive
 * windows of `length` characters; fields "x" (a window) and "y" (the next character of each
 * position), both int64 [length], byte values 0..255. */
pd_status pd_dataset_text(const char *path, int64_t length, pd_dataset **out, pd_error *err);

/* Text files, one sample per line, for classifying variable-length sequences (vm/reader/reader_lines.c).
 * A line ends at '\n' (a '\r' before it is dropped; the last line needs no '\n'); a line
 * that is empty or holds only spaces and tabs is skipped, and so is a line of fewer than
 * min_length bytes; a line of more than max_length bytes (when max_length > 0) keeps its first
 * max_length. The lines that are not blank are numbered 1, 2, ... within each file; with split
 * TRAIN or TEST, line k is a test line when k % test_every == 0, else a training line: every
 * test_every-th line of each file, whatever min_length and max_length are, so the two splits
 * never overlap, even when read with different lengths. Samples come file after file, in line
 * order. Fields:
 *   "x":     a sequence field, int64 rows of shape [1]: the line's bytes (0..255), one per row;
 *            with pad_to = L > 0 instead int64 [L], the line's first L bytes, then zeros;
 *   "mask":  with pad_to = L > 0 only: float32 [L], 1 where "x" holds a byte of the line, 0 in
 *            the padding (a line is never empty, so each row has a 1);
 *   "label": int64 [1], the index of the line's file in paths.
 * Errors name the file: a missing or unreadable one; a file with no line kept (PD_EFORMAT,
 * "lines: PATH has no line of at least N characters"); a split with no line (PD_EFORMAT); bad
 * options (PD_EINVAL: npaths < 1, min_length < 1, 0 < max_length < min_length, test_every < 2,
 * pad_to < 0). */
typedef enum pd_lines_split { PD_LINES_ALL, PD_LINES_TRAIN, PD_LINES_TEST } pd_lines_split;

typedef struct pd_lines_options {
  int64_t min_length;    /* >= 1 */
  int64_t max_length;    /* 0: no limit */
  pd_lines_split split;
  int64_t test_every;    /* >= 2; used with TRAIN and TEST */
  int64_t pad_to;        /* 0: "x" is a sequence; > 0: "x" padded or cut to pad_to, "mask" */
} pd_lines_options;

pd_status pd_dataset_lines(int npaths, const char *const *paths, const pd_lines_options *o,
                           pd_dataset **out, pd_error *err);

/* ---- Validation splits (reader_split.c) ---- */
/* How many of n >= 2 samples a fraction in (0, 1) holds out: round(fraction * n), at least 1
 * and at most n - 1. */
int64_t pd_dataset_split_count(int64_t n, double fraction);
/* A new dataset (the caller's) of the samples of d that a validation split of `fraction` puts
 * in the held-out part (held_out) or in the rest, in d's order, every field copied (sequence
 * fields with their lengths). The held-out samples are the first pd_dataset_split_count of the
 * permutation pd_batcher_start_epoch describes, for epoch 0 and the seed
 * seed ^ 0x5a17c0ffee5eed: the same seed always holds out the same samples, and the two parts
 * of one seed are disjoint and together make d. PD_EINVAL for a fraction outside (0, 1) or a
 * dataset of fewer than 2 samples. */
pd_status pd_dataset_split(const pd_dataset *d, double fraction, uint64_t seed, bool held_out,
                           pd_dataset **out, pd_error *err);

/* ---- Minibatches ---- */
typedef struct pd_batcher pd_batcher;

typedef struct pd_batcher_options {
  int64_t batch;     /* samples per batch, >= 1 */
  bool shuffle;      /* a new permutation every epoch (else samples in order) */
  uint64_t seed;     /* with the epoch number, fixes the permutation (see below) */
  bool drop_last;    /* leave out a last batch smaller than `batch` */
  bool prefetch;     /* gather the next batch on a second thread */
  /* Data parallelism: with shard_count N > 1 the batcher hands out the shard of rank
   * shard_rank: the samples at the positions i of the epoch's order (the permutation, the same on
   * every rank, or 0..n-1) with i mod N == shard_rank, in that order. equal_shards: every rank
   * gets floor(n / N) of them (the last n mod N positions are left out), so that every rank runs
   * as many batches of the same sizes (training); else rank r gets all of its positions
   * (evaluation). */
  int shard_rank, shard_count;
  bool equal_shards;
  /* Seeded augmentation (NULL: none): the batcher calls augment->fn on every sample of field
   * augment->field (a fixed-shape field) after gathering it, on the prefetch thread with
   * prefetch; borrowed, it must outlive the batcher. */
  const struct pd_batch_augment *augment;
} pd_batcher_options;

/* An augmentation: fn(ctx, sample, scratch, key) changes one sample (the field's per-sample
 * bytes) in place, drawing its random numbers from key alone, which is a function of the
 * batcher's seed, the epoch and the sample's index in the dataset (SplitMix64's finalizer
 * mixes them), so that a seed gives the same samples whatever the threads do; scratch holds
 * scratch_bytes for the call. fn must not allocate (it runs on the prefetch thread). */
typedef struct pd_batch_augment {
  int field;
  void (*fn)(const void *ctx, void *sample, void *scratch, uint64_t key);
  const void *ctx;
  size_t scratch_bytes;
} pd_batch_augment;

/* A batcher over d (borrowed). It starts at epoch 0, as if pd_batcher_start_epoch(b, 0) had been
 * called. PD_EINVAL for batch < 1; PD_ERUNTIME when the prefetch thread cannot start. With
 * prefetch, the staging buffers hold the largest batch there can be (for a sequence field, with
 * shuffle: the `batch` longest sequences together). */
pd_status pd_batcher_new(const pd_dataset *d, const pd_batcher_options *o, pd_batcher **out,
                         pd_error *err);
/* Rewind to the start of epoch `epoch` (>= 0; PD_EINVAL otherwise). With shuffle the order is
 * the permutation of 0..N-1 that this code computes everywhere alike from (seed, epoch):
 *     s = mix(seed ^ mix(epoch + 1)), where mix is SplitMix64's finalizer;
 *     perm = identity; for i = N-1 down to 1: j = uniform(i + 1); swap perm[i], perm[j];
 *     uniform(k): draw r = splitmix64_next(&s) until r >= (2^64 - k) % k; return r % k.
 * With prefetch the first batch is gathered right away. */
pd_status pd_batcher_start_epoch(pd_batcher *b, int epoch);
/* The next batch of the epoch: fields[i] (the caller's tensors, one per dataset field, in
 * field order) get the field's dtype, shape [rows, per-sample dims...], the samples' data, and
 * no LoD; *rows is the batch size (samples). A sequence field's tensor gets instead the
 * samples' rows one sequence after another, shape [their total rows, row dims...], and the LoD
 * [[0, len of the batch's 1st sample, + len of its 2nd, ...]] in batch order (with shuffle,
 * whole sequences move). At the end of the epoch *rows = 0 and the tensors are left
 * alone. The last batch may be short (rows < batch) unless drop_last. On failure (PD_ENOMEM
 * resizing a tensor or setting its LoD) the batch is not consumed: the next call returns it
 * again. */
pd_status pd_batcher_next(pd_batcher *b, pd_tensor *fields, int64_t *rows, pd_error *err);
/* Batches per epoch: ceil(N / batch), or floor(N / batch) with drop_last. */
int64_t pd_batcher_num_batches(const pd_batcher *b);
/* Stops and joins the prefetch thread (also in mid-epoch) and frees b. NULL is a no-op. */
void pd_batcher_free(pd_batcher *b);

/* ---- Folders of images (vm/reader/reader_image.c; PNG through libpng, JPEG through libjpeg) */

/* How images are read: every image becomes `channels` x height x width float32 values (CHW),
 * its samples scaled to [0, 1] (divided by 255, or 65535 for a 16-bit PNG), converted to the
 * channels (1: grey, from RGB as ITU-R 601-2 luma, 0.299 R + 0.587 G + 0.114 B; 3: RGB, grey
 * repeated, alpha dropped; 4: RGBA, alpha 1 when the file has none), resized bilinearly with
 * half-pixel centres (torch.nn.functional.interpolate(mode = "bilinear", align_corners =
 * False), no antialiasing) when its size differs, then normalised per channel:
 * (value - mean[c]) / std[c]. */
typedef struct pd_image_options {
  int channels, height, width;   /* channels 1, 3 or 4; height and width 1..4096 */
  double mean[4], std[4];        /* per channel; std > 0 */
} pd_image_options;
/* One channel's normalisation is usable: mean finite, std positive and finite, and every value
 * it makes of a pixel in 0..1 ((v - mean) / std) finite in float32: (|mean| + 1) / std at most
 * FLT_MAX. */
bool pd_image_norm_ok(double mean, double std);

/* The images of a folder of class folders, as torchvision's ImageFolder reads them:
 * DIR/CLASS/FILE, the class folders sorted by name (byte order) and numbered 0..K-1, the files
 * of each class found in it and its subfolders, sorted by path. Names starting with '.' are
 * skipped, and so are plain files directly in DIR. Every other file must be a PNG or a JPEG (by
 * its content, whatever its name). Fields: "images", float32 [channels, height, width]
 * (pd_image_options); "label", int64 [1], the class number. classes (may be NULL) receives the
 * K class names (a heap array of heap strings: pd_image_classes_free) and nclasses K.
 * Errors name the file or folder: DIR missing or not a folder (PD_ENOTFOUND, PD_EIO), no
 * class folder or a class folder without a file (PD_EFORMAT), a file that is not an image or
 * is corrupt or truncated (PD_EFORMAT), what pd_image_decode refuses; bad options PD_EINVAL. */
pd_status pd_dataset_images(const char *dir, const pd_image_options *o, pd_dataset **out,
                            char ***classes, int *nclasses, pd_error *err);
void pd_image_classes_free(char **classes, int nclasses);

/* The image files paths[0..n) read as pd_dataset_images reads each (decoded, converted,
 * resized, normalised) into out (the caller's tensor): float32 [n, channels, height, width],
 * or [n, dims[1], ...] when the input they feed is declared vnd dims vdims of another rank and
 * as many values a sample (a flat [-1, C * H * W]); vnd 0: none. Errors name the file (as
 * pd_image_decode's); bad options PD_EINVAL. */
pd_status pd_image_files(const pd_image_options *o, int n, const char *const *paths, int vnd,
                         const int64_t *vdims, pd_tensor *out, pd_error *err);

/* ---- A model's image preprocessing (vm/reader/image_prep.c): save writes it beside a model
 * whose input an images(...) reader fed (MODEL.preprocess, text), so that `pdlang exec
 * --feed NAME=FILE.png` and the C library's pd_state_feed_images turn image files into that
 * input as the reader did. */
typedef struct pd_image_prep {
  char input[128];          /* the model's input the images feed */
  pd_image_options o;
} pd_image_prep;

/* The file of a model beside it: "m.pdmodel" -> "m" + ext (also for .pdiparams; other names
 * gain ext). Heap (pd_free); NULL out of memory. */
char *pd_model_side_path(const char *path, const char *ext);
/* Write p to path (atomically); read it back (PD_ENOTFOUND when there is no such file,
 * PD_EFORMAT naming the line of one that is not this format). */
pd_status pd_image_prep_save(const char *path, const pd_image_prep *p, pd_error *err);
/* The text pd_image_prep_save writes, appended to b (b->oom out of memory). */
void pd_image_prep_format(const pd_image_prep *p, pd_buf *b);
pd_status pd_image_prep_load(const char *path, pd_image_prep *p, pd_error *err);
/* The same from text[0..len) (no NUL needed after it; a NUL inside is refused), errors naming
 * path and the line: each of the four lines once, shape's numbers integers, mean and std as
 * pd_image_norm_ok accepts them. */
pd_status pd_image_prep_parse(const char *text, size_t len, const char *path, pd_image_prep *p,
                              pd_error *err);

/* The training augmentations of torchvision's RandomCrop(padding = pad) and
 * RandomHorizontalFlip(): a sample of field 0 of pd_dataset_images' datasets is padded by pad
 * pixels on every side with the value a black pixel normalises to (-mean[c] / std[c]: a 0
 * padded before normalising, as torchvision pads), cropped back to height x width at an offset
 * drawn uniformly in [0, 2 pad] for y, then x, and mirrored left to right when the next draw is
 * odd (flip). The draws come from SplitMix64 seeded by the batcher's key. */
typedef struct pd_image_augment {
  pd_image_options o;
  int pad;
  bool flip;
} pd_image_augment;
/* The batcher's augmentation of a (borrowed, it must outlive the batcher). */
pd_batch_augment pd_image_augmenter(const pd_image_augment *a);

#endif /* PD_READER_H */
