/* pir.h -- a reader of PaddlePaddle 3's default model format: a PIR program serialized as JSON
 * (NAME.json beside NAME.pdiparams), lowered to a pd_program of Fluid op names, slots and
 * attributes so that the same kernels run it. Handles the layout Paddle 3.3 writes
 * (base_code.version 4; versions 1-4 are taken). The parameters are the builtin.parameter ops,
 * made persistable vars of block 0 (their .pdiparams order is their sorted names, as for a
 * ProgramDesc). What the reader does not know (an op, an attribute kind, a type) is listed as
 * pd_compat_apply lists its problems: every one at once, each naming the op. The Fluid ops it
 * makes are checked against their defs as a loaded ProgramDesc's are: by pd_compat_apply
 * (vm/ops/compat.h, a later stage), which pd_model_load applies to both. */
#ifndef PD_VM_IR_PIR_H
#define PD_VM_IR_PIR_H

#include <stdbool.h>
#include <stddef.h>

#include "base/base.h"
#include "vm/ir/program.h"

/* Whether data (len bytes) starts as a PIR JSON does: '{' and "magic":"pir" in its head. */
bool pd_pir_is_json(const char *data, size_t len);
/* Lower the PIR JSON text data (len bytes) to *out (a new program: pd_program_free). what names
 * the file in errors. PD_EFORMAT on damaged JSON (naming the byte offset) or a malformed
 * program (naming the op), PD_EINVAL on ops, attribute kinds or types pdlang does not know. */
pd_status pd_pir_from_json(const char *data, size_t len, const char *what, pd_program **out,
                           pd_error *err);
/* pd_pir_from_json on the file at path. */
pd_status pd_pir_load(const char *path, pd_program **out, pd_error *err);

/* The writer (pir_write.c): p, an inference program with its feed and fetch ops (as `save`
 * makes it), as a PIR program Paddle 3.3 loads in its default mode, appended to out (JSON, one
 * line). params are the names of its parameters in the order of the .pdiparams beside it
 * (sorted, as Paddle reads them); each becomes a builtin.parameter. feed ops become pd_op.data
 * (named as their var), fetch ops pd_op.fetch (named as theirs), conditional_block with a
 * scalar condition pd_op.if, while pd_op.while. An op the writer has no PIR form for is a
 * problem: PD_EUNSUPPORTED lists them all, each with its source location. PD_ENOMEM. */
pd_status pd_pir_to_json(const pd_program *p, int nparams, const char *const *params,
                         const char *what, pd_buf *out, pd_error *err);
/* Whether the writer has a PIR form for the Fluid op type. */
bool pd_pir_writes_op(const char *type);

#endif /* PD_VM_IR_PIR_H */
