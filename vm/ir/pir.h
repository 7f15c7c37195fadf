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

#endif /* PD_VM_IR_PIR_H */
