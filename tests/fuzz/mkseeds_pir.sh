#!/bin/sh
# mkseeds_pir.sh -- regenerates the seeds of tests/fuzz/corpus_pir (fuzz_pir.c): the small PIR
# models PaddlePaddle 3.3 saved under tests/interop/pir/ (valid_NAME.json), and damaged variants
# of the mlp, cond and while_loop ones, each changing one thing the reader checks (bad_*.json),
# plus a few hand-written texts at the JSON parser's edges. Files whose names start with crash_
# (inputs the fuzzer found: crash_dim_below_minus1.json, a dimension of -2, made a program that
# did not validate; crash_fold_past_int32.json, a shape constant past int32 converted) are left
# alone.
#   tests/fuzz/mkseeds_pir.sh [SRCDIR]
set -eu
srcdir=${1:-$(dirname "$0")/../..}
srcdir=$(cd "$srcdir" && pwd)
pir=$srcdir/tests/interop/pir
out=$srcdir/tests/fuzz/corpus_pir
mkdir -p "$out"
find "$out" -name 'valid_*' -exec rm -f {} +
find "$out" -name 'bad_*' -exec rm -f {} +
find "$out" -name 'edge_*' -exec rm -f {} +

for m in mlp misc cond cond_false while_loop jit_cnn lenet lstm gru_bidi cnn_bn; do
  cp "$pir/$m/model.json" "$out/valid_$m.json"
done

# bad NAME MODEL SED-EXPRESSION: the model with one change (the change must apply).
bad() {
  sed "$3" "$pir/$2/model.json" > "$out/bad_$1.json"
  if cmp -s "$pir/$2/model.json" "$out/bad_$1.json"; then
    echo "mkseeds_pir.sh: $1: the edit changed nothing" >&2
    exit 1
  fi
}
bad magic mlp 's/"magic":"pir"/"magic":"pit"/'
bad version mlp 's/"version":4/"version":9/'
bad ops_not_list mlp 's/"ops":\[/"ops":7,"x":[/'
bad dialect mlp 's/"1\.relu"/"7.relu"/'
bad unknown_op mlp 's/"1\.relu"/"1.frobnicate"/'
bad unknown_attr mlp 's/"transpose_x"/"transpose_q"/'
bad elem_type mlp 's/{"#":"0\.t_f32"},\[4,8\]/{"#":"0.t_c64"},[4,8]/'
bad undefined_use mlp 's/"I":\[{"%":7}\]/"I":[{"%":77}]/'
bad inputs_not_list mlp 's/"I":\[{"%":7}\]/"I":{"%":7}/'
bad id_string mlp 's/"%":8,/"%":"8",/'
bad defined_twice mlp 's/"%":8,/"%":7,/'
bad huge_id mlp 's/"%":8,/"%":99999999999,/'
bad negative_id mlp 's/"%":8,/"%":-3,/'
bad rank mlp 's/\[-1,4\],"NCHW"/[-1,4,1,1,1,1,1,1,1,1],"NCHW"/'
bad dim_below_minus1 mlp 's/\[-1,4\],"NCHW"/[-2,4],"NCHW"/'
bad dims_float mlp 's/\[4,8\],"NCHW"/[4.5,8],"NCHW"/'
bad param_name mlp 's/"fc_0\.w_0"/7/'
bad param_dup mlp 's/"fc_0\.w_0"/"fc_0.b_0"/'
bad attr_kind mlp 's/"0\.a_bool","D":false},"N":"transpose_x"/"0.a_zzz","D":false},"N":"transpose_x"/'
bad attr_data mlp 's/"0\.a_bool","D":false},"N":"transpose_x"/"0.a_bool","D":[]},"N":"transpose_x"/'
bad array_mixed mlp 's/{"#":"0\.a_bool","D":true}\]/{"#":"0.a_bool","D":true},{"#":"0.a_i32","D":3}]/'
bad dtype_name mlp 's/"1\.a_dtype","D":"float32"/"1.a_dtype","D":"complex64"/'
bad fetch_col mlp 's/"N":"col"/"N":"kol"/'
bad truncated mlp '$ s/.\{40\}$//'
bad yield_count cond 's/"2\.yield","A":\[\],"I":\[{"%":\([0-9-]*\)}\]/"2.yield","A":[],"I":[{"%":\1},{"%":\1}]/'
bad if_regions cond 's/"regions":\[/"regions":[{"#":"region_x","blocks":[]},/'
bad while_args while_loop 's/"args":\[{/"args":[{"#":-90,"TT":{"#":"0.t_null"}},{/'
bad while_cond while_loop 's/"1\.while","A":\[\],"I":\[{"%":\([0-9]*\)}/"1.while","A":[],"I":[{"%":0}/'

# The JSON parser's edges: a number or a word ending the text, escapes, nesting, literals.
printf '7' > "$out/edge_number_at_end.json"
printf '{"base_code":{"magic":"pir","version":4' > "$out/edge_number_at_end_obj.json"
printf '{"a":-1.5e+3' > "$out/edge_exponent_at_end.json"
printf '{"a":tru' > "$out/edge_word_cut.json"
printf '{"a":[NaN,Infinity,-Infinity,null,true,false,1e999,-0,123456789012345678901234]}' \
  > "$out/edge_literals.json"
printf '{"s":"\\u00e9\\ud83d\\ude00\\u0000\\n\\"\\/\\\\"}' > "$out/edge_escapes.json"
printf '{"s":"\\u12' > "$out/edge_escape_cut.json"
printf '{"s":"a\001b"}' > "$out/edge_control_char.json"
awk 'BEGIN { for (i = 0; i < 600; i++) printf "["; }' > "$out/edge_deep.json"
printf '{"base_code":{"magic":"pir","version":4},"program":{"regions":[{"blocks":[{"ops":[]}]}]}}' \
  > "$out/edge_empty_program.json"
printf '{"base_code":{"magic":"pir","version":4},"program":{"regions":[{"blocks":[{"ops":[{"#":"1.full_int_array","A":[{"N":"value","AT":{"#":"0.a_array","D":[{"#":"0.a_i64","D":1},{"#":"0.a_i64","D":2},{"#":"0.a_i64","D":3},{"#":"0.a_i64","D":4},{"#":"0.a_i64","D":5},{"#":"0.a_i64","D":6},{"#":"0.a_i64","D":7},{"#":"0.a_i64","D":8},{"#":"0.a_i64","D":9},{"#":"0.a_i64","D":10}]}}],"I":[],"O":[{"%%":1,"TT":{"#":"0.t_dtensor","D":[{"#":"0.t_i64"},[10],"NCHW",[],0]}}]}]}]}]}}' \
  > "$out/edge_long_int_array.json"
