/* Stand-ins for the two bytecode arrays the upstream qjs.c (build/quickjs/qjs.c) refers
 * to and the npm package of QuickJS 2021-03-27 does not ship: upstream generates them
 * with qjsc from repl.js and qjscalc.js. qjs.c uses qjsc_repl only in interactive mode
 * (no script argument, or -i) and qjsc_qjscalc only with --qjscalc (CONFIG_BIGNUM);
 * the contenders benchmark never asks for either, so they are empty here. Ours, not
 * upstream's: linked only into bench/contenders/out/qjs. */
#include <stdint.h>

extern const uint8_t qjsc_repl[];
extern const uint32_t qjsc_repl_size;
extern const uint8_t qjsc_qjscalc[];
extern const uint32_t qjsc_qjscalc_size;

const uint8_t qjsc_repl[1] = {0};
const uint32_t qjsc_repl_size = 0;
const uint8_t qjsc_qjscalc[1] = {0};
const uint32_t qjsc_qjscalc_size = 0;
