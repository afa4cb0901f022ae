/*
 * Text into HTML. Whatever cachet shows in a page (commands, paths, miss
 * reasons) comes from builds and may hold '<', '&', quotes, control
 * characters or bytes that are not UTF-8; these helpers make any byte
 * string safe to place between tags and inside quoted attribute values.
 */
#ifndef CACHET_HTML_H
#define CACHET_HTML_H

#include <stddef.h>
#include "cachet/buf.h"

/* Appends len bytes of s escaped for HTML text and for attribute values in
 * double or single quotes: & < > " ' become character references; valid
 * UTF-8 passes through; a byte that is not part of valid UTF-8, and a
 * control character other than tab and newline, is shown as "\xNN" so that
 * the page stays valid UTF-8 and the byte stays visible. */
void buf_add_html(struct buf *b, const char *s, size_t len);
/* buf_add_html of a NUL-terminated string; NULL appends nothing. */
void buf_add_html_str(struct buf *b, const char *s);

#endif
