/* reader_batch.c -- minibatches over a dataset: a seeded per-epoch permutation (Fisher-Yates on
 * SplitMix64, the same everywhere), the shard of one rank of a data-parallel job (every N-th
 * position of that order), a last partial batch or drop_last, sequence fields
 * concatenated with their LoD, unit-bytes fields converted to fp32, seeded augmentations
 * (applied as samples are gathered), and a prefetch thread that gathers the next batch into
 * staging buffers while the caller computes.
 *
 * Threads: the prefetch thread only reads the dataset and the permutation and writes the staging
 * buffers; it never allocates (so the pd_malloc hook stays single-threaded) and never touches
 * the caller's tensors. The caller's thread resizes the tensors and copies the staged batch out.
 * The permutation is only rewritten while no gather is in flight. */
#include "config.h"
#include "vm/reader/reader.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "vm/reader/reader_int.h"

static const pd_loc nowhere = {0};

enum { JOB_IDLE, JOB_REQUESTED, JOB_READY };

struct pd_batcher {
  const pd_dataset *d;
  pd_batcher_options o;
  int nfields;
  pd_dtype dtype[PD_DATASET_MAX_FIELDS];
  int ndims[PD_DATASET_MAX_FIELDS];
  int64_t dims[PD_DATASET_MAX_FIELDS][PD_TENSOR_MAX_DIMS];
  size_t sample_bytes[PD_DATASET_MAX_FIELDS];   /* a sequence field: the bytes of one row */
  bool unit_bytes[PD_DATASET_MAX_FIELDS];       /* held as bytes b, batched as fp32 b / 255 */
  float unit_value[256];                        /* b / 255.0f for each byte b */
  const int64_t *off[PD_DATASET_MAX_FIELDS];    /* a sequence field's row offsets, else NULL */
  const unsigned char *src[PD_DATASET_MAX_FIELDS];
  int64_t *lod;       /* batch + 1 entries when a field is a sequence field: a batch's LoD */
  int64_t n;          /* samples */
  int64_t limit;      /* samples handed out per epoch (n, or whole batches with drop_last) */
  int64_t *perm;      /* n entries with shuffle or a shard, else NULL (the identity) */
  int64_t full_n;     /* the dataset's samples (n is the shard's) */
  int64_t *order;     /* sharded with shuffle: the epoch's permutation of all full_n samples */
  int64_t pos;        /* the first sample of the next batch */
  int epoch;          /* the epoch being handed out (augmentations draw from it) */
  void *scratch;      /* the augmentation's scratch bytes (used by whichever thread gathers) */
  /* Prefetch (all below under mu, except the staging buffers, which belong to the thread while
   * state == JOB_REQUESTED and to the caller otherwise). */
  bool threaded;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  unsigned char *stage[PD_DATASET_MAX_FIELDS];
  int state;
  int64_t job_pos, job_rows;
  bool quit;
};

/* ---- The permutation ---- */

static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t pd_reader_splitmix64(uint64_t *s) {
  *s += 0x9E3779B97F4A7C15ull;
  return mix64(*s);
}

uint64_t pd_reader_uniform(uint64_t *s, uint64_t k) {
  uint64_t threshold = (0 - k) % k;
  uint64_t r;
  do r = pd_reader_splitmix64(s);
  while (r < threshold);
  return r % k;
}

