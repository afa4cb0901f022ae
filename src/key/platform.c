#include "cachet/platform.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include "cachet/buf.h"
#include "cachet/digest.h"
#if (defined(__x86_64__) || defined(__i386__)) && defined(__has_include)
#if __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h>
#define CACHET_GLIBC_CPUID 1
#endif
#endif

#ifdef CACHET_GLIBC_CPUID
/* The CPU as -march=native sees it: the CPUID leaves gcc's driver reads,
 * as glibc's loader read them once at process start
 * (__x86_get_cpuid_feature_leaf). /proc/cpuinfo said the same, but the
 * kernel builds that text for every CPU on each read, and CPUID itself
 * traps to the hypervisor in a virtual machine (10 us a leaf measured
 * here): both cost more than the rest of the weak key on every hit.
 *
 * The digest covers the raw registers of every leaf glibc keeps (1, 7,
 * 0xd, 0x14, 0x19, 0x80000001/7/8) and what glibc found usable (which
 * folds in XCR0: the vector registers the OS enables). Leaf 1's EBX (APIC
 * id, CPU count) is left out: it differs between the CPUs of one machine. */
static char *cpu_describe(char **model_out)
{
	unsigned regs[(CPUID_INDEX_14_ECX_0 + 1) * 8];
	size_t n = 0;
	for (unsigned i = 0; i <= CPUID_INDEX_14_ECX_0; i++) {
		const struct cpuid_feature *f = __x86_get_cpuid_feature_leaf(i);
		for (int r = 0; r < 4; r++) {
			regs[n++] = i == CPUID_INDEX_1 && r == 1 ? 0 : f->cpuid_array[r];
			regs[n++] = f->active_array[r];
		}
	}
	unsigned eax = __x86_get_cpuid_feature_leaf(CPUID_INDEX_1)->cpuid_array[0];
	unsigned family = (eax >> 8) & 0xf, model = (eax >> 4) & 0xf;
	if (family == 0xf)
		family += (eax >> 20) & 0xff;
	if (family >= 6)
		model += ((eax >> 16) & 0xf) << 4;
	*model_out = xasprintf("family %u model %u stepping %u", family, model, eax & 0xf);
	struct digest dg;
	digest_bytes(regs, n * sizeof regs[0], &dg);
	char *hex = xmalloc(DIGEST_HEX_LEN + 1);
	digest_to_hex(&dg, hex);
	return hex;
}
#else
/* The value after "key\t: " on the first line of /proc/cpuinfo that has key. */
static char *cpuinfo_field(const char *text, const char *key)
{
	size_t klen = strlen(key);
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		if (len > klen && memcmp(line, key, klen) == 0 &&
		    (line[klen] == '\t' || line[klen] == ' ' || line[klen] == ':')) {
			const char *colon = memchr(line, ':', len);
			if (colon) {
				const char *v = colon + 1;
				while (*v == ' ')
					v++;
				return xstrndup(v, len - (size_t)(v - line));
			}
		}
		line = end ? end + 1 : NULL;
	}
	return xstrdup("");
}

static char *read_small_file(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return xstrdup("");
	struct buf b;
	buf_init(&b);
	char chunk[4096];
	size_t n;
	/* The first processor's block is all we need. */
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && b.len < 16384)
		buf_add(&b, chunk, n);
	fclose(f);
	return buf_detach(&b, NULL);
}

/* Elsewhere the kernel's view: the first processor's model and flags. */
static char *cpu_describe(char **model_out)
{
	char *cpuinfo = read_small_file("/proc/cpuinfo");
	char *flags = cpuinfo_field(cpuinfo, "flags");
	*model_out = cpuinfo_field(cpuinfo, "model name");
	free(cpuinfo);
	struct digest d;
	digest_bytes(flags, strlen(flags), &d);
	free(flags);
	char *hex = xmalloc(DIGEST_HEX_LEN + 1);
	digest_to_hex(&d, hex);
	return hex;
}
#endif

/* -march=native reads CPUID: the CPU model and features are part of the
 * key, as are the kernel release and the umask (which decides the modes of
 * the outputs). */
char *platform_describe(void)
{
	struct utsname u;
	if (uname(&u) < 0)
		memset(&u, 0, sizeof u);
	char *model = NULL;
	char *hex = cpu_describe(&model);
	mode_t mask = umask(0);
	umask(mask);
	char *line = xasprintf("%s %s | %s | cpu %.16s | umask %03o", u.machine, u.release, model,
	                       hex, (unsigned)mask);
	free(model);
	free(hex);
	return line;
}
