/* driver.h -- the pdlang command-line driver: one function per subcommand, each in its own
 * driver/cmd_NAME.c, dispatched from driver/pdlang.c. A command returns the process exit status:
 * 0 success, 1 an error in the user's input (diagnostics printed), 2 a usage error. */
#ifndef PD_DRIVER_H
#define PD_DRIVER_H

#include <stdio.h>

typedef struct pd_command {
  const char *name;
  int (*run)(int argc, char **argv);  /* argv[0] is the command name */
  const char *summary;                /* one line for `pdlang --help` */
  const char *usage;                  /* `pdlang NAME --help` text */
} pd_command;

/* Print `pdlang CMD --help` text for cmd to `out`. */
void pd_driver_usage(FILE *out, const pd_command *cmd);
/* True when argv holds -h or --help. */
int pd_driver_wants_help(int argc, char **argv);

extern const pd_command pd_cmd_parse; /* driver/cmd_parse.c */
extern const pd_command pd_cmd_dump;  /* driver/cmd_dump.c */

#endif /* PD_DRIVER_H */
