/* pb_alloc.h -- the allocator vm/ir's protobuf-c decoders (serialize.c, params.c) hand to
 * protobuf-c: it allocates through pd_malloc, so tests can make it fail, and remembers a
 * failure, since an unpack returns NULL both for bad bytes and for out of memory. Internal to
 * vm/ir; static inline, so it makes no symbol. */
#ifndef PD_IR_PB_ALLOC_H
#define PD_IR_PB_ALLOC_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>

#include "base/base.h"

static inline void *pd_pb_alloc_(void *oom, size_t size) {
  void *p = pd_malloc(size);
  if (!p) *(bool *)oom = true;
  return p;
}

static inline void pd_pb_free_(void *oom, void *p) {
  PD_UNUSED(oom);
  pd_free(p);
}

/* The allocator; *oom (false to start with) becomes true when an allocation fails. */
static inline ProtobufCAllocator pd_pb_allocator(bool *oom) {
  return (ProtobufCAllocator){pd_pb_alloc_, pd_pb_free_, oom};
}

#endif /* PD_IR_PB_ALLOC_H */
