/* Placeholder until the module's issue lands: the subcommand says so honestly. */
#include <stdio.h>

#include "crawler/tools.h"

int url_tool_main(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "crawler %s: not built yet in this version\n", argv[0]);
    return 1;
}