void pd_reader_perm(int64_t *perm, int64_t n, uint64_t seed, int epoch) {
  uint64_t s = mix64(seed ^ mix64((uint64_t)epoch + 1));
  for (int64_t i = 0; i < n; i++) perm[i] = i;
  for (int64_t i = n - 1; i >= 1; i--) {
    int64_t j = (int64_t)pd_reader_uniform(&s, (uint64_t)i + 1);
    int64_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
}

/* ---- Gathering ---- */

/* The augmentation's key of sample idx in the epoch: a function of (seed, epoch, idx) only. */
static uint64_t augment_key(uint64_t seed, int epoch, int64_t idx) {
  return mix64(seed ^ mix64(((uint64_t)epoch + 1) * 0x9E3779B97F4A7C15ull ^
                            mix64((uint64_t)idx + 0x632BE59BD9B4E019ull)));
}

/* The batch's samples of the augmented field (at dst, in batch order) augmented in place. */
static void augment(const pd_batcher *b, int64_t pos, int64_t rows, unsigned char *dst) {
  const pd_batch_augment *a = b->o.augment;
  size_t sb = b->sample_bytes[a->field];
  for (int64_t r = 0; r < rows; r++) {
    int64_t idx = b->perm ? b->perm[pos + r] : pos + r;
    a->fn(a->ctx, dst + (size_t)r * sb, b->scratch, augment_key(b->o.seed, b->epoch, idx));
  }
}

/* A unit-bytes field (pd_dataset_add_unit_bytes_field): each byte b becomes the fp32 b / 255.0f,
 * exactly as the IDX reader once converted the whole dataset (looked up: a division per
 * element cost the prefetch thread, which shares the cores with the computation, about 5% of
 * the training throughput). */
static void gather_unit_bytes(const pd_batcher *b, int f, int64_t pos, int64_t rows, float *dst) {
  size_t k = b->sample_bytes[f] / sizeof(float);   /* elements of a sample */
  for (int64_t r = 0; r < rows; r++) {
    int64_t i = b->perm ? b->perm[pos + r] : pos + r;
    const unsigned char *s = b->src[f] + (size_t)i * k;
    float *o = dst + (size_t)r * k;
    for (size_t j = 0; j < k; j++) o[j] = b->unit_value[s[j]];
  }
}

static void gather(const pd_batcher *b, int64_t pos, int64_t rows, unsigned char *const *dst) {
  for (int f = 0; f < b->nfields; f++) {
    if (b->unit_bytes[f]) {
      gather_unit_bytes(b, f, pos, rows, (float *)(void *)dst[f]);
      continue;
    }
    size_t sb = b->sample_bytes[f];
    const int64_t *off = b->off[f];
    if (off && !b->perm) {   /* consecutive sequences: their rows are contiguous */
      size_t n = (size_t)(off[pos + rows] - off[pos]) * sb;
      if (n) memcpy(dst[f], b->src[f] + (size_t)off[pos] * sb, n);
      continue;
    }
    if (off) {
      const int64_t *idx = b->perm + pos;
      size_t at = 0;
      for (int64_t r = 0; r < rows; r++) {
        size_t n = (size_t)(off[idx[r] + 1] - off[idx[r]]) * sb;
        if (n) memcpy(dst[f] + at, b->src[f] + (size_t)off[idx[r]] * sb, n);
        at += n;
      }
      continue;
    }
    if (!b->perm) {
      memcpy(dst[f], b->src[f] + (size_t)pos * sb, (size_t)rows * sb);
      continue;
    }
    const int64_t *idx = b->perm + pos;
    unsigned char *out = dst[f];
    const unsigned char *src = b->src[f];
    for (int64_t r = 0; r < rows; r++) memcpy(out + (size_t)r * sb, src + (size_t)idx[r] * sb, sb);
  }
  if (b->o.augment) augment(b, pos, rows, dst[b->o.augment->field]);
}

static void *prefetch_main(void *arg) {
  pd_batcher *b = arg;
  pd_k_set_ftz_daz();   /* every computing thread (HACKING.md) */
  pthread_mutex_lock(&b->mu);
  for (;;) {
    while (!b->quit && b->state != JOB_REQUESTED) pthread_cond_wait(&b->cv, &b->mu);
    if (b->quit) break;
    int64_t pos = b->job_pos, rows = b->job_rows;
    pthread_mutex_unlock(&b->mu);
    gather(b, pos, rows, b->stage);
    pthread_mutex_lock(&b->mu);
    b->state = JOB_READY;
    pthread_cond_broadcast(&b->cv);
  }
  pthread_mutex_unlock(&b->mu);
  return NULL;
}

static int64_t rows_at(const pd_batcher *b, int64_t pos) {
  int64_t left = b->limit - pos;
  return left < b->o.batch ? left : b->o.batch;
}

/* The rows of sequence field f in the batch of `rows` samples at pos; with lod, also its LoD
 * (rows + 1 offsets). Reads the permutation, which no one writes while a batch is handed out. */
static int64_t seq_rows(const pd_batcher *b, int f, int64_t pos, int64_t rows, int64_t *lod) {
  const int64_t *off = b->off[f];
  int64_t total = 0;
  if (lod) lod[0] = 0;
  for (int64_t r = 0; r < rows; r++) {
    int64_t i = b->perm ? b->perm[pos + r] : pos + r;
    total += off[i + 1] - off[i];
    if (lod) lod[r + 1] = total;
  }
  return total;
}

static int cmp_desc(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, c = *(const int64_t *)y;
  return (a < c) - (a > c);
}

/* The most rows a batch of sequence field f can hold: in order, the longest run of `batch`
 * consecutive samples; shuffled, the `batch` longest sequences together. -1 on out of memory. */
static int64_t max_seq_rows(const pd_batcher *b, int f) {
  const int64_t *off = b->off[f];
  int64_t k = b->o.batch < b->n ? b->o.batch : b->n, most = 0;
  if (!b->o.shuffle && b->o.shard_count <= 1) {
    for (int64_t pos = 0; pos < b->limit; pos += b->o.batch) {
      int64_t end = pos + rows_at(b, pos);
      if (off[end] - off[pos] > most) most = off[end] - off[pos];
    }
    return most;
  }
  if (k == b->full_n) return off[b->full_n];
  int64_t *len = pd_malloc((size_t)b->full_n * sizeof *len);
  if (!len) return -1;
  for (int64_t i = 0; i < b->full_n; i++) len[i] = off[i + 1] - off[i];
  qsort(len, (size_t)b->full_n, sizeof *len, cmp_desc);
  for (int64_t i = 0; i < k; i++) most += len[i];
  pd_free(len);
  return most;
}

/* Ask the thread for the batch at b->pos (under mu). */
static void request_locked(pd_batcher *b) {
  if (b->pos < b->limit) {
    b->job_pos = b->pos;
    b->job_rows = rows_at(b, b->pos);
    b->state = JOB_REQUESTED;
    pthread_cond_broadcast(&b->cv);
  } else {
    b->state = JOB_IDLE;
  }
}

/* ---- The API ---- */

pd_status pd_batcher_start_epoch(pd_batcher *b, int epoch) {
  if (epoch < 0) return PD_EINVAL;
  if (b->threaded) {   /* let an in-flight gather finish before touching the permutation */
    pthread_mutex_lock(&b->mu);
    while (b->state == JOB_REQUESTED) pthread_cond_wait(&b->cv, &b->mu);
    b->state = JOB_IDLE;
    pthread_mutex_unlock(&b->mu);
  }
  if (b->perm && b->o.shard_count <= 1) {
    pd_reader_perm(b->perm, b->n, b->o.seed, epoch);
  } else if (b->perm) {   /* a shard: every N-th position of the epoch's order */
    if (b->order) pd_reader_perm(b->order, b->full_n, b->o.seed, epoch);
    int64_t nr = b->o.shard_count, r = b->o.shard_rank;
    for (int64_t j = 0; j < b->n; j++) b->perm[j] = b->order ? b->order[r + j * nr] : r + j * nr;
  }
  b->pos = 0;
  b->epoch = epoch;
  if (b->threaded) {
    pthread_mutex_lock(&b->mu);
    request_locked(b);
    pthread_mutex_unlock(&b->mu);
  }
  return PD_OK;
}

static void free_parts(pd_batcher *b) {
  for (int f = 0; f < PD_DATASET_MAX_FIELDS; f++) pd_free(b->stage[f]);
  pd_free(b->perm);
  pd_free(b->order);
  pd_free(b->lod);
  pd_free(b->scratch);
  pd_free(b);
}

pd_status pd_batcher_new(const pd_dataset *d, const pd_batcher_options *o, pd_batcher **out,
                         pd_error *err) {
  *out = NULL;
  if (!d || !o)
    return pd_error_set(err, PD_EINVAL, nowhere, "pd_batcher_new needs a dataset and options");
  if (o->batch < 1)
    return pd_error_set(err, PD_EINVAL, nowhere, "the batch size must be >= 1, not %lld",
                        (long long)o->batch);
  if (pd_dataset_nfields(d) < 1)
    return pd_error_set(err, PD_EINVAL, nowhere, "the dataset has no fields");
  pd_batcher *b = pd_calloc(1, sizeof *b);
  if (!b) return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
  b->d = d;
  b->o = *o;
  b->full_n = b->n = pd_dataset_size(d);
  bool sharded = o->shard_count > 1;
  if (sharded && (o->shard_rank < 0 || o->shard_rank >= o->shard_count)) {
    pd_free(b);
    return pd_error_set(err, PD_EINVAL, nowhere, "shard %d of %d does not exist", o->shard_rank,
                        o->shard_count);
  }
  if (sharded)
    b->n = o->equal_shards ? b->full_n / o->shard_count
                           : (b->full_n - o->shard_rank + o->shard_count - 1) / o->shard_count;
  b->nfields = pd_dataset_nfields(d);
  const pd_batch_augment *aug = o->augment;
  if (aug && (aug->field < 0 || aug->field >= b->nfields || !aug->fn ||
              pd_dataset_field_is_seq(d, aug->field))) {
    pd_free(b);
    return pd_error_set(err, PD_EINVAL, nowhere, "an augmentation needs a function and a "
                        "fixed-shape field of the dataset");
  }
  if (aug && !(b->scratch = pd_malloc(aug->scratch_bytes ? aug->scratch_bytes : 1))) {
    pd_free(b);
    return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory for the augmentation");
  }
  b->limit = o->drop_last ? b->n / o->batch * o->batch : b->n;
  int64_t stage_rows = o->batch < b->n ? o->batch : b->n;
  for (int v = 0; v < 256; v++) b->unit_value[v] = (float)v / 255.0f;
  for (int f = 0; f < b->nfields; f++) {
    b->dtype[f] = pd_dataset_field_dtype(d, f);
    b->ndims[f] = pd_dataset_field_shape(d, f, b->dims[f]);
    size_t sb = pd_dtype_size(b->dtype[f]);
    for (int k = 0; k < b->ndims[f]; k++) sb *= (size_t)b->dims[f][k];   /* fits: d holds n */
    b->sample_bytes[f] = sb;
    b->src[f] = pd_dataset_field_data(d, f);
    b->off[f] = pd_dataset_field_offsets(d, f);
    b->unit_bytes[f] = pd_dataset_field_stored_dtype(d, f) != b->dtype[f];
    if (b->off[f] && !b->lod &&
        !(b->lod = pd_malloc(((size_t)stage_rows + 1) * sizeof *b->lod))) {
      free_parts(b);
      return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory for the batches' LoD");
    }
  }
  size_t np = (size_t)(b->n ? b->n : 1), nall = (size_t)(b->full_n ? b->full_n : 1);
  if (((o->shuffle || sharded) && !(b->perm = pd_malloc(np * sizeof *b->perm))) ||
      (o->shuffle && sharded && !(b->order = pd_malloc(nall * sizeof *b->order)))) {
    free_parts(b);
    return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory for the permutation");
  }
  /* Staging: room for the largest batch (for a sequence field, in rows; at least 1 byte). */
  for (int f = 0; o->prefetch && f < b->nfields; f++) {
    int64_t rows = b->off[f] ? max_seq_rows(b, f) : stage_rows;
    if (rows < 0 ||
        !(b->stage[f] = pd_malloc(rows ? (size_t)rows * b->sample_bytes[f] : 1))) {
      free_parts(b);
      return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory for the prefetch buffers");
    }
  }
  if (o->prefetch) {
    if (pthread_mutex_init(&b->mu, NULL)) {
      free_parts(b);
      return pd_error_set(err, PD_ERUNTIME, nowhere, "cannot create a mutex");
    }
    if (pthread_cond_init(&b->cv, NULL)) {
      pthread_mutex_destroy(&b->mu);
      free_parts(b);
      return pd_error_set(err, PD_ERUNTIME, nowhere, "cannot create a condition variable");
    }
    /* The thread blocks every signal, so that signals (SIGINT) reach the caller's thread. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&b->thread, NULL, prefetch_main, b);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
      pthread_cond_destroy(&b->cv);
      pthread_mutex_destroy(&b->mu);
      free_parts(b);
      return pd_error_set(err, PD_ERUNTIME, nowhere, "cannot start the prefetch thread: %s",
                          strerror(rc));
    }
    b->threaded = true;
  }
  pd_batcher_start_epoch(b, 0);
  *out = b;
  return PD_OK;
}

pd_status pd_batcher_next(pd_batcher *b, pd_tensor *fields, int64_t *rows, pd_error *err) {
  *rows = 0;
  if (b->pos >= b->limit) return PD_OK;
  int64_t r = rows_at(b, b->pos);
  int64_t nrows[PD_DATASET_MAX_FIELDS];   /* rows of each field's tensor */
  for (int f = 0; f < b->nfields; f++) {
    int64_t dims[PD_TENSOR_MAX_DIMS];
    nrows[f] = b->off[f] ? seq_rows(b, f, b->pos, r, b->lod) : r;
    dims[0] = nrows[f];
    for (int k = 0; k < b->ndims[f]; k++) dims[k + 1] = b->dims[f][k];
    pd_status st = pd_tensor_resize(&fields[f], b->dtype[f], b->ndims[f] + 1, dims);
    if (!st && b->off[f]) {
      const int64_t *lv = b->lod;
      int64_t len = r + 1;
      st = pd_tensor_set_lod(&fields[f], 1, &lv, &len);
    } else if (!st) {
      pd_tensor_clear_lod(&fields[f]);
    }
    if (st)
      return pd_error_set(err, st, nowhere, "out of memory for a batch of %lld samples of '%s'",
                          (long long)r, pd_dataset_field_name(b->d, f));
  }
  if (b->threaded) {
    pthread_mutex_lock(&b->mu);
    if (b->state == JOB_IDLE) request_locked(b);
    while (b->state != JOB_READY) pthread_cond_wait(&b->cv, &b->mu);
    pthread_mutex_unlock(&b->mu);
    for (int f = 0; f < b->nfields; f++)
      if (nrows[f])
        memcpy(pd_tensor_data(&fields[f]), b->stage[f], (size_t)nrows[f] * b->sample_bytes[f]);
    b->pos += r;
    pthread_mutex_lock(&b->mu);
    request_locked(b);
    pthread_mutex_unlock(&b->mu);
  } else {
    unsigned char *dst[PD_DATASET_MAX_FIELDS];
    for (int f = 0; f < b->nfields; f++) dst[f] = pd_tensor_data(&fields[f]);
    gather(b, b->pos, r, dst);
    b->pos += r;
  }
  *rows = r;
  return PD_OK;
}

int64_t pd_batcher_num_batches(const pd_batcher *b) {
  return b->n / b->o.batch + (!b->o.drop_last && b->n % b->o.batch != 0);
}

void pd_batcher_free(pd_batcher *b) {
  if (!b) return;
  if (b->threaded) {
    pthread_mutex_lock(&b->mu);
    b->quit = true;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    pthread_join(b->thread, NULL);
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
  }
  free_parts(b);
}
