/*
** mp_json.h: the one JSON writer: strings and names for every JSON the
** command prints (the report, `info`, `events`).
**
** Strings are written as the stream has them when they are valid UTF-8;
** a byte that is not part of valid UTF-8 becomes the code point of the
** same value (U+0080 to U+00FF), so the output is always valid JSON.
** Control characters, quotes and backslashes are escaped.
*/

#ifndef MP_JSON_H
#define MP_JSON_H

#include <stddef.h>
#include <stdio.h>

#include "reader/mp_strtab.h"

/* Write n bytes at s as a JSON string. */
void mp_json_str(FILE *out, const char *s, size_t n);

/* Write a NUL-terminated string as a JSON string. */
void mp_json_cstr(FILE *out, const char *s);

/* Write a name as a JSON string, its first max bytes at most (cut at a
** UTF-8 boundary and marked "... (N bytes)" as in labels). */
void mp_json_name(FILE *out, const mp_name *nm, size_t max);

#endif
