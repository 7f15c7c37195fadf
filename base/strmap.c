/* strmap.c -- the string-keyed hash map of base/strmap.h: FNV-1a hashes, linear probing,
 * backward-shift deletion. */
#include "config.h"
#include "base/strmap.h"

#define MIN_CAP 8

void pd_strmap_init(pd_strmap *m, bool copy_keys) {
  *m = (pd_strmap){.copy_keys = copy_keys};
}

void pd_strmap_free(pd_strmap *m) {
  if (m->copy_keys)
    for (size_t i = 0; i < m->cap; i++) pd_free((char *)m->slots[i].key);
  pd_free(m->slots);
  pd_strmap_init(m, m->copy_keys);
}

/* The slot holding key, or the empty slot where it would go. cap > 0. */
static size_t probe(const pd_strmap *m, const char *key, uint64_t h) {
  size_t mask = m->cap - 1, i = (size_t)h & mask;
  while (m->slots[i].key && (m->slots[i].hash != h || strcmp(m->slots[i].key, key) != 0))
    i = (i + 1) & mask;
  return i;
}

pd_status pd_strmap_reserve(pd_strmap *m, size_t n) {
  if (n <= m->cap / 2) return PD_OK;
  size_t ncap = m->cap ? m->cap : MIN_CAP;
  while (n > ncap / 2) {
    if (ncap > SIZE_MAX / 2 / sizeof *m->slots) return PD_ENOMEM;
    ncap *= 2;
  }
  pd_strmap_entry *slots = pd_calloc(ncap, sizeof *slots);
  if (!slots) return PD_ENOMEM;
  size_t mask = ncap - 1;
  for (size_t i = 0; i < m->cap; i++) {
    const pd_strmap_entry *e = &m->slots[i];
    if (!e->key) continue;
    size_t j = (size_t)e->hash & mask;
    while (slots[j].key) j = (j + 1) & mask;
    slots[j] = *e;
  }
  pd_free(m->slots);
  m->slots = slots;
  m->cap = ncap;
  return PD_OK;
}

pd_strmap_entry *pd_strmap_add(pd_strmap *m, const char *key, bool *added) {
  uint64_t h = pd_str_hash(key);
  pd_strmap_entry *e = pd_strmap_find_hashed(m, key, h);
  if (added) *added = !e;
  if (e) return e;
  if (pd_strmap_reserve(m, m->count + 1)) return NULL;
  const char *k = key;
  if (m->copy_keys && !(k = pd_strdup(key))) return NULL;
  e = &m->slots[probe(m, key, h)];
  *e = (pd_strmap_entry){.key = k, .hash = h};
  m->count++;
  return e;
}

bool pd_strmap_remove(pd_strmap *m, const char *key) {
  if (!m->count) return false;
  size_t mask = m->cap - 1, i = probe(m, key, pd_str_hash(key));
  if (!m->slots[i].key) return false;
  if (m->copy_keys) pd_free((char *)m->slots[i].key);
  m->slots[i].key = NULL;
  m->count--;
  /* Move back every later entry of the run whose home slot is not cyclically in (i, j]. */
  for (size_t j = (i + 1) & mask; m->slots[j].key; j = (j + 1) & mask) {
    size_t home = (size_t)m->slots[j].hash & mask;
    if (((j - home) & mask) >= ((j - i) & mask)) {
      m->slots[i] = m->slots[j];
      m->slots[j].key = NULL;
      i = j;
    }
  }
  return true;
}

void *pd_strmap_get_ptr(const pd_strmap *m, const char *key) {
  const pd_strmap_entry *e = pd_strmap_find(m, key);
  return e ? e->val.p : NULL;
}

bool pd_strmap_get_int(const pd_strmap *m, const char *key, int64_t *out) {
  const pd_strmap_entry *e = pd_strmap_find(m, key);
  if (e && out) *out = e->val.i;
  return e != NULL;
}

pd_status pd_strmap_set_ptr(pd_strmap *m, const char *key, void *p) {
  pd_strmap_entry *e = pd_strmap_add(m, key, NULL);
  if (!e) return PD_ENOMEM;
  e->val.p = p;
  return PD_OK;
}

pd_status pd_strmap_set_int(pd_strmap *m, const char *key, int64_t v) {
  pd_strmap_entry *e = pd_strmap_add(m, key, NULL);
  if (!e) return PD_ENOMEM;
  e->val.i = v;
  return PD_OK;
}

pd_strmap_entry *pd_strmap_next(const pd_strmap *m, size_t *i) {
  for (; *i < m->cap; (*i)++)
    if (m->slots[*i].key) return &m->slots[(*i)++];
  return NULL;
}
