/* The usage of each ck-basal command and subcommand, printed for `ck-basal COMMAND
 * [SUBCOMMAND] --help` (or -h): what it does, its arguments and options, an example.
 * The overview `ck-basal --help` prints is main.c's; tests/t_cli_help.sh keeps the two
 * and the man page equal (every option of one is in the others). */
#ifndef BASAL_CLI_COMMAND_HELP_H
#define BASAL_CLI_COMMAND_HELP_H

#include <stdio.h>

/* Prints the usage of command (and subcommand, NULL or not one of the command's: then
 * every subcommand of it) to out. Returns 0, or -1 when command has no entry. */
int cli_command_help(FILE *out, const char *command, const char *subcommand);

#endif
