/* strmap.h -- the one string-keyed hash map of pdlang: string -> pointer or int64. Open
 * addressing with linear probing over a power-of-two table kept at most half full; each entry
 * keeps its key's FNV-1a 64-bit hash (compared before the string, and used when the table
 * grows); deleting shifts the rest of the probe run back, so there are no tombstones.
 *
 * Ownership:
 *  - The map owns its table (pd_strmap_free releases it).
 *  - Keys are borrowed unless the map was made with copy_keys: then every key it adds is
 *    copied (pd_strdup) and the copy freed when the entry is removed or the map freed. A
 *    borrowed key must stay alive and unchanged while it is in the map (the owner of the
 *    string removes it first, or frees the map first).
 *  - Values are not owned: a pointer value is the caller's to free.
 *  - An entry pointer (pd_strmap_find, pd_strmap_add) stays valid until the next add or
 *    remove: growing the table or removing an entry moves entries.
 *  - Every allocation goes through pd_malloc/pd_calloc; a failure returns NULL or PD_ENOMEM
 *    and leaves the map as it was.
 *  - Not thread-safe: concurrent readers are fine, a writer needs the map to itself. */
#ifndef PD_STRMAP_H
#define PD_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/base.h"

typedef union pd_strmap_val {
  void *p;
  int64_t i;
} pd_strmap_val;

typedef struct pd_strmap_entry {
  const char *key;     /* NULL: an empty slot */
  uint64_t hash;       /* pd_str_hash(key) */
  pd_strmap_val val;
} pd_strmap_entry;

typedef struct pd_strmap {
  pd_strmap_entry *slots;  /* cap entries; NULL while cap is 0 */
  size_t cap;              /* 0, or a power of two (8 at least) */
  size_t count;            /* entries in use; count * 2 <= cap */
  bool copy_keys;
} pd_strmap;

/* The FNV-1a hash of base.h over a string's bytes. Inline, with the lookups below: the executor
 * looks names up in its scopes' maps on every block run. */
static inline uint64_t pd_str_hash(const char *s) {
  uint64_t h = PD_FNV_BASIS;
  for (; *s; s++) h = pd_fnv_step(h, (unsigned char)*s);
  return h;
}

/* An empty map (no allocation). A zeroed pd_strmap is the same as pd_strmap_init(m, false). */
void pd_strmap_init(pd_strmap *m, bool copy_keys);
/* Free the table (and the key copies); the map is left empty and usable, its copy_keys kept. */
void pd_strmap_free(pd_strmap *m);
/* Make room for n entries in all, so that adding up to n allocates nothing. PD_ENOMEM. */
pd_status pd_strmap_reserve(pd_strmap *m, size_t n);

/* The entry of key whose hash is h (= pd_str_hash(key)), or NULL. For lookups that reuse one
 * hash (a name looked up in a chain of maps). */
static inline pd_strmap_entry *pd_strmap_find_hashed(const pd_strmap *m, const char *key,
                                                     uint64_t h) {
  if (!m->count) return NULL;
  size_t mask = m->cap - 1, i = (size_t)h & mask;
  for (pd_strmap_entry *e = &m->slots[i]; e->key; e = &m->slots[i = (i + 1) & mask])
    if (e->hash == h && strcmp(e->key, key) == 0) return e;
  return NULL;
}
/* The entry of key, or NULL. */
static inline pd_strmap_entry *pd_strmap_find(const pd_strmap *m, const char *key) {
  return pd_strmap_find_hashed(m, key, pd_str_hash(key));
}
/* The entry of key, added with a zero value when absent (*added, when not NULL, says whether
 * it was). NULL on out of memory (the map is unchanged). */
pd_strmap_entry *pd_strmap_add(pd_strmap *m, const char *key, bool *added);
/* Remove key's entry; false when there is none. */
bool pd_strmap_remove(pd_strmap *m, const char *key);

/* Shorthands. get: the value, or NULL / false when key is absent. set: add or overwrite;
 * PD_ENOMEM. */
void *pd_strmap_get_ptr(const pd_strmap *m, const char *key);
bool pd_strmap_get_int(const pd_strmap *m, const char *key, int64_t *out);
pd_status pd_strmap_set_ptr(pd_strmap *m, const char *key, void *p);
pd_status pd_strmap_set_int(pd_strmap *m, const char *key, int64_t v);

/* Iteration in table order (not insertion order; no adds or removes meanwhile):
 *   for (size_t i = 0; (e = pd_strmap_next(m, &i));) ...   */
pd_strmap_entry *pd_strmap_next(const pd_strmap *m, size_t *i);

#endif /* PD_STRMAP_H */
