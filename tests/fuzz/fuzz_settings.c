/*
 * libFuzzer target: the configuration file parser (cachet.conf in the cache
 * directory, which a shared cache's users all read, and the user's own).
 * Any text either loads or fails with a message; every value that loads
 * can be read back through the typed accessors.
 */
#include <stdint.h>
#include <stdlib.h>

#include "cli/settings.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct settings s = {0};
	struct error e = {0};
	if (settings_parse(&s, (const char *)data, size, "fuzz.conf", &e) == 0) {
		for (size_t i = 0; setting_defs[i].key; i++) {
			const char *key = setting_defs[i].key;
			switch (setting_defs[i].type) {
			case SETTING_STRING:
				(void)settings_str(&s, key);
				break;
			case SETTING_BOOL:
				(void)settings_bool(&s, key);
				break;
			case SETTING_SIZE:
				(void)settings_size(&s, key);
				break;
			case SETTING_INT:
				(void)settings_int(&s, key);
				break;
			case SETTING_RATE:
				(void)settings_rate(&s, key);
				break;
			case SETTING_DURATION:
				(void)settings_duration(&s, key);
				break;
			case SETTING_UMASK:
				(void)settings_umask(&s, key);
				break;
			case SETTING_LIST:
				settings_list_free(settings_list(&s, key));
				break;
			}
		}
	} else if (!e.msg[0]) {
		abort(); /* a failure always says why */
	}
	settings_free(&s);
	return 0;
}
