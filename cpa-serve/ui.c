/* SPDX-License-Identifier: MIT */
#include <config.h>

#include "log.h"
#include "ui.h"

/* cpa-serve/ui_page.c, made from ui.html by the build */
extern const char cpa_serve_ui_html[];

void ui_answer(struct api_request *r, struct answer *a)
{
	(void)r;
	a->kind = ANSWER_TEXT;
	a->status = 200;
	a->text = cpa_strdup(cpa_serve_ui_html);
	a->content_type = "text/html; charset=utf-8";
}
