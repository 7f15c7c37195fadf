/* models.h -- programs built by hand for the tests of vm/ir/program.c and vm/ir/serialize.c, their
 * malformed variants, and a program written the way PaddlePaddle writes one. Shared by the unit
 * tests, tests/vm/ir/mkmodel (fixtures, fuzz corpus) and the corpus replay. */
#ifndef PD_TESTS_MODELS_H
#define PD_TESTS_MODELS_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "vm/ir/program.h"

/* Each returns a new program (pd_program_free it), or NULL when an allocation failed (nothing
 * is leaked then, so they serve the allocation-failure tests too). */
pd_program *model_nested(void); /* if/else sub-blocks, a while inside the if, a gradient block */
pd_program *model_attrs(void);  /* one op with every attribute type, BLOCKS, odd values */
pd_program *model_kinds(void);  /* every var kind and dtype, LoD, unknown and 0-d shapes */

/* The programs above by name ("nested", "attrs", "kinds"); NULL for another name. */
pd_program *model_by_name(const char *name);
extern const char *const model_names[];
extern const size_t model_count;

/* A ProgramDesc encoded with the protobuf-c API as PaddlePaddle writes one (Python call stacks,
 * need_check_feed, var attrs, op_version_map, is_target). 0, or -1 on out of memory. */
int foreign_bytes(uint8_t **out, size_t *len);

/* Malformed variants of model_nested's bytes (or raw bytes), each with what loading must
 * report. */
struct Paddle__Framework__Proto__ProgramDesc;
typedef struct bad_case {
  const char *name;  /* short name; the corpus file is bad_NAME.pdmodel */
  void (*mutate)(struct Paddle__Framework__Proto__ProgramDesc *pd); /* NULL: `raw` is the input */
  const char *raw;   /* with raw_len: the bytes themselves, when mutate is NULL */
  size_t raw_len;
  pd_status status;  /* PD_EFORMAT or PD_EUNSUPPORTED */
  const char *msg;   /* the exact message */
} bad_case;
extern const bad_case bad_cases[];
extern const size_t bad_case_count;
/* The bytes of bad case i (malloc'ed: free() them). 0, or -1 on failure. */
int bad_case_bytes(size_t i, uint8_t **out, size_t *len);

#endif /* PD_TESTS_MODELS_H */
