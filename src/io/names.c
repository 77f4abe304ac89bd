/* Names in messages: file paths and tensor names come from users and from
 * files, and may hold any bytes. Printed raw, a name that is not UTF-8 (or
 * holds control characters) garbles a terminal or a log and hides what it
 * was; ct_escape_name shows such bytes as \xNN instead. Also the UTF-8
 * validation that the safetensors writer and reader share. */
#include <stdio.h>

#include "io/io_internal.h"

size_t ct__utf8_seq_len(const unsigned char *s, size_t n) {
  if (n == 0) return 0;
  unsigned c = s[0];
  if (c < 0x80) return 1;
  size_t len;
  unsigned lo = 0x80, hi = 0xBF; /* the allowed range of the second byte */
  if (c >= 0xC2 && c <= 0xDF)
    len = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0)
      lo = 0xA0; /* no overlong 3-byte forms */
    else if (c == 0xED)
      hi = 0x9F; /* no surrogates U+D800..U+DFFF */
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0)
      lo = 0x90; /* no overlong 4-byte forms */
    else if (c == 0xF4)
      hi = 0x8F; /* nothing past U+10FFFF */
  } else {
    return 0; /* a continuation byte, an overlong 2-byte lead, or 0xF5..0xFF */
  }
  if (n < len || s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < len; i++)
    if ((s[i] & 0xC0) != 0x80) return 0;
  return len;
}

bool ct__utf8_valid(const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  for (size_t i = 0; i < n;) {
    size_t k = ct__utf8_seq_len(p + i, n - i);
    if (!k) return false;
    i += k;
  }
  return true;
}

const char *ct__st_name_problem(const char *name, size_t len) {
  if (len == 0) return "is empty";
  if (!ct__utf8_valid(name, len)) return "is not valid UTF-8";
  if (len == 12 && !memcmp(name, "__metadata__", 12))
    return "is \"__metadata__\", which is reserved";
  return NULL;
}

/* The piece that shows the character at s[0..n) into piece (16 bytes);
 * returns its length and sets *used to the bytes of s it covers. */
static size_t escape_piece(const unsigned char *s, size_t n, char *piece, size_t *used) {
  size_t k = ct__utf8_seq_len(s, n);
  /* C0 and C1 controls, DEL and the backslash are escaped too. */
  bool control = k == 0 || (k == 1 && (s[0] < 0x20 || s[0] == 0x7F || s[0] == '\\')) ||
                 (k == 2 && s[0] == 0xC2 && s[1] < 0xA0);
  if (!control) {
    memcpy(piece, s, k);
    *used = k;
    return k;
  }
  if (k == 1 && s[0] == '\\') {
    memcpy(piece, "\\\\", 2);
    *used = 1;
    return 2;
  }
  *used = k ? k : 1; /* an invalid byte alone; a C1 control as its two bytes */
  size_t len = 0;
  for (size_t j = 0; j < *used; j++)
    len += (size_t)snprintf(piece + len, 16 - len, "\\x%02x", s[j]);
  return len;
}

const char *ct_escape_name(const char *s, char *buf, size_t cap) {
  if (!buf || cap == 0) return "";
  if (!s) {
    snprintf(buf, cap, "(null)");
    return buf;
  }
  const unsigned char *p = (const unsigned char *)s;
  size_t n = strlen(s), total = 0, used;
  char piece[16];
  for (size_t i = 0; i < n; i += used) total += escape_piece(p + i, n - i, piece, &used);
  /* Too long: as much as fits with "..." after it, so that a cut name says so. */
  size_t room = total < cap ? cap - 1 : (cap > 4 ? cap - 4 : 0), o = 0;
  for (size_t i = 0; i < n; i += used) {
    size_t len = escape_piece(p + i, n - i, piece, &used);
    if (o + len > room) break;
    memcpy(buf + o, piece, len);
    o += len;
  }
  if (total < cap)
    buf[o] = '\0';
  else
    snprintf(buf + o, cap - o, "...");
  return buf;
}
