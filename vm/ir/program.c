/* program.c -- the in-memory ProgramDesc: blocks, vars (with a hash index per block), ops and
 * their slots and attributes, deep copies, and structural validation. The listings (text and
 * Graphviz) are in program_dump.c. */
#include "config.h"
#include "vm/ir/program.h"

#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "base/strmap.h"

/* ---- Names of the enums ---- */

static const struct {
  pd_var_type type;
  const char *name;
  bool tensor; /* carries a dtype and a shape */
} var_types[] = {
    {PD_VAR_LOD_TENSOR, "LOD_TENSOR", true},
    {PD_VAR_SELECTED_ROWS, "SELECTED_ROWS", true},
    {PD_VAR_FEED_MINIBATCH, "FEED_MINIBATCH", false},
    {PD_VAR_FETCH_LIST, "FETCH_LIST", false},
    {PD_VAR_STEP_SCOPES, "STEP_SCOPES", false},
    {PD_VAR_LOD_RANK_TABLE, "LOD_RANK_TABLE", false},
    {PD_VAR_LOD_TENSOR_ARRAY, "LOD_TENSOR_ARRAY", true},
    {PD_VAR_RAW, "RAW", false},
};

static int var_type_slot(int t) {
  for (size_t i = 0; i < PD_ARRAY_LEN(var_types); i++)
    if ((int)var_types[i].type == t) return (int)i;
  return -1;
}

const char *pd_var_type_name(pd_var_type t) {
  int i = var_type_slot((int)t);
  return i < 0 ? "?" : var_types[i].name;
}

bool pd_var_type_valid(int t) { return var_type_slot(t) >= 0; }

bool pd_var_type_has_tensor(pd_var_type t) {
  int i = var_type_slot((int)t);
  return i >= 0 && var_types[i].tensor;
}

static const struct {
  pd_attr_type type;
  const char *name;
  bool list;
} attr_types[] = {
    {PD_ATTR_INT, "INT", false},         {PD_ATTR_FLOAT, "FLOAT", false},
    {PD_ATTR_STRING, "STRING", false},   {PD_ATTR_INTS, "INTS", true},
    {PD_ATTR_FLOATS, "FLOATS", true},    {PD_ATTR_STRINGS, "STRINGS", true},
    {PD_ATTR_BOOLEAN, "BOOLEAN", false}, {PD_ATTR_BOOLEANS, "BOOLEANS", true},
    {PD_ATTR_BLOCK, "BLOCK", false},     {PD_ATTR_LONG, "LONG", false},
    {PD_ATTR_BLOCKS, "BLOCKS", true},    {PD_ATTR_LONGS, "LONGS", true},
    {PD_ATTR_FLOAT64S, "FLOAT64S", true}, {PD_ATTR_FLOAT64, "FLOAT64", false},
};

static int attr_type_slot(int t) {
  for (size_t i = 0; i < PD_ARRAY_LEN(attr_types); i++)
    if ((int)attr_types[i].type == t) return (int)i;
  return -1;
}

const char *pd_attr_type_name(pd_attr_type t) {
  int i = attr_type_slot((int)t);
  return i < 0 ? "?" : attr_types[i].name;
}

bool pd_attr_type_valid(int t) { return attr_type_slot(t) >= 0; }

bool pd_attr_type_is_list(pd_attr_type t) {
  int i = attr_type_slot((int)t);
  return i >= 0 && attr_types[i].list;
}

const char *pd_program_excerpt(const char *name, char *buf, size_t n) {
  static const char hex[] = "0123456789abcdef";
  if (!name) {
    snprintf(buf, n, "(null)");
    return buf;
  }
  size_t o = 0;
  for (const unsigned char *s = (const unsigned char *)name; *s; s++) {
    size_t need = (*s >= 0x20 && *s < 0x7f) ? 1 : 4;
    if (o + need + 4 > n) { /* keep room for "..." and the terminator */
      memcpy(buf + o, "...", 4);
      return buf;
    }
    if (need == 1) {
      buf[o++] = (char)*s;
    } else {
      buf[o++] = '\\';
      buf[o++] = 'x';
      buf[o++] = hex[*s >> 4];
      buf[o++] = hex[*s & 15];
    }
  }
  buf[o] = '\0';
  return buf;
}

/* ---- Arrays ----
 * The IR's arrays have no capacity field: the capacity is implied by the length (0, or the
 * smallest power of two >= n that is at least 8), which is exactly what pd_grow allocates when
 * it doubles from there. Every array is therefore grown one element at a time through here. */

static size_t implied_cap(int n) {
  if (n <= 0) return 0;
  size_t cap = 8;
  while (cap < (size_t)n) cap *= 2;
  return cap;
}

static int grow_by_one(void **ptr, int n, size_t elem) {
  if (n < 0 || n == INT_MAX) return -1;
  size_t cap = implied_cap(n);
  return pd_grow(ptr, &cap, (size_t)n + 1, elem);
}
#define GROW_BY_ONE(ptr, n) grow_by_one((void **)&(ptr), (n), sizeof *(ptr))

/* ---- The var index of a block: name -> pd_var_desc * (base/strmap.h). The index keeps its own
 * copies of the names: a program changed behind the API's back (a var's name replaced, which
 * pd_program_validate must report, not trip over) then leaves it stale, never dangling. ---- */

static pd_strmap *block_index(const pd_block *b) { return (pd_strmap *)b->var_index; }

/* ---- Freeing ---- */

static void strings_free(char **s, int n) {
  if (!s) return;
  for (int i = 0; i < n; i++) pd_free(s[i]);
  pd_free(s);
}

