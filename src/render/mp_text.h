/*
** mp_text.h: text for a terminal: names and labels as the stream has them,
** with nothing in them that a terminal would act on.
**
** Printable ASCII and valid UTF-8 pass through; control characters (C0,
** DEL, and the C1 range U+0080 to U+009F, which some terminals take as
** escape sequences) and bytes that are not valid UTF-8 are written as
** \xNN (\t, \n and \r as themselves escaped). A backslash is left as it
** is: names are for reading, and a real name rarely has one.
*/

#ifndef MP_TEXT_H
#define MP_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MP_TEXT_TABS	1	/* Let tabs through (source text). */

/* Write n bytes at s, escaped as above; flags: MP_TEXT_*. */
void mp_text_put(FILE *out, const char *s, size_t n, int flags);

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
size_t mp_utf8_len(const unsigned char *s, size_t n);

#endif
