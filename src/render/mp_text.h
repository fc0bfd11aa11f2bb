/*
** mp_text.h: text for a terminal: names and labels as the stream has them,
** with nothing in them that a terminal would act on.
**
** Printable ASCII and valid UTF-8 pass through; control characters (C0,
** DEL, and the C1 range U+0080 to U+009F, which some terminals take as
** escape sequences) and bytes that are not valid UTF-8 are written as
** \xNN (\t, \n and \r as themselves escaped). A backslash is left as it
** is: names are for reading, and a real name rarely has one.
**
** Flags fit the same text to other outputs: collapsed stacks, whose
** frames are separated by ';' (MP_TEXT_FOLDED writes ';' and '\' as \x3b
** and \x5c, so that two different names never print the same), and XML
** (MP_TEXT_XML writes & < > " as entities, and the two code points that
** XML forbids in text, U+FFFE and U+FFFF, as \xNN bytes).
*/

#ifndef MP_TEXT_H
#define MP_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MP_TEXT_TABS	1	/* Let tabs through (source text). */
#define MP_TEXT_FOLDED	2	/* Escape ';' and '\\' (collapsed stacks). */
#define MP_TEXT_XML	4	/* Escape for XML text and attributes. */

/* Write n bytes at s, escaped as above; flags: MP_TEXT_*. */
void mp_text_put(FILE *out, const char *s, size_t n, int flags);

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
size_t mp_utf8_len(const unsigned char *s, size_t n);

#endif