/* The array of a list attribute (BLOCKS share `ints`), NULL for a scalar one. */
static void *list_data(const pd_attr *a) {
  switch (a->type) {
  case PD_ATTR_INTS:
  case PD_ATTR_BLOCKS: return a->ints;
  case PD_ATTR_LONGS: return a->longs;
  case PD_ATTR_FLOATS: return a->floats;
  case PD_ATTR_FLOAT64S: return a->doubles;
  case PD_ATTR_BOOLEANS: return a->bools;
  case PD_ATTR_STRINGS: return a->strings;
  default: return NULL;
  }
}

static void list_set_data(pd_attr *a, void *p) {
  switch (a->type) {
  case PD_ATTR_INTS:
  case PD_ATTR_BLOCKS: a->ints = p; break;
  case PD_ATTR_LONGS: a->longs = p; break;
  case PD_ATTR_FLOATS: a->floats = p; break;
  case PD_ATTR_FLOAT64S: a->doubles = p; break;
  case PD_ATTR_BOOLEANS: a->bools = p; break;
  case PD_ATTR_STRINGS: a->strings = p; break;
  default: break;
  }
}

size_t pd_attr_list_elem_size(pd_attr_type t) {
  switch (t) {
  case PD_ATTR_INTS:
  case PD_ATTR_BLOCKS: return sizeof(int32_t);
  case PD_ATTR_LONGS: return sizeof(int64_t);
  case PD_ATTR_FLOATS: return sizeof(float);
  case PD_ATTR_FLOAT64S: return sizeof(double);
  case PD_ATTR_BOOLEANS: return sizeof(bool);
  case PD_ATTR_STRINGS: return sizeof(char *);
  default: return 0;
  }
}

const void *pd_attr_list(const pd_attr *a) { return a ? list_data(a) : NULL; }

static void attr_clear(pd_attr *a) {
  pd_free(a->name);
  if (a->type == PD_ATTR_STRING) pd_free(a->v.s);
  if (a->type == PD_ATTR_STRINGS)
    strings_free(a->strings, a->n);
  else
    pd_free(list_data(a));
  memset(a, 0, sizeof *a);
}

static void slot_clear(pd_slot *s) {
  pd_free(s->param);
  strings_free(s->args, s->nargs);
  memset(s, 0, sizeof *s);
}

static void slots_free(pd_slot *slots, int n) {
  for (int i = 0; i < n; i++) slot_clear(&slots[i]);
  pd_free(slots);
}

static void op_free(pd_op_desc *op) {
  if (!op) return;
  pd_free(op->type);
  slots_free(op->inputs, op->ninputs);
  slots_free(op->outputs, op->noutputs);
  for (int i = 0; i < op->nattrs; i++) attr_clear(&op->attrs[i]);
  pd_free(op->attrs);
  pd_free((char *)op->loc.file);
  pd_callchain_unref(op->calls);
  pd_free(op);
}

static void var_free(pd_var_desc *v) {
  if (!v) return;
  pd_free(v->name);
  pd_free(v->dims);
  pd_free(v);
}

static void block_free(pd_block *b) {
  if (!b) return;
  for (int i = 0; i < b->nvars; i++) var_free(b->vars[i]);
  for (int i = 0; i < b->nops; i++) op_free(b->ops[i]);
  pd_free(b->vars);
  pd_free(b->ops);
  pd_strmap *ix = block_index(b);
  if (ix) pd_strmap_free(ix);
  pd_free(ix);
  pd_free(b);
}

void pd_program_free(pd_program *p) {
  if (!p) return;
  for (int i = 0; i < p->nblocks; i++) block_free(p->blocks[i]);
  pd_free(p->blocks);
  if (p->name_counts) pd_strmap_free(p->name_counts);
  pd_free(p->name_counts);
  if (p->suffix_next) pd_strmap_free(p->suffix_next);
  pd_free(p->suffix_next);
  pd_free(p);
}

/* ---- Copying ---- */

/* A deep copy of n strings (NULL entries stay NULL); NULL on out of memory. n > 0. */
static char **strings_dup(char *const *s, int n) {
  char **d = pd_calloc((size_t)n, sizeof *d);
  if (!d) return NULL;
  for (int i = 0; i < n; i++) {
    if (s[i] && !(d[i] = pd_strdup(s[i]))) {
      strings_free(d, i);
      return NULL;
    }
  }
  return d;
}

/* Deep copy of an attribute into dst (zeroed first). 0, or -1 on out of memory or a malformed
 * source (a list with n < 0, or n > 0 and no array); dst is left empty then. */
static int attr_copy(pd_attr *dst, const pd_attr *src) {
  memset(dst, 0, sizeof *dst);
  dst->type = src->type;
  if (src->name && !(dst->name = pd_strdup(src->name))) goto fail;
  if (src->type == PD_ATTR_STRING) {
    if (src->v.s && !(dst->v.s = pd_strdup(src->v.s))) goto fail;
  } else if (!pd_attr_type_is_list(src->type)) {
    dst->v = src->v;
  } else {
    const void *data = list_data(src);
    if (src->n < 0 || (src->n > 0 && !data)) goto fail;
    dst->n = src->n;
    if (src->n > 0) {
      void *copy;
      if (src->type == PD_ATTR_STRINGS) {
        copy = strings_dup(src->strings, src->n);
      } else {
        size_t size = pd_attr_list_elem_size(src->type) * (size_t)src->n;
        if ((copy = pd_malloc(size))) memcpy(copy, data, size);
      }
      if (!copy) goto fail;
      list_set_data(dst, copy);
    }
  }
  return 0;
fail:
  attr_clear(dst);
  return -1;
}

/* A new slot binding `param` to a copy of args. 0 or -1 (dst left empty). */
static int slot_init(pd_slot *dst, const char *param, int nargs, const char *const *args) {
  memset(dst, 0, sizeof *dst);
  if (!param || nargs < 0 || (nargs > 0 && !args)) return -1;
  if (!(dst->param = pd_strdup(param))) return -1;
  if (nargs > 0 && !(dst->args = strings_dup((char *const *)args, nargs))) {
    slot_clear(dst);
    return -1;
  }
  dst->nargs = nargs;
  return 0;
}

