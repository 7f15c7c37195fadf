# tests/driver/local.mk -- the pdlang program end to end (driver/: its commands and the REPL),
# each test a script run from the build folder, or a C program:
#   examples.sh, train_save_exec.sh: the quick examples; training end to end (accuracy,
#     determinism, checkpoint resume, save + exec); profile.sh: `pdlang run --profile`;
#   lstm_classify.sh, resnet.sh, char_lm.sh, char_rnn.sh, transformer_classify.sh, images.sh:
#     the examples in short forms learn (resnet's saved model classifies one image with its
#     running statistics; char_rnn samples a line; images.pd trains on the folder
#     tests/vm/reader/make_shapes writes, a seed gives the same losses, bad folders and files are
#     errors at the reader's line);
#   batch_norm.sh: stdlib's batch_norm trained end to end, its running statistics in the saved
#     model (pdlang exec on one row) and through a checkpoint resume, bit for bit;
#   optimizers.sh: adamw, rmsprop and adagrad train end to end, with their state in checkpoints:
#     a resumed run ends bit for bit where an uninterrupted one does;
#   valid_train.sh: train's validation against a hand computation, early stopping, keep_best, a
#     resume with both, bit for bit, validation counted in steps; train_log.sh: train's log (CSV
#     and JSON lines) parsed back; plot.sh: `pdlang plot` and train(..., plot = ...);
#   csv_categories.sh: csv(..., categorical =): text labels and one-hot text features, categories
#     fixed by a column's first reader, saved beside the model and loaded back, errors;
#   file_errors.sh: the file errors of load, save and train's checkpoint at the action's line and
#     the argument that named the file; save_pair.sh: save's pair end to end (exec and load()
#     refuse another save's parameters; a failed save writes nothing); stale_temps.sh: the
#     temporaries of killed writers removed by the next save; ckpt_setup.sh: a checkpoint resumes
#     only into the setup that wrote it; imports.sh: nested imports are limited (100), a module
#     name that is a directory says so;
#   exec_caret.sh, exec_sequences.sh, exec_calls.sh: pdlang exec's run-time errors with the line
#     and a caret when the script is beside the model, saved sequence models (--lengths), a saved
#     model keeps an error's chain of def calls; exec_files.sh: every file given to exec checked
#     (feeds cast by one rule, in one message form; --lengths of rank 2 refused; a folder
#     holding NAME.json);
#   amp.sh: mixed precision (train's amp = "bf16"): the marks in dump --train, learning,
#     determinism, a resume bit for bit, and the 784-1024-1024-10 MLP on Fashion-MNIST within 0.5
#     point of fp32's test accuracy in bf16 and in fp16 (skipped without the data set);
#   amp_fp16.sh: amp = "fp16" and its dynamic loss scaling: the program dump --train shows,
#     learning to fp32's accuracy, a run through overflows resumed bit for bit, the pass's names;
#   bench.sh: pdlang bench's report, options and errors (no timings checked);
#   attention_errors.sh: bad arguments of the attention layers stop at the caller's .pd line;
#   for_unroll.sh: a compile-time for prints what the explicit calls print;
#   summary.sh: the REPL's :summary; dump_cli.sh: tests/golden/dump's copies of the examples still
#     match them;
#   device.sh: --device and PDLANG_DEVICE and their errors; with a GPU, the run goldens and quick
#     examples run there and print the CPU's numbers;
#   test_repl_pty: a person at a terminal, through a real pseudo-terminal (forkpty): a multi-line
#     if block, an error then a correct line, history recall (also from the history file in a
#     second session), Tab completion, :vars, Ctrl-C at the prompt and during an action, Ctrl-D,
#     :quit; repl_piped.sh: stdin that is not a terminal (a script; -i: as at a prompt) and the
#     session's commands;
#   padded_lines.sh: a transformer trained on lines(..., pad_to = 48) with the reader's mask
#     given to the encoder layer, above the commonest license's accuracy;
#   predict.sh: predict(y, reader, out) to CSV and .npy, sequences with their .lengths.npy,
#     byte for byte; progress; a y without a row per sample refused at run time;
#   exec_images.sh: save's MODEL.preprocess and exec --feed NAME=IMAGE.png: predict's output
#     for the same image, byte for byte; batches; a flat input; the errors;
#   finetune.sh: examples/finetune.pd (import_model): fine-tuning beats the frozen features, frozen
#     parameters stay, the saved model runs in exec and (PDLANG_PADDLE_PYTHON) PaddlePaddle;
#   decompile.sh: pdlang decompile of the models of tests/interop (both formats) runs and saves
#     models whose outputs equal the originals' bit for bit; control flow is an error naming the op;
#   durability.sh: kill -9 during save (a model with its .categories and .preprocess) and during
#     plot, and a full disk (a tmpfs, as root): the old files or the new ones, the model refusing
#     parameters of another save, no temporary left.
DRIVER_SH = tests/driver/resnet.sh tests/driver/char_rnn.sh tests/driver/char_lm.sh \
	tests/driver/examples.sh tests/driver/transformer_classify.sh tests/driver/lstm_classify.sh \
	tests/driver/train_save_exec.sh tests/driver/profile.sh tests/driver/images.sh \
	tests/driver/batch_norm.sh tests/driver/optimizers.sh tests/driver/valid_train.sh \
	tests/driver/train_log.sh tests/driver/plot.sh tests/driver/csv_categories.sh \
	tests/driver/file_errors.sh tests/driver/save_pair.sh tests/driver/stale_temps.sh \
	tests/driver/ckpt_setup.sh tests/driver/imports.sh tests/driver/exec_caret.sh \
	tests/driver/exec_sequences.sh tests/driver/exec_calls.sh tests/driver/exec_files.sh \
	tests/driver/attention_errors.sh tests/driver/bench.sh tests/driver/amp.sh tests/driver/amp_fp16.sh \
	tests/driver/for_unroll.sh tests/driver/summary.sh tests/driver/dump_cli.sh \
	tests/driver/device.sh tests/driver/repl_piped.sh tests/driver/padded_lines.sh \
	tests/driver/predict.sh tests/driver/exec_images.sh tests/driver/finetune.sh \
	tests/driver/decompile.sh tests/driver/durability.sh
check_PROGRAMS += tests/driver/test_repl_pty
tests_driver_test_repl_pty_LDADD =
TESTS += $(DRIVER_SH) tests/driver/test_repl_pty
EXTRA_DIST += $(DRIVER_SH) examples/images.pd examples/finetune.pd examples/transformer_classify.pd \
	bench/torch_transformer_classify.py
