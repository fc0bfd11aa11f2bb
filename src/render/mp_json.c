/*
** mp_json.c: JSON strings (see mp_json.h).
*/

#include <string.h>

#include "reader/mp_label.h"
#include "render/mp_json.h"
#include "render/mp_text.h"

/* Write the body of a JSON string (no quotes). */
static void body(FILE *out, const char *s, size_t n)
{
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0;
  while (i < n) {
    unsigned char c = u[i];
    size_t m;
    if (c == '"' || c == '\\') { fputc('\\', out); fputc(c, out); }
    else if (c == '\n') fputs("\\n", out);
    else if (c == '\t') fputs("\\t", out);
    else if (c < 0x20 || c == 0x7f) fprintf(out, "\\u%04x", c);
    else if (c < 0x80) fputc(c, out);
    else if ((m = mp_utf8_len(u + i, n - i)) == 2 && c == 0xc2 &&
	     u[i + 1] < 0xa0) {	/* C1 controls: escaped, as in text. */
      fprintf(out, "\\u%04x", u[i + 1]);
      i += 2;
      continue;
    } else if (m) {
      fwrite(u + i, 1, m, out);
      i += m;
      continue;
    } else fprintf(out, "\\u%04x", c);
    i++;
  }
}

void mp_json_str(FILE *out, const char *s, size_t n)
{
  fputc('"', out);
  body(out, s, n);
  fputc('"', out);
}

void mp_json_cstr(FILE *out, const char *s)
{
  mp_json_str(out, s, strlen(s));
}

void mp_json_name(FILE *out, const mp_name *nm, size_t max)
{
  size_t shown = mp_name_cut(nm->s, nm->kept, max);
  fputc('"', out);
  body(out, nm->s, shown);
  if (shown < nm->len)
    fprintf(out, "... (%llu bytes)", (unsigned long long)nm->len);
  fputc('"', out);
}