static pd_var_desc *var_clone(const pd_var_desc *src) {
  pd_var_desc *v = pd_calloc(1, sizeof *v);
  if (!v) return NULL;
  *v = *src;
  v->name = NULL;
  v->dims = NULL;
  v->ndims = -1;
  if ((src->name && !(v->name = pd_strdup(src->name))) ||
      pd_var_set_shape(v, src->ndims, src->dims)) {
    var_free(v);
    return NULL;
  }
  return v;
}

static pd_op_desc *op_new(const char *type) {
  pd_op_desc *op = pd_calloc(1, sizeof *op);
  if (!op) return NULL;
  if (type && !(op->type = pd_strdup(type))) {
    pd_free(op);
    return NULL;
  }
  return op;
}

static int slots_copy(pd_slot **dst, int *ndst, const pd_slot *src, int n) {
  for (int i = 0; i < n; i++) {
    if (GROW_BY_ONE(*dst, *ndst) ||
        slot_init(&(*dst)[*ndst], src[i].param, src[i].nargs, (const char *const *)src[i].args))
      return -1;
    (*ndst)++;
  }
  return 0;
}

static pd_op_desc *op_clone(const pd_op_desc *src) {
  pd_op_desc *op = op_new(src->type);
  if (!op) return NULL;
  if (slots_copy(&op->inputs, &op->ninputs, src->inputs, src->ninputs) ||
      slots_copy(&op->outputs, &op->noutputs, src->outputs, src->noutputs) ||
      pd_op_copy_loc(op, src))
    goto fail;
  for (int i = 0; i < src->nattrs; i++) {
    if (GROW_BY_ONE(op->attrs, op->nattrs) || attr_copy(&op->attrs[op->nattrs], &src->attrs[i]))
      goto fail;
    op->nattrs++;
  }
  return op;
fail:
  op_free(op);
  return NULL;
}

/* ---- Program and blocks ---- */

/* Append an empty block (no vars, no ops) to p. */
static pd_block *program_append_block(pd_program *p, int parent_idx) {
  pd_block *b = pd_calloc(1, sizeof *b);
  if (!b) return NULL;
  pd_strmap *ix = pd_malloc(sizeof *ix);
  if (ix) pd_strmap_init(ix, true);
  b->var_index = ix;
  if (!ix || GROW_BY_ONE(p->blocks, p->nblocks)) {
    block_free(b);
    return NULL;
  }
  b->idx = p->nblocks;
  b->parent_idx = parent_idx;
  b->forward_block_idx = -1;
  b->program = p;
  p->blocks[p->nblocks++] = b;
  return b;
}

pd_program *pd_program_new(void) {
  pd_program *p = pd_calloc(1, sizeof *p);
  if (!p) return NULL;
  if (!program_append_block(p, -1)) {
    pd_program_free(p);
    return NULL;
  }
  return p;
}

pd_block *pd_program_add_block(pd_program *p, int parent_idx) {
  return p ? program_append_block(p, parent_idx) : NULL;
}

pd_block *pd_program_block(const pd_program *p, int idx) {
  if (!p || idx < 0 || idx >= p->nblocks) return NULL;
  return p->blocks[idx];
}

pd_block *pd_block_parent(const pd_block *b) {
  if (!b || b->parent_idx == b->idx) return NULL;
  return pd_program_block(b->program, b->parent_idx);
}

/* A name "HINT.K" no block declares any more: the search for HINT's free suffix must start at K
 * again (or lower). */
static void suffix_freed(pd_program *p, const char *name) {
  const char *dot = strrchr(name, '.');
  if (!p->suffix_next || !dot || !dot[1]) return;
  int64_t k = 0;
  for (const char *q = dot + 1; *q; q++) {
    if (*q < '0' || *q > '9' || k > INT64_MAX / 10 - 1) return;
    k = k * 10 + (*q - '0');
  }
  pd_buf hint;
  pd_buf_init(&hint);
  pd_buf_printf(&hint, "%.*s", (int)(dot - name), name);
  pd_strmap_entry *e = hint.oom ? NULL : pd_strmap_find(p->suffix_next, hint.data);
  if (e && e->val.i > k) e->val.i = k;
  if (hint.oom && p->suffix_next) {   /* cannot say which: forget every search */
    pd_strmap_free(p->suffix_next);
    pd_strmap_init(p->suffix_next, true);
  }
  pd_buf_free(&hint);
}

/* The program-wide count of the blocks that declare each name (pd_program_has_var_name): +1
 * when a block gains the name, -1 when it loses it. 0, or -1 on out of memory (nothing
 * changed). */
static int count_name(pd_program *p, const char *name, int delta) {
  if (!p->name_counts) {
    if (delta < 0 || !(p->name_counts = pd_malloc(sizeof(pd_strmap)))) return delta < 0 ? 0 : -1;
    pd_strmap_init(p->name_counts, true);
  }
  int64_t n = 0;
  pd_strmap_get_int(p->name_counts, name, &n);
  if (n + delta <= 0) {
    pd_strmap_remove(p->name_counts, name);
    suffix_freed(p, name);
    return 0;
  }
  return pd_strmap_set_int(p->name_counts, name, n + delta) ? -1 : 0;
}

bool pd_program_has_var_name(const pd_program *p, const char *name) {
  return p && name && p->name_counts && pd_strmap_find(p->name_counts, name);
}

