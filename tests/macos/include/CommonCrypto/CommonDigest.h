/* for mk/macos.mk: see ../../macos_decls.h, which names each declaration's source */
#include "../../macos_decls.h"
