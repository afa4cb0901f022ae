/*
 * OpenSSL's CPU probe, answered from what glibc's loader already read.
 *
 * The static libcrypto runs OPENSSL_cpuid_setup at every start (from its
 * .init section): OPENSSL_ia32_cpuid executes CPUID some eight times, and
 * in a virtual machine each one traps to the hypervisor (~4 us here), about
 * 40 us of every cachet process, a hit included. cachet takes SHA-256 alone
 * from libcrypto, whose code needs three answers: the SHA extensions, or
 * AVX2 with BMI1 and BMI2. glibc read the CPUID leaves that hold them
 * (and XCR0, for whether the OS saves the vector registers) before main:
 * the cachet binary is linked with --wrap=OPENSSL_cpuid_setup, and this
 * sets those bits alone where glibc found them usable. Elsewhere, for a
 * CPU with neither, and under OPENSSL_ia32cap, OpenSSL probes as before.
 * A bit left clear only makes OpenSSL pick its generic code for something
 * cachet does not use.
 */
#ifdef CACHET_WRAP_OPENSSL_CPUID

#include <stdlib.h>
#include <sys/platform/x86.h>

/* libcrypto's capability vector (OpenSSL 3: CPUID.1:EDX, CPUID.1:ECX,
 * CPUID.7:EBX, CPUID.7:ECX, as x86_64cpuid.pl lays it out). */
extern unsigned int OPENSSL_ia32cap_P[4];

void __real_OPENSSL_cpuid_setup(void);
void __wrap_OPENSSL_cpuid_setup(void);

/* Bits of CPUID.7:EBX, the third word, that sha256-x86_64 tests. */
#define CAP2_BMI1 (1u << 3)
#define CAP2_AVX2 (1u << 5)
#define CAP2_BMI2 (1u << 8)
#define CAP2_SHA  (1u << 29)

void __wrap_OPENSSL_cpuid_setup(void)
{
	unsigned cap2 = 0;
	if (CPU_FEATURE_ACTIVE(SHA) && CPU_FEATURE_ACTIVE(SSSE3) && CPU_FEATURE_ACTIVE(SSE4_1))
		cap2 |= CAP2_SHA;
	if (CPU_FEATURE_ACTIVE(AVX2) && CPU_FEATURE_ACTIVE(BMI1) && CPU_FEATURE_ACTIVE(BMI2))
		cap2 |= CAP2_AVX2 | CAP2_BMI1 | CAP2_BMI2;
	/* OPENSSL_ia32cap, a mask the user sets (to compare code paths, or
	 * around a CPU bug), is OpenSSL's to read. */
	if (!cap2 || getenv("OPENSSL_ia32cap")) {
		__real_OPENSSL_cpuid_setup();
		return;
	}
	OPENSSL_ia32cap_P[0] = 0;
	OPENSSL_ia32cap_P[1] = 0;
	OPENSSL_ia32cap_P[2] = cap2;
	OPENSSL_ia32cap_P[3] = 0;
}

#else
/* ISO C wants a translation unit to declare something. */
typedef int cachet_openssl_cpu_unused;
#endif