int64_t pd_program_free_suffix(pd_program *p, const char *hint) {
  if (!p || !hint) return -1;
  if (!p->suffix_next) {
    if (!(p->suffix_next = pd_malloc(sizeof(pd_strmap)))) return -1;
    pd_strmap_init(p->suffix_next, true);
  }
  int64_t k = 1;
  pd_strmap_get_int(p->suffix_next, hint, &k);
  pd_buf name;
  pd_buf_init(&name);
  for (;; k++) {   /* every "hint.K" below the remembered K is declared */
    name.len = 0;
    pd_buf_printf(&name, "%s.%lld", hint, (long long)k);
    if (name.oom || !pd_program_has_var_name(p, name.data)) break;
  }
  bool oom = name.oom;
  pd_buf_free(&name);
  if (oom || pd_strmap_set_int(p->suffix_next, hint, k)) return -1;
  return k;
}

/* Add v (a fresh var whose name b does not hold) to b. 0, or -1 (v not taken). */
static int block_append_var(pd_block *b, pd_var_desc *v) {
  pd_strmap *ix = block_index(b);
  if (!v->name || pd_strmap_find(ix, v->name) || GROW_BY_ONE(b->vars, b->nvars) ||
      count_name(b->program, v->name, 1))
    return -1;
  if (pd_strmap_set_ptr(ix, v->name, v)) {
    count_name(b->program, v->name, -1);
    return -1;
  }
  b->vars[b->nvars++] = v;
  return 0;
}

static int block_append_op(pd_block *b, pd_op_desc *op, int pos) {
  if (pos < 0) pos = b->nops;
  if (pos > b->nops || GROW_BY_ONE(b->ops, b->nops)) return -1;
  memmove(&b->ops[pos + 1], &b->ops[pos], (size_t)(b->nops - pos) * sizeof *b->ops);
  b->ops[pos] = op;
  b->nops++;
  return 0;
}

pd_program *pd_program_clone(const pd_program *src) {
  if (!src) return NULL;
  pd_program *p = pd_calloc(1, sizeof *p);
  if (!p) return NULL;
  p->version = src->version;
  for (int i = 0; i < src->nblocks; i++) {
    const pd_block *sb = src->blocks[i];
    pd_block *b = program_append_block(p, sb->parent_idx);
    if (!b) goto fail;
    b->forward_block_idx = sb->forward_block_idx;
    for (int j = 0; j < sb->nvars; j++) {
      pd_var_desc *v = var_clone(sb->vars[j]);
      if (!v || block_append_var(b, v)) {
        var_free(v);
        goto fail;
      }
    }
    for (int j = 0; j < sb->nops; j++) {
      pd_op_desc *op = op_clone(sb->ops[j]);
      if (!op || block_append_op(b, op, -1)) {
        op_free(op);
        goto fail;
      }
    }
  }
  return p;
fail:
  pd_program_free(p);
  return NULL;
}

/* ---- Vars ---- */

pd_var_desc *pd_block_find_var_local(const pd_block *b, const char *name) {
  if (!b || !name || !b->var_index) return NULL;
  return pd_strmap_get_ptr(block_index(b), name);
}

pd_var_desc *pd_block_find_var(const pd_block *b, const char *name) {
  /* At most nblocks steps, so that a parent cycle in a malformed program cannot hang us. */
  int steps = b && b->program ? b->program->nblocks : 1;
  for (; b && steps-- > 0; b = pd_block_parent(b)) {
    pd_var_desc *v = pd_block_find_var_local(b, name);
    if (v) return v;
  }
  return NULL;
}

pd_var_desc *pd_block_find_var_visible(const pd_block *b, const char *name,
                                       const pd_block **owner) {
  int steps = b && b->program ? b->program->nblocks : 1;
  for (const pd_block *c = b; c && steps-- > 0; c = pd_block_parent(c)) {
    const pd_block *found = c;
    pd_var_desc *v = pd_block_find_var_local(c, name);
    if (!v && c->forward_block_idx >= 0 && c->forward_block_idx != c->idx) {
      /* The forward block and its parents. */
      int fsteps = c->program->nblocks;
      for (found = pd_program_block(c->program, c->forward_block_idx); found && fsteps-- > 0;
           found = pd_block_parent(found))
        if ((v = pd_block_find_var_local(found, name))) break;
    }
    if (v) {
      if (owner) *owner = found;
      return v;
    }
  }
  return NULL;
}

pd_var_desc *pd_block_var(pd_block *b, const char *name) {
  if (!b || !name) return NULL;
  pd_var_desc *v = pd_block_find_var_local(b, name);
  if (v) return v;
  if (!(v = pd_calloc(1, sizeof *v)) || !(v->name = pd_strdup(name))) {
    pd_free(v);
    return NULL;
  }
  v->type = PD_VAR_LOD_TENSOR;
  v->dtype = PD_FP32;
  v->ndims = -1;
  if (block_append_var(b, v)) {
    var_free(v);
    return NULL;
  }
  return v;
}

int pd_block_remove_var(pd_block *b, const char *name) {
  pd_var_desc *v = pd_block_find_var_local(b, name);
  if (!v) return -1;
  count_name(b->program, v->name, -1);
  pd_strmap_remove(block_index(b), name);
  for (int i = 0; i < b->nvars; i++) {
    if (b->vars[i] == v) {
      memmove(&b->vars[i], &b->vars[i + 1], (size_t)(b->nvars - i - 1) * sizeof *b->vars);
      b->nvars--;
      break;
    }
  }
  var_free(v);
  return 0;
}

int pd_var_set_shape(pd_var_desc *v, int ndims, const int64_t *dims) {
  if (!v || ndims < -1 || (ndims > 0 && !dims)) return -1;
  int64_t *copy = NULL;
  if (ndims > 0) {
    if (!(copy = pd_malloc((size_t)ndims * sizeof *copy))) return -1;
    memcpy(copy, dims, (size_t)ndims * sizeof *copy);
  }
  pd_free(v->dims);
  v->dims = copy;
  v->ndims = ndims;
  return 0;
}

