# tests/repl.mk -- tests of the REPL (driver/cmd_repl.c, driver/repl.c).
#   tests/repl/test_pty: a person at a terminal, through a real pseudo-terminal (forkpty): a
#     multi-line if block, an error then a correct line, history recall (also from the history
#     file in a second session), Tab completion, :vars, Ctrl-C at the prompt and during an
#     action, Ctrl-D, :quit.
#   tests/repl/piped.sh: stdin that is not a terminal (a script; -i: as at a prompt) and the
#     session's commands.
check_PROGRAMS += tests/repl/test_pty
tests_repl_test_pty_SOURCES = tests/repl/test_pty.c tests/tap.h
TESTS += tests/repl/test_pty tests/repl/piped.sh
EXTRA_DIST += tests/repl/piped.sh
