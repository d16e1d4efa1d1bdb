//go:build linux && amd64

package main

// The prebuilt V8 in github.com/tommie/v8go/deps/linux_amd64 was compiled against glibc ≥ 2.38,
// whose headers redirect strtol & co. and the scanf family to their C23 variants
// (__isoc23_*: they also accept 0b binary literals and %b). Debian 12's glibc 2.36 has no such
// symbols, so the link fails with "undefined reference to `__isoc23_strtol'". These forwarders
// to the classic functions let it link; V8 never parses 0b-prefixed text through them.
// (`nm -u libv8-*.a | grep __isoc23` lists exactly these six.)

/*
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

long __isoc23_strtol(const char *s, char **end, int base) { return strtol(s, end, base); }
long long __isoc23_strtoll(const char *s, char **end, int base) { return strtoll(s, end, base); }
unsigned long __isoc23_strtoul(const char *s, char **end, int base) { return strtoul(s, end, base); }
unsigned long long __isoc23_strtoull(const char *s, char **end, int base) { return strtoull(s, end, base); }

int __isoc23_sscanf(const char *s, const char *format, ...) {
	va_list ap;
	va_start(ap, format);
	int n = vsscanf(s, format, ap);
	va_end(ap);
	return n;
}

int __isoc23_fscanf(FILE *f, const char *format, ...) {
	va_list ap;
	va_start(ap, format);
	int n = vfscanf(f, format, ap);
	va_end(ap);
	return n;
}
*/
import "C"