int pd_block_rename_var(pd_block *b, pd_var_desc *v, const char *new_name) {
  if (!b || !v || !new_name || pd_block_find_var_local(b, v->name) != v) return -1;
  if (strcmp(v->name, new_name) == 0) return 0;
  if (pd_block_find_var_local(b, new_name)) return -1;
  char *name = pd_strdup(new_name);
  pd_strmap *ix = block_index(b);
  if (!name || count_name(b->program, name, 1)) {  /* the new name first: it may fail */
    pd_free(name);
    return -1;
  }
  if (pd_strmap_set_ptr(ix, name, v)) {
    count_name(b->program, name, -1);
    pd_free(name);
    return -1;
  }
  count_name(b->program, v->name, -1);
  pd_strmap_remove(ix, v->name);
  pd_free(v->name);
  v->name = name;
  return 0;
}

/* ---- Ops ---- */

pd_op_desc *pd_block_add_op(pd_block *b, const char *type, int pos) {
  if (!b || !type || pos < -1 || pos > b->nops) return NULL;
  pd_op_desc *op = op_new(type);
  if (!op || block_append_op(b, op, pos)) {
    op_free(op);
    return NULL;
  }
  return op;
}

pd_op_desc *pd_block_copy_op(pd_block *b, int pos, const pd_op_desc *src) {
  if (!b || !src || pos < -1 || pos > b->nops) return NULL;
  pd_op_desc *op = op_clone(src);
  if (!op || block_append_op(b, op, pos)) {
    op_free(op);
    return NULL;
  }
  return op;
}

void pd_block_remove_op(pd_block *b, int i) {
  if (!b || i < 0 || i >= b->nops) return;
  op_free(b->ops[i]);
  memmove(&b->ops[i], &b->ops[i + 1], (size_t)(b->nops - i - 1) * sizeof *b->ops);
  b->nops--;
}

static int slot_find(const pd_slot *slots, int n, const char *param) {
  for (int i = 0; i < n; i++)
    if (slots[i].param && param && strcmp(slots[i].param, param) == 0) return i;
  return -1;
}

/* Bind `param` in a slot list, replacing an existing binding of the same name. */
static int slot_set(pd_slot **slots, int *n, const char *param, int nargs,
                    const char *const *args) {
  pd_slot s;
  if (slot_init(&s, param, nargs, args)) return -1;
  int i = slot_find(*slots, *n, param);
  if (i >= 0) {
    slot_clear(&(*slots)[i]);
  } else {
    if (GROW_BY_ONE(*slots, *n)) {
      slot_clear(&s);
      return -1;
    }
    i = (*n)++;
  }
  (*slots)[i] = s;
  return 0;
}

bool pd_op_remove_input(pd_op_desc *op, const char *param) {
  int i = op ? slot_find(op->inputs, op->ninputs, param) : -1;
  if (i < 0) return false;
  slot_clear(&op->inputs[i]);
  memmove(&op->inputs[i], &op->inputs[i + 1], (size_t)(op->ninputs - i - 1) * sizeof *op->inputs);
  op->ninputs--;
  return true;
}

bool pd_op_remove_attr(pd_op_desc *op, const char *name) {
  for (int i = 0; op && name && i < op->nattrs; i++) {
    if (!op->attrs[i].name || strcmp(op->attrs[i].name, name) != 0) continue;
    attr_clear(&op->attrs[i]);
    memmove(&op->attrs[i], &op->attrs[i + 1], (size_t)(op->nattrs - i - 1) * sizeof *op->attrs);
    op->nattrs--;
    return true;
  }
  return false;
}

int pd_op_set_input(pd_op_desc *op, const char *param, int nargs, const char *const *args) {
  return op ? slot_set(&op->inputs, &op->ninputs, param, nargs, args) : -1;
}

int pd_op_set_output(pd_op_desc *op, const char *param, int nargs, const char *const *args) {
  return op ? slot_set(&op->outputs, &op->noutputs, param, nargs, args) : -1;
}

const pd_slot *pd_op_input(const pd_op_desc *op, const char *param) {
  int i = op ? slot_find(op->inputs, op->ninputs, param) : -1;
  return i < 0 ? NULL : &op->inputs[i];
}

const pd_slot *pd_op_output(const pd_op_desc *op, const char *param) {
  int i = op ? slot_find(op->outputs, op->noutputs, param) : -1;
  return i < 0 ? NULL : &op->outputs[i];
}

static const char *slot_first(const pd_slot *s) { return s && s->nargs > 0 ? s->args[0] : NULL; }

const char *pd_op_input1(const pd_op_desc *op, const char *param) {
  return slot_first(pd_op_input(op, param));
}

const char *pd_op_output1(const pd_op_desc *op, const char *param) {
  return slot_first(pd_op_output(op, param));
}

int pd_op_set_loc(pd_op_desc *op, pd_loc loc) {
  if (!op) return -1;
  char *file = NULL;
  if (loc.file && !(file = pd_strdup(loc.file))) return -1;
  pd_free((char *)op->loc.file);
  op->loc = loc;
  op->loc.file = file;
  return 0;
}

pd_callchain *pd_callchain_new(const pd_call_site *sites, int n) {
  if (n < 1 || !sites) return NULL;
  size_t size = sizeof(pd_callchain) + sizeof *sites * (size_t)n;
  for (int i = 0; i < n; i++)
    size += (sites[i].loc.file ? strlen(sites[i].loc.file) + 1 : 0) +
            (sites[i].fn ? strlen(sites[i].fn) + 1 : 0);
  pd_callchain *ch = pd_malloc(size);
  if (!ch) return NULL;
  atomic_init(&ch->refs, 1);
  ch->n = n;
  char *text = (char *)&ch->sites[n];
  for (int i = 0; i < n; i++) {
    ch->sites[i] = sites[i];
    const char *from[2] = {sites[i].loc.file, sites[i].fn};
    const char **to[2] = {&ch->sites[i].loc.file, &ch->sites[i].fn};
    for (int k = 0; k < 2; k++) {
      if (!from[k]) continue;
      size_t len = strlen(from[k]) + 1;
      *to[k] = memcpy(text, from[k], len);
      text += len;
    }
  }
  return ch;
}

