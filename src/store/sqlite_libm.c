/* libm on demand, for SQLite's SQL math functions.
 *
 * The static libsqlite3.a that cachet links (CMakeLists.txt) was built
 * with SQLite's math functions, and they are its only users of libm:
 * nothing in cachet calls them, nor does any statement cachet runs. Yet
 * as a needed library, libm cost every cachet process 0.11 ms at start
 * (measured: 1.05 against 0.94 ms for an empty program), 4% of a hit.
 * The link renames SQLite's references (-Wl,--wrap) to these functions,
 * which open libm the first time one is called: never, in cachet. The statically
 * linked cachet (cachet/plugin.h) keeps the same references: were one ever
 * called, the libm it opened would be a second libc's, harmless for
 * functions that only compute. */
#include <dlfcn.h>
#include <stdlib.h>

/* The function of libm by that name. There is no error to return from
 * inside a math function, and a libm that cannot be opened means a broken
 * system (libc's own package ships it): abort rather than answer wrongly. */
static void *libm_function(const char *name)
{
	static void *libm;
	void *handle = __atomic_load_n(&libm, __ATOMIC_ACQUIRE);
	if (!handle) {
		handle = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
		if (!handle)
			abort();
		__atomic_store_n(&libm, handle, __ATOMIC_RELEASE);
	}
	void *fn = dlsym(handle, name);
	if (!fn)
		abort();
	return fn;
}

/* __wrap_NAME, with NAME's parameters (a parenthesised list) and the
 * arguments it passes on: libm's NAME, looked up on the first call. */
#define LIBM(name, params, args)                                                                   \
	double __wrap_##name params;                                                               \
	double __wrap_##name params                                                                \
	{                                                                                          \
		static double(*fn) params;                                                         \
		double(*f) params = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);                        \
		if (!f) {                                                                          \
			f = (double(*) params)libm_function(#name);                                \
			__atomic_store_n(&fn, f, __ATOMIC_RELEASE);                                \
		}                                                                                  \
		return f args;                                                                     \
	}
#define LIBM_UNARY(name)  LIBM(name, (double x), (x))
#define LIBM_BINARY(name) LIBM(name, (double x, double y), (x, y))

/* Keep in step with CACHET_SQLITE_LIBM in CMakeLists.txt. */
LIBM_UNARY(acos)
LIBM_UNARY(acosh)
LIBM_UNARY(asin)
LIBM_UNARY(asinh)
LIBM_UNARY(atan)
LIBM_UNARY(atanh)
LIBM_UNARY(cos)
LIBM_UNARY(cosh)
LIBM_UNARY(exp)
LIBM_UNARY(log)
LIBM_UNARY(sin)
LIBM_UNARY(sinh)
LIBM_UNARY(sqrt)
LIBM_UNARY(tan)
LIBM_UNARY(tanh)
LIBM_UNARY(trunc)
LIBM_BINARY(atan2)
LIBM_BINARY(fmod)
LIBM_BINARY(pow)
