# train/local.mk -- the runtime of a compiled unit (below lang/, above vm/): the unit and its
# actions' values (train/unit.h), the runner of the actions (train/run.h; run.c print,
# assert_close and the dispatch -> train.c train and eval, train_save.c save and load,
# train_predict.c predict -> runner.c the runner's core, train/run_int.h), train's validation,
# early stopping and keep_best (train_valid.c), its log (train_log.c), what they share
# (train_int.h), the images reader's options (train_image.c) and the training curves of a log as
# a PNG (plot.c, with cairo when configure finds it).
libpdlang_internal_la_SOURCES += train/unit.h train/unit.c train/options.h train/options.c train/spec.h \
	train/readers.h train/readers.c train/optimizers.h train/optimizers.c \
	train/run.h train/run_int.h train/runner.c train/run.c \
	train/train.h train/train_int.h train/train.c train/train_save.c train/train_predict.c \
	train/train_valid.c train/train_log.c train/train_image.c train/plot.h train/plot.c