pd_callchain *pd_callchain_ref(pd_callchain *ch) {
  if (ch) atomic_fetch_add(&ch->refs, 1);
  return ch;
}

void pd_callchain_unref(pd_callchain *ch) {
  if (ch && atomic_fetch_sub(&ch->refs, 1) == 1) pd_free(ch);
}

void pd_op_set_calls(pd_op_desc *op, pd_callchain *ch) {
  if (!op) return;
  pd_callchain *old = op->calls;
  op->calls = pd_callchain_ref(ch);
  pd_callchain_unref(old);
}

int pd_op_copy_loc(pd_op_desc *dst, const pd_op_desc *src) {
  if (pd_op_set_loc(dst, src->loc)) return -1;
  pd_op_set_calls(dst, src->calls);
  return 0;
}

pd_loc pd_op_user_loc(const pd_op_desc *op) {
  return op->calls ? op->calls->sites[op->calls->n - 1].loc : op->loc;
}

pd_status pd_op_error_calls(pd_error *err, const pd_op_desc *op, pd_status st) {
  if (!err || !op || !op->calls || err->ncalls || err->loc.line != op->loc.line ||
      err->loc.col != op->loc.col || !err->loc.file || !op->loc.file ||
      strcmp(err->loc.file, op->loc.file) != 0)
    return st;
  pd_error_set_calls(err, op->calls->sites, op->calls->n); /* out of memory: the error alone */
  return st;
}

/* ---- Attributes ---- */

static int attr_find(const pd_op_desc *op, const char *name) {
  for (int i = 0; i < op->nattrs; i++)
    if (op->attrs[i].name && strcmp(op->attrs[i].name, name) == 0) return i;
  return -1;
}

const pd_attr *pd_op_attr(const pd_op_desc *op, const char *name) {
  int i = op && name ? attr_find(op, name) : -1;
  return i < 0 ? NULL : &op->attrs[i];
}

int pd_op_set_attr(pd_op_desc *op, const pd_attr *a) {
  if (!op || !a || !a->name || !pd_attr_type_valid((int)a->type)) return -1;
  pd_attr copy;
  if (attr_copy(&copy, a)) return -1;
  int i = attr_find(op, a->name);
  if (i >= 0) {
    attr_clear(&op->attrs[i]); /* replaced in place: the attribute keeps its position */
  } else {
    if (GROW_BY_ONE(op->attrs, op->nattrs)) {
      attr_clear(&copy);
      return -1;
    }
    i = op->nattrs++;
  }
  op->attrs[i] = copy;
  return 0;
}

/* The typed setters build an attribute that borrows the caller's value, and pd_op_set_attr
 * copies it. (The casts drop const only for that borrowed, read-only view.) */
#define SCALAR_SETTER(fn, TYPE, ctype, member)                    \
  int fn(pd_op_desc *op, const char *name, ctype v) {             \
    pd_attr a = {.name = (char *)name, .type = TYPE};             \
    a.v.member = v;                                               \
    return pd_op_set_attr(op, &a);                                \
  }
SCALAR_SETTER(pd_op_set_attr_int, PD_ATTR_INT, int32_t, i)
SCALAR_SETTER(pd_op_set_attr_long, PD_ATTR_LONG, int64_t, l)
SCALAR_SETTER(pd_op_set_attr_float, PD_ATTR_FLOAT, float, f)
SCALAR_SETTER(pd_op_set_attr_double, PD_ATTR_FLOAT64, double, d)
SCALAR_SETTER(pd_op_set_attr_bool, PD_ATTR_BOOLEAN, bool, b)
SCALAR_SETTER(pd_op_set_attr_block, PD_ATTR_BLOCK, int, i)

int pd_op_set_attr_string(pd_op_desc *op, const char *name, const char *v) {
  if (!v) return -1;
  pd_attr a = {.name = (char *)name, .type = PD_ATTR_STRING, .v.s = (char *)v};
  return pd_op_set_attr(op, &a);
}

int pd_op_set_attr_list(pd_op_desc *op, const char *name, pd_attr_type type, int n,
                        const void *data) {
  if (!pd_attr_type_is_list(type)) return -1;
  pd_attr a = {.name = (char *)name, .type = type, .n = n};
  list_set_data(&a, (void *)data);
  return pd_op_set_attr(op, &a);
}

#define LIST_SETTER(fn, TYPE, ctype)                                 \
  int fn(pd_op_desc *op, const char *name, int n, const ctype *v) { \
    return pd_op_set_attr_list(op, name, TYPE, n, v);                \
  }
LIST_SETTER(pd_op_set_attr_ints, PD_ATTR_INTS, int32_t)
LIST_SETTER(pd_op_set_attr_blocks, PD_ATTR_BLOCKS, int32_t)
LIST_SETTER(pd_op_set_attr_longs, PD_ATTR_LONGS, int64_t)
LIST_SETTER(pd_op_set_attr_floats, PD_ATTR_FLOATS, float)
LIST_SETTER(pd_op_set_attr_doubles, PD_ATTR_FLOAT64S, double)
LIST_SETTER(pd_op_set_attr_bools, PD_ATTR_BOOLEANS, bool)
LIST_SETTER(pd_op_set_attr_strings, PD_ATTR_STRINGS, char *const)

/* ---- Validation ---- */

/* Room for one name (or a "block B, op I (TYPE)" context) in a message. */
enum { NAME_ROOM = 72, CTX_ROOM = 128 };

