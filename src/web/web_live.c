/* The runs page's polling script (web/web_live.h). */
#include "web/web_live.h"

#define STR2(x) #x
#define STR(x) STR2(x)

const char WEB_LIVE_SCRIPT[] =
    "'use strict';\n"
    "(function () {\n"
    "  const table = document.getElementById('runs');\n"
    "  if (table === null) return;\n"
    "  const source = table.dataset.live;\n"
    "  let timer = null;\n"
    "  async function refresh() {\n"
    "    try {\n"
    "      const reply = await fetch(source, {credentials: 'same-origin', cache: 'no-store'});\n"
    "      if (!reply.ok) { stop(); return; }\n"
    "      const doc = new DOMParser().parseFromString(await reply.text(), 'text/html');\n"
    "      const fresh = doc.getElementById('runs');\n"
    "      const current = document.getElementById('runs');\n"
    "      if (fresh !== null && current !== null) current.replaceWith(document.adoptNode(fresh));\n"
    "    } catch (e) { stop(); }\n"
    "  }\n"
    "  function start() { if (timer === null) timer = setInterval(refresh, " STR(WEB_LIVE_INTERVAL_MS) "); }\n"
    "  function stop() { if (timer !== null) { clearInterval(timer); timer = null; } }\n"
    "  document.addEventListener('visibilitychange', function () {\n"
    "    if (document.hidden) stop(); else { refresh(); start(); }\n"
    "  });\n"
    "  if (!document.hidden) start();\n"
    "})();\n";
