/* Escaping text for HTML pages (cachet report). */
#include <string.h>

#include "cachet/html.h"

void buf_add_html(struct buf *b, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < len;) {
		unsigned char c = p[i];
		size_t n = 1;
		switch (c) {
		case '&':
			buf_addstr(b, "&amp;");
			break;
		case '<':
			buf_addstr(b, "&lt;");
			break;
		case '>':
			buf_addstr(b, "&gt;");
			break;
		case '"':
			buf_addstr(b, "&quot;");
			break;
		case '\'':
			buf_addstr(b, "&#39;");
			break;
		default:
			if (c == '\t' || c == '\n' || (c >= 0x20 && c < 0x7f)) {
				buf_addch(b, (char)c);
			} else if (c >= 0x80 && (n = utf8_seq_len(p + i, len - i)) != 0) {
				buf_add(b, p + i, n);
			} else {
				/* A raw C1/C0 control or a stray byte would make the page
				 * invalid UTF-8 (rendered as U+FFFD at best). */
				buf_addf(b, "\\x%02x", c);
				n = 1;
			}
		}
		i += n;
	}
}

void buf_add_html_str(struct buf *b, const char *s)
{
	if (s)
		buf_add_html(b, s, strlen(s));
}