static pd_status bad(pd_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static pd_status bad(pd_error *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pd_error_setv(err, PD_EFORMAT, (pd_loc){0}, fmt, ap);
  va_end(ap);
  return PD_EFORMAT;
}

static const char *plural(int n) { return n == 1 ? "" : "s"; }

/* Parents in range and forward_block_idx sensible, for one block. */
static pd_status check_block_links(const pd_program *p, const pd_block *b, pd_error *err) {
  int n = p->nblocks;
  if (b->idx == 0 && b->parent_idx != -1)
    return bad(err, "block 0 (the global block) has parent %d; it must have none (-1)",
               b->parent_idx);
  if (b->idx != 0 && (b->parent_idx < 0 || b->parent_idx >= n))
    return bad(err, "block %d has parent %d, but the program has %d block%s", b->idx,
               b->parent_idx, n, plural(n));
  int fwd = b->forward_block_idx;
  if (fwd != -1 && (fwd < 0 || fwd >= n))
    return bad(err, "block %d has forward block %d, but the program has %d block%s", b->idx, fwd,
               n, plural(n));
  if (fwd == b->idx) return bad(err, "block %d names itself as its forward block", b->idx);
  return PD_OK;
}

/* Every chain of parents reaches block 0 (parents already checked to be in range), in at most
 * PD_MAX_BLOCK_DEPTH steps. */
static pd_status check_block_chain(const pd_program *p, const pd_block *b, pd_error *err) {
  int cur = b->idx;
  for (int steps = 0; steps <= p->nblocks; steps++) {
    if (cur == 0)
      return steps <= PD_MAX_BLOCK_DEPTH
                 ? PD_OK
                 : bad(err, "block %d is nested %d deep; programs may nest blocks at most %d deep",
                       b->idx, steps, PD_MAX_BLOCK_DEPTH);
    cur = p->blocks[cur]->parent_idx;
  }
  /* A cycle: show its first links. */
  char chain[CTX_ROOM];
  int len = 0;
  cur = b->idx;
  for (int k = 0; k < 8 && len < (int)sizeof chain - 16; k++) {
    len += snprintf(chain + len, sizeof chain - (size_t)len, "%d -> ", cur);
    cur = p->blocks[cur]->parent_idx;
  }
  snprintf(chain + len, sizeof chain - (size_t)len, "...");
  return bad(err, "block %d never reaches block 0 through its parents: they form a cycle (%s)",
             b->idx, chain);
}

static pd_status check_var(const pd_block *b, int j, pd_error *err) {
  const pd_var_desc *v = b->vars[j];
  char name[NAME_ROOM];
  if (!v) return bad(err, "block %d: var %d is missing", b->idx, j);
  if (!v->name || !v->name[0]) return bad(err, "block %d: var %d has no name", b->idx, j);
  pd_program_excerpt(v->name, name, sizeof name);
  const pd_var_desc *indexed = pd_block_find_var_local(b, v->name);
  if (indexed != v)
    return indexed ? bad(err, "block %d declares var '%s' twice", b->idx, name)
                   : bad(err, "block %d, var '%s': not in the block's name index", b->idx, name);
  if (!pd_var_type_valid((int)v->type))
    return bad(err, "block %d, var '%s': unknown var type %d", b->idx, name, (int)v->type);
  if (!pd_var_type_has_tensor(v->type)) return PD_OK;
  if (!pd_dtype_valid((int)v->dtype))
    return bad(err, "block %d, var '%s': unknown dtype %d", b->idx, name, (int)v->dtype);
  if (v->lod_level < 0)
    return bad(err, "block %d, var '%s': lod_level %d is negative", b->idx, name, v->lod_level);
  if (v->ndims < -1 || v->ndims > PD_MAX_RANK)
    return bad(err, "block %d, var '%s': %d dimensions; the most allowed is %d", b->idx, name,
               v->ndims, PD_MAX_RANK);
  if (v->ndims > 0 && !v->dims)
    return bad(err, "block %d, var '%s': %d dimensions but no sizes", b->idx, name, v->ndims);
  int64_t numel = 1;
  for (int k = 0; k < v->ndims; k++) {
    int64_t d = v->dims[k];
    if (d < -1)
      return bad(err,
                 "block %d, var '%s': dimension %d is %lld; only -1 (unknown) or a size >= 0 is "
                 "allowed",
                 b->idx, name, k, (long long)d);
    if (d > 0 && numel > INT64_MAX / d)
      return bad(err, "block %d, var '%s': the shape has more elements than an int64 can count",
                 b->idx, name);
    if (d > 0) numel *= d;
  }
  return PD_OK;
}

/* A BLOCK (or BLOCKS element) attribute of an op in b must name a block the op can own. */
static pd_status check_sub_block(const pd_program *p, const pd_block *b, const char *ctx,
                                 const char *attr, int target, pd_error *err) {
  if (target < 0 || target >= p->nblocks)
    return bad(err, "%s: attribute '%s' points at block %d, but the program has %d block%s", ctx,
               attr, target, p->nblocks, plural(p->nblocks));
  if (target == 0)
    return bad(err, "%s: attribute '%s' points at block 0, the global block", ctx, attr);
  for (const pd_block *c = b; c; c = pd_block_parent(c))
    if (c->idx == target)
      return bad(err, "%s: attribute '%s' points at block %d, which contains the op itself", ctx,
                 attr, target);
  return PD_OK;
}

static pd_status check_attr(const pd_program *p, const pd_block *b, const pd_op_desc *op,
                            int k, const char *ctx, pd_error *err) {
  const pd_attr *a = &op->attrs[k];
  char name[NAME_ROOM];
  if (!a->name || !a->name[0]) return bad(err, "%s: attribute %d has no name", ctx, k);
  pd_program_excerpt(a->name, name, sizeof name);
  if (attr_find(op, a->name) != k) return bad(err, "%s: attribute '%s' is set twice", ctx, name);
  if (!pd_attr_type_valid((int)a->type))
    return bad(err, "%s: attribute '%s' has unknown type %d", ctx, name, (int)a->type);
  if (a->type == PD_ATTR_STRING && !a->v.s)
    return bad(err, "%s: attribute '%s' (STRING) has no value", ctx, name);
  if (a->type == PD_ATTR_BLOCK) return check_sub_block(p, b, ctx, name, a->v.i, err);
  if (!pd_attr_type_is_list(a->type)) return PD_OK;
  if (a->n < 0 || (a->n > 0 && !list_data(a)))
    return bad(err, "%s: attribute '%s' (%s) has %d elements but no array", ctx, name,
               pd_attr_type_name(a->type), a->n);
  for (int e = 0; e < a->n; e++) {
    if (a->type == PD_ATTR_STRINGS && !a->strings[e])
      return bad(err, "%s: attribute '%s' element %d is missing", ctx, name, e);
    if (a->type == PD_ATTR_BLOCKS) {
      pd_status st = check_sub_block(p, b, ctx, name, a->ints[e], err);
      if (st) return st;
    }
  }
  return PD_OK;
}

static pd_status check_slots(const pd_block *b, const pd_slot *slots, int n, const char *dir,
                             const char *ctx, pd_error *err) {
  if (n > 0 && !slots) return bad(err, "%s: %d %ss but no array", ctx, n, dir);
  for (int k = 0; k < n; k++) {
    const pd_slot *s = &slots[k];
    char param[NAME_ROOM], arg[NAME_ROOM];
    if (!s->param || !s->param[0]) return bad(err, "%s: %s %d has no parameter name", ctx, dir, k);
    pd_program_excerpt(s->param, param, sizeof param);
    if (slot_find(slots, n, s->param) != k)
      return bad(err, "%s: %s '%s' is bound twice", ctx, dir, param);
    if (s->nargs < 0 || (s->nargs > 0 && !s->args))
      return bad(err, "%s: %s '%s' has %d arguments but no array", ctx, dir, param, s->nargs);
    for (int a = 0; a < s->nargs; a++) {
      const char *vn = s->args[a];
      if (!vn || !vn[0])
        return bad(err, "%s: %s '%s' argument %d has no name", ctx, dir, param, a);
      if (strcmp(vn, PD_EMPTY_VAR_NAME) != 0 && !pd_block_find_var_visible(b, vn, NULL))
        return bad(err, "%s: %s '%s' names var '%s', which block %d cannot see", ctx, dir, param,
                   pd_program_excerpt(vn, arg, sizeof arg), b->idx);
    }
  }
  return PD_OK;
}

static pd_status check_op(const pd_program *p, const pd_block *b, int j, pd_error *err) {
  const pd_op_desc *op = b->ops[j];
  char ctx[CTX_ROOM], type[NAME_ROOM];
  if (!op) return bad(err, "block %d: op %d is missing", b->idx, j);
  if (!op->type || !op->type[0]) return bad(err, "block %d: op %d has no type", b->idx, j);
  snprintf(ctx, sizeof ctx, "block %d, op %d (%s)", b->idx, j,
           pd_program_excerpt(op->type, type, sizeof type));
  pd_status st;
  if ((st = check_slots(b, op->inputs, op->ninputs, "input", ctx, err)) ||
      (st = check_slots(b, op->outputs, op->noutputs, "output", ctx, err)))
    return st;
  if (op->nattrs < 0 || (op->nattrs > 0 && !op->attrs))
    return bad(err, "%s: %d attributes but no array", ctx, op->nattrs);
  for (int k = 0; k < op->nattrs; k++)
    if ((st = check_attr(p, b, op, k, ctx, err))) return st;
  if (op->loc.line < 0 || op->loc.col < 0)
    return bad(err, "%s: bad source position %d:%d", ctx, op->loc.line, op->loc.col);
  for (int k = 0; op->calls && k < op->calls->n; k++) {
    pd_loc at = op->calls->sites[k].loc;
    if (at.line < 1 || at.col < 0 || !op->calls->sites[k].fn)
      return bad(err, "%s: bad call site %d:%d", ctx, at.line, at.col);
  }
  return PD_OK;
}

pd_status pd_program_validate(const pd_program *p, pd_error *err) {
  if (!p || p->nblocks < 1 || !p->blocks) return bad(err, "the program has no blocks");
  for (int i = 0; i < p->nblocks; i++) {
    const pd_block *b = p->blocks[i];
    if (!b) return bad(err, "block %d is missing", i);
    if (b->idx != i) return bad(err, "the block at position %d has idx %d", i, b->idx);
    if (b->program != p) return bad(err, "block %d belongs to another program", i);
    if (b->nvars < 0 || b->nops < 0 || (b->nvars > 0 && !b->vars) || (b->nops > 0 && !b->ops))
      return bad(err, "block %d: var or op counts do not match its arrays", i);
  }
  pd_status st;
  for (int i = 0; i < p->nblocks; i++)
    if ((st = check_block_links(p, p->blocks[i], err))) return st;
  for (int i = 0; i < p->nblocks; i++)
    if ((st = check_block_chain(p, p->blocks[i], err))) return st;
  for (int i = 0; i < p->nblocks; i++) {
    const pd_block *b = p->blocks[i];
    for (int j = 0; j < b->nvars; j++)
      if ((st = check_var(b, j, err))) return st;
  }
  /* Ops last: their arguments are looked up in vars that are known to be sound by now. */
  for (int i = 0; i < p->nblocks; i++) {
    const pd_block *b = p->blocks[i];
    for (int j = 0; j < b->nops; j++)
      if ((st = check_op(p, b, j, err))) return st;
  }
  return PD_OK;
}
