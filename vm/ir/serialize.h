/* serialize.h -- programs to and from bytes of PaddlePaddle Fluid's ProgramDesc (the messages of
 * vm/ir/framework.proto): the .pdmodel format that `save` writes and `pdlang dump` reads.
 *
 * Mapping (IR field -> framework.proto):
 *   pd_program.version        ProgramDesc.version.version
 *   pd_block idx, parent_idx, forward_block_idx   BlockDesc fields of the same names
 *   pd_var_desc               VarDesc: name, persistable, stop_gradient; VarType.type = its kind;
 *     LOD_TENSOR              VarType.lod_tensor { tensor { data_type, dims }, lod_level }
 *     LOD_TENSOR_ARRAY        VarType.tensor_array { tensor, lod_level }
 *     SELECTED_ROWS           VarType.selected_rows { data_type, dims }
 *     other kinds             no description (their dtype and shape are not stored)
 *     ndims -1 (unknown)      no dims, and the var attribute "pdlang.shape_unknown" = INT 1
 *                             (without it, no dims means a 0-d tensor, as in Paddle)
 *   pd_op_desc                OpDesc: type, inputs/outputs (parameter + arguments), attrs
 *   pd_attr                   OpDesc.Attr: name, type and the value field of that type
 *   pd_op_desc.loc, .calls    the STRINGS attribute "op_callstack" = {"FILE:LINE:COL"} and,
 *                             for an op written inside `def` calls, one "FILE:LINE:COL: NAME()"
 *                             per call, innermost first; when an op has a location, it replaces
 *                             an "op_callstack" attribute of the op. Reading, an op_callstack of
 *                             that form becomes the location and the calls (equal chains of
 *                             consecutive ops shared); any other (Paddle's Python stacks) stays
 *                             an attribute.
 * Left out on reading: OpDesc.is_target, VarDesc need_check_feed / is_parameter / attrs,
 * ProgramDesc.op_version_map. Reading refuses (PD_EUNSUPPORTED) what the IR cannot hold: var
 * kinds such as READER, element types such as COMPLEX64, attributes of type VAR, VARS, SCALAR(S).
 *
 * Untrusted input: pd_program_from_bytes never crashes and never leaks, whatever the bytes. A
 * decoded program is converted and then checked with pd_program_validate; anything wrong gives
 * PD_EFORMAT and a message such as "malformed ProgramDesc: block 3 has parent 7, but the program
 * has 4 blocks". The protobuf-c structures stay inside serialize.c.
 *
 * Ownership: *out (bytes or program) belongs to the caller: pd_free the bytes, pd_program_free
 * the program. On failure *out is NULL (and *len 0). */
#ifndef PD_SERIALIZE_H
#define PD_SERIALIZE_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "vm/ir/program.h"

/* Encode a program. It is validated first: an invalid program gives PD_EINVAL, with
 * pd_program_validate's message. */
pd_status pd_program_to_bytes(const pd_program *p, uint8_t **out, size_t *len, pd_error *err);
/* Decode and validate a program. PD_EFORMAT for malformed bytes, PD_EUNSUPPORTED for a valid
 * Fluid program that uses what pdlang does not support, PD_ENOMEM. */
pd_status pd_program_from_bytes(const uint8_t *data, size_t len, pd_program **out,
                                pd_error *err);

/* The same through a file. Saving is atomic (pd_write_file_atomic). A decoding error names the
 * file in err->loc.file ("model.pdmodel: error: malformed ProgramDesc: ..." when rendered). */
pd_status pd_program_save(const pd_program *p, const char *path, pd_error *err);
pd_status pd_program_load(const char *path, pd_program **out, pd_error *err);

#endif /* PD_SERIALIZE_H */
