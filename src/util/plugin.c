#include "cachet/plugin.h"

#include <dlfcn.h>
#include <stddef.h>

static int forbidden;

void plugin_forbid(void)
{
	forbidden = 1;
}

void *plugin_symbol(const char *path, const char *symbol, struct error *e)
{
	if (forbidden) {
		error_set(e,
		          "cannot load %s: this cachet is linked statically and hands runs that "
		          "need plugins to cachet-dynamic (a bug: this one was not handed over)",
		          path);
		return NULL;
	}
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	void *fn = h ? dlsym(h, symbol) : NULL;
	if (!fn) {
		const char *why = h ? "no entry point" : dlerror();
		error_set(e, "cannot load %s: %s", path, why ? why : "no entry point");
	}
	return fn;
}
