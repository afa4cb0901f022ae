/*
 * The descriptors above 2 that cachet was started with, which a step
 * inherits as it would without cachet (`cmd 3<file`, `<(...)`, make's
 * jobserver), told apart from cachet's own.
 */
#ifndef CACHET_CLI_INHERITED_H
#define CACHET_CLI_INHERITED_H

#include <stddef.h>

#include "cachet/trace.h"

/* Notes the open descriptors above 2 without close-on-exec, once (a
 * second call does nothing). Listing /proc/self/fd costs a hit 2% of its
 * CPU time (a proc inode made for every entry), and a hit runs nothing:
 * it is called before a step or a preprocessor run and before a remote is
 * asked, not at start. Every descriptor cachet opens until then is
 * close-on-exec, and so left out as before; a remote plugin's library may
 * open sockets that are not. */
void inherited_snapshot(void);

/* Fills spec's inherited_fds, jobserver_fds and jobserver_fifo for a step
 * with environment envp (make's jobserver is named in MAKEFLAGS, MFLAGS or
 * CARGO_MAKEFLAGS). The strings and arrays live until the process ends. */
void inherited_for_step(char *const *envp, struct trace_spec *spec);

#endif
