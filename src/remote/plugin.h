/* What each transport plugin exports (see backend.h). */
#ifndef CACHET_REMOTE_PLUGIN_H
#define CACHET_REMOTE_PLUGIN_H

#include "remote/backend.h"

const struct remote_backend *cachet_remote_plugin_v1(int kind, int abi)
    __attribute__((visibility("default")));

#endif
