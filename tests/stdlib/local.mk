# tests/stdlib/local.mk -- the layers of stdlib/layers.pd, compiled from scripts in fp64:
#   test_attention: multi_head_attention, transformer_encoder_layer, causal_mask,
#     positional_embedding, linear against a reference written from paddle.nn's formulas
#     (padding and causal masks, bool and float, self- and cross-attention, pre- and post-norm),
#     and fp64 finite-difference gradients of every parameter;
#   test_rnn_layers: the recurrent layers against a reference written from the equations
#     (lengths 1, 4, 2; reverse; initial states per sequence, shared or none), the input
#     projection hoisted out of the loop (and made an fc op by train's passes), the fused lstm and
#     gru against the loop as written, and fp64 finite-difference gradients as written, hoisted
#     and as train rewrites it (also inside a loop over sequences of sequences).
check_PROGRAMS += tests/stdlib/test_attention tests/stdlib/test_rnn_layers
TESTS += tests/stdlib/test_attention tests/stdlib/test_rnn_layers
