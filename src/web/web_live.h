/* Live updates of the runs page without a reload: /live.js polls the runs table
 * (/runs/table with the page's own query) every WEB_LIVE_INTERVAL_MS while the tab is
 * visible, and stops while it is hidden (the Page Visibility API); the table arrives
 * rendered (and escaped) by the server and is put in place by DOMParser and
 * replaceWith, never innerHTML. Polling rather than server-sent events: a held
 * connection would take one of the page server's few connection slots per tab. */
#ifndef BASAL_WEB_WEB_LIVE_H
#define BASAL_WEB_WEB_LIVE_H

#define WEB_LIVE_INTERVAL_MS 3000

/* The script, served as /live.js (script-src 'self'). */
extern const char WEB_LIVE_SCRIPT[];

#endif
