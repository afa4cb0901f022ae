/*
 * A growable byte buffer and a bounds-checked reader over one.
 *
 * Invariants of struct buf: after buf_init, `data` is never NULL and is always
 * NUL-terminated at data[len] (so a buffer holding text is a C string);
 * `alloc` is private. Allocation failure aborts: cachet cannot do anything
 * useful without memory, and a half-built key must never be used.
 *
 * The encoders write little-endian fixed-width integers and length-prefixed
 * byte strings; the reader checks every length against what is left, so a
 * corrupt or hostile blob yields an error, never a read out of bounds.
 */
#ifndef CACHET_BUF_H
#define CACHET_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>

struct buf {
	char *data;
	size_t len;
	size_t alloc;
};

#define BUF_INIT_EMPTY                                                                             \
	{                                                                                          \
		NULL, 0, 0                                                                         \
	}

void buf_init(struct buf *b);
void buf_free(struct buf *b);
void buf_reset(struct buf *b); /* len = 0, keeps the allocation */
void buf_grow(struct buf *b, size_t extra);
/* Hands the allocation to the caller (free() it); b is left empty but valid. */
char *buf_detach(struct buf *b, size_t *len_out);

void buf_add(struct buf *b, const void *data, size_t len);
void buf_addstr(struct buf *b, const char *s);
void buf_addch(struct buf *b, char c);
/* v in lowercase hex, no leading zeros: the fields of hot lookup keys,
 * where a printf per key costs more than the lookup. */
void buf_addhex(struct buf *b, uint64_t v);
void buf_addf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_vaddf(struct buf *b, const char *fmt, va_list ap);
/* Appends s as a JSON string literal, quotes included; bytes that are not
 * valid UTF-8 are escaped as \u00XX of the byte so the output stays valid JSON. */
void buf_add_json_string(struct buf *b, const char *s, size_t len);
/* The length (1-4) of the valid UTF-8 sequence that starts s (left bytes
 * available), or 0 when s does not start one (stray continuation byte,
 * overlong form, surrogate, beyond U+10FFFF, truncated). */
size_t utf8_seq_len(const unsigned char *s, size_t left);

/* Tab-separated text records (the step log, the stats log): a field with
 * its tabs, newlines and backslashes escaped as \t, \n and \\, and back. */
void buf_add_field(struct buf *b, const char *s);
/* The unescaped copy of a field of len bytes (malloc'd). */
char *field_unescape(const char *s, size_t len);

/* Binary encoding. */
void buf_put_u8(struct buf *b, uint8_t v);
void buf_put_u32(struct buf *b, uint32_t v);
void buf_put_u64(struct buf *b, uint64_t v);
void buf_put_bytes(struct buf *b, const void *data, size_t len); /* u32 length + bytes */
void buf_put_str(struct buf *b, const char *s);                  /* as bytes, without NUL */

/* Reads from a byte range it does not own. After any failed read, `failed` is
 * set and every later read fails too, so a decoder checks once at the end. */
struct reader {
	const unsigned char *p;
	size_t left;
	int failed;
};

void reader_init(struct reader *r, const void *data, size_t len);
uint8_t reader_u8(struct reader *r);
uint32_t reader_u32(struct reader *r);
uint64_t reader_u64(struct reader *r);
/* Points into the reader's data; *len_out gets the length. NULL on failure. */
const void *reader_bytes(struct reader *r, size_t *len_out);
/* A malloc'd NUL-terminated copy of a byte string; NULL on failure or if the
 * string holds a NUL byte (paths and argv elements never do). */
char *reader_strdup(struct reader *r);
void reader_raw(struct reader *r, void *out, size_t len); /* fixed-size field */

/* Allocation helpers that abort on failure. */
/* Says "out of memory" on stderr and aborts: the one exit of them all. */
void xalloc_failed(void) __attribute__((noreturn));
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
