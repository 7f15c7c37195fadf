# tests/golden/local.mk -- the golden tests, found from their folders: every NAME.pd of
# tests/golden/CMD/ is run as `pdlang CMD NAME.pd` from its folder by tests/golden.sh, and its
# stdout compared with NAME.out, its stderr with NAME.err (whose presence means exit status 1);
# a first line `# args: ...` adds arguments. NAME_mod.pd is not a test: a module the tests beside
# it import, or the input of a .sh test of the folder (run as it is, TAP). A new golden test is
# its files, nothing else. The folders:
#   parse    `pdlang parse`: the tree, or the exact syntax errors;
#   check    `pdlang check`: the exact diagnostics of each class of compile error (modules,
#            calls, train's options, readers, compile-time loops and math);
#   dump     `pdlang dump`: the seed programs (copies of examples/ifelse.pd, rnn.pd, train.pd:
#            tests/driver/dump_cli.sh checks that they still match), the startup program, a
#            pruned program, a script that does not compile; the .pdmodel files are
#            dump_cli.sh's;
#   run      `pdlang run`: scripts whose assert_close and print hold values computed by hand or
#            by the Python in the file, and run-time errors (file:line:col, the line, a caret,
#            the calls of a def);
#   summary  `pdlang summary`: the counts checked against the parameters' sizes in the scripts'
#            comments.
# pd_golden_tests is GNU make's wildcard of the folders (the build's one GNU make extension, hence
# -Wno-portability), each name made relative to the source tree, as a test's name must be;
# TESTS takes it through $(PD_GOLDEN_TESTS), a configure substitution (configure.ac says why).
AUTOMAKE_OPTIONS = -Wno-portability
pd_golden_tests = $(sort $(patsubst $(srcdir)/%,%,$(filter-out %_mod.pd, \
	$(wildcard $(srcdir)/tests/golden/*/*.pd)) $(wildcard $(srcdir)/tests/golden/*/*.sh)))
TESTS += $(PD_GOLDEN_TESTS)
EXTRA_DIST += tests/golden
