/*
** mp_text.c: terminal-safe text (see mp_text.h).
*/

#include "render/mp_text.h"

size_t mp_utf8_len(const unsigned char *s, size_t n)
{
  size_t len, i;
  uint32_t cp;
  if (s[0] < 0xc2) return 0;	/* Continuation byte or overlong lead. */
  len = s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : s[0] < 0xf5 ? 4 : 0;
  if (!len || len > n) return 0;
  cp = s[0] & (0x7f >> len);
  for (i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp < 0xe000))) ||
      (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
    return 0;
  return len;
}

void mp_text_put(FILE *out, const char *s, size_t n, int flags)
{
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0, run = 0;	/* Bytes since the last escape, unwritten. */
  while (i < n) {
    unsigned char c = u[i];
    size_t m = 1;
    int safe;
    const char *ent = NULL;
    if (c >= 0x20 && c < 0x7f) {
      safe = 1;
      if ((flags & MP_TEXT_FOLDED) && (c == ';' || c == '\\')) safe = 0;
      else if (flags & MP_TEXT_XML)
	ent = c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" :
	      c == '"' ? "&quot;" : NULL;
    } else if (c == '\t' && (flags & MP_TEXT_TABS)) safe = 1;
    else if (c >= 0x80 && (m = mp_utf8_len(u + i, n - i)) != 0)
      safe = !(c == 0xc2 && u[i + 1] < 0xa0) &&	/* Not U+0080..U+009F, */
	     !((flags & MP_TEXT_XML) && c == 0xef && u[i + 1] == 0xbf &&
	       u[i + 2] >= 0xbe);			/* nor U+FFFE, U+FFFF. */
    else safe = 0, m = 1;
    if (safe && !ent) {
      run += m;
      i += m;
      continue;
    }
    if (run) fwrite(u + i - run, 1, run, out);
    run = 0;
    if (ent) fputs(ent, out);
    else if (c == '\t') fputs("\\t", out);
    else if (c == '\n') fputs("\\n", out);
    else if (c == '\r') fputs("\\r", out);
    else fprintf(out, "\\x%02x", c);
    i++;
  }
  if (run) fwrite(u + i - run, 1, run, out);
}
