#include "cachet/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char empty_buf[1];

void xalloc_failed(void)
{
	static const char msg[] = "cachet: out of memory\n";
	fwrite(msg, 1, sizeof msg - 1, stderr);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		xalloc_failed();
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		xalloc_failed();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		xalloc_failed();
	return p;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);
	if (!p)
		xalloc_failed();
	return p;
}

char *xstrndup(const char *s, size_t n)
{
	char *p = strndup(s, n);
	if (!p)
		xalloc_failed();
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *p;
	va_start(ap, fmt);
	int rc = vasprintf(&p, fmt, ap);
	va_end(ap);
	if (rc < 0)
		xalloc_failed();
	return p;
}

void buf_init(struct buf *b)
{
	b->data = empty_buf;
	b->len = 0;
	b->alloc = 0;
}

void buf_free(struct buf *b)
{
	if (b->alloc)
		free(b->data);
	buf_init(b);
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->alloc)
		b->data[0] = '\0';
}

void buf_grow(struct buf *b, size_t extra)
{
	if (b->len + extra + 1 <= b->alloc)
		return;
	size_t want = b->alloc ? b->alloc : 64;
	while (want < b->len + extra + 1)
		want *= 2;
	if (b->alloc) {
		b->data = xrealloc(b->data, want);
	} else {
		b->data = xmalloc(want);
		b->data[0] = '\0';
	}
	b->alloc = want;
}

char *buf_detach(struct buf *b, size_t *len_out)
{
	buf_grow(b, 0);
	char *p = b->data;
	if (len_out)
		*len_out = b->len;
	buf_init(b);
	return p;
}

void buf_add(struct buf *b, const void *data, size_t len)
{
	buf_grow(b, len);
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
}

void buf_addstr(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

void buf_addch(struct buf *b, char c)
{
	buf_add(b, &c, 1);
}

void buf_addhex(struct buf *b, uint64_t v)
{
	char t[16];
	int n = 0;
	do {
		t[n++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	buf_grow(b, (size_t)n);
	while (n)
		b->data[b->len++] = t[--n];
	b->data[b->len] = '\0';
}

void buf_vaddf(struct buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	va_copy(cp, ap);
	int n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return;
	buf_grow(b, (size_t)n);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void buf_addf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	buf_vaddf(b, fmt, ap);
	va_end(ap);
}

/* Length of the valid UTF-8 sequence starting at s (at most left bytes), or 0. */
size_t utf8_seq_len(const unsigned char *s, size_t left)
{
	size_t n;
	unsigned min;
	unsigned cp;
	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0) {
		n = 2, min = 0x80, cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		n = 3, min = 0x800, cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		n = 4, min = 0x10000, cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (n > left)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void buf_add_json_string(struct buf *b, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	buf_addch(b, '"');
	for (size_t i = 0; i < len;) {
		unsigned char c = p[i];
		if (c == '"' || c == '\\') {
			buf_addch(b, '\\');
			buf_addch(b, (char)c);
			i++;
		} else if (c == '\n') {
			buf_addstr(b, "\\n"), i++;
		} else if (c == '\t') {
			buf_addstr(b, "\\t"), i++;
		} else if (c < 0x20 || c == 0x7f) {
			buf_addf(b, "\\u%04x", c), i++;
		} else if (c < 0x80) {
			buf_addch(b, (char)c), i++;
		} else {
			size_t n = utf8_seq_len(p + i, len - i);
			if (n) {
				buf_add(b, p + i, n);
				i += n;
			} else {
				/* Not UTF-8 (paths are bytes): keep the byte visible and the JSON
				 * valid. */
				buf_addf(b, "\\u%04x", c);
				i++;
			}
		}
	}
	buf_addch(b, '"');
}

void buf_add_field(struct buf *b, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '\t')
			buf_addstr(b, "\\t");
		else if (*s == '\n')
			buf_addstr(b, "\\n");
		else if (*s == '\\')
			buf_addstr(b, "\\\\");
		else
			buf_addch(b, *s);
	}
}

char *field_unescape(const char *s, size_t len)
{
	char *out = xmalloc(len + 1);
	size_t k = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\\' && i + 1 < len) {
			i++;
			out[k++] = s[i] == 't' ? '\t' : s[i] == 'n' ? '\n' : s[i];
		} else {
			out[k++] = s[i];
		}
	}
	out[k] = '\0';
	return out;
}

void buf_put_u8(struct buf *b, uint8_t v)
{
	buf_add(b, &v, 1);
}

void buf_put_u32(struct buf *b, uint32_t v)
{
	unsigned char x[4];
	for (int i = 0; i < 4; i++)
		x[i] = (unsigned char)(v >> (8 * i));
	buf_add(b, x, 4);
}

void buf_put_u64(struct buf *b, uint64_t v)
{
	unsigned char x[8];
	for (int i = 0; i < 8; i++)
		x[i] = (unsigned char)(v >> (8 * i));
	buf_add(b, x, 8);
}

void buf_put_bytes(struct buf *b, const void *data, size_t len)
{
	buf_put_u32(b, (uint32_t)len);
	buf_add(b, data, len);
}

void buf_put_str(struct buf *b, const char *s)
{
	buf_put_bytes(b, s, strlen(s));
}

void reader_init(struct reader *r, const void *data, size_t len)
{
	r->p = data;
	r->left = len;
	r->failed = 0;
}

static const unsigned char *reader_take(struct reader *r, size_t n)
{
	if (r->failed || r->left < n) {
		r->failed = 1;
		return NULL;
	}
	const unsigned char *p = r->p;
	r->p += n;
	r->left -= n;
	return p;
}

uint8_t reader_u8(struct reader *r)
{
	const unsigned char *p = reader_take(r, 1);
	return p ? p[0] : 0;
}

uint32_t reader_u32(struct reader *r)
{
	const unsigned char *p = reader_take(r, 4);
	if (!p)
		return 0;
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint64_t reader_u64(struct reader *r)
{
	const unsigned char *p = reader_take(r, 8);
	if (!p)
		return 0;
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

const void *reader_bytes(struct reader *r, size_t *len_out)
{
	uint32_t len = reader_u32(r);
	const unsigned char *p = reader_take(r, len);
	*len_out = p ? len : 0;
	return p;
}

char *reader_strdup(struct reader *r)
{
	size_t len;
	const char *p = reader_bytes(r, &len);
	if (!p)
		return NULL;
	if (memchr(p, '\0', len)) {
		r->failed = 1;
		return NULL;
	}
	return xstrndup(p, len);
}

void reader_raw(struct reader *r, void *out, size_t len)
{
	const unsigned char *p = reader_take(r, len);
	if (p)
		memcpy(out, p, len);
	else
		memset(out, 0, len);
}
