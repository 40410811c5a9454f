/* SPDX-License-Identifier: MIT */
/*
 * GET /ui: the fleet page, cpa-serve/ui.html built into the program. It
 * is public as /openapi.json is, for it holds no data: it asks
 * /v1/history, with the user's token, for cpa-render's pictures of the
 * range and filters picked (the host's store, or with --clickhouse the
 * fleet's), and shows them in a frame that cannot read the token.
 */
#ifndef CPA_SERVE_UI_H
#define CPA_SERVE_UI_H

#include "api.h"

void ui_answer(struct api_request *r, struct answer *a);

#endif
