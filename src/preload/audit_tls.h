/*
 * The audit library's start-up check of static TLS (audit_tls.c): a
 * program whose libraries need more initial-exec TLS than the loader
 * reserves under an audit library is executed again with room for it.
 */
#ifndef CACHET_PRELOAD_AUDIT_TLS_H
#define CACHET_PRELOAD_AUDIT_TLS_H

#include <link.h>

/* Set in the environment of a program executed again: what GLIBC_TUNABLES
 * was ("0": unset; "1" and its value), for the preload library to put
 * back. */
#define TLS_TUNABLES_WAS_ENV "CACHET_TUNABLES_WAS"

/* la_objopen: one more object mapped, in namespace lmid. */
void audit_tls_object(const struct link_map *map, Lmid_t lmid);
/* la_activity: the program's libraries are loaded and relocated. */
void audit_tls_started(void);

#endif
