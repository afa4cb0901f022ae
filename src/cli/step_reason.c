#include "cli/step_reason.h"

#include <stdlib.h>
#include <string.h>

#include "cachet/buf.h"
#include "cachet/explain.h"
#include "cachet/step_name.h"

/* More than this many differences read as a list nobody acts on. */
#define DETAIL_ITEMS 2

char *step_reason_detail(struct store *s, const struct step *now)
{
	struct digest ident, weak;
	step_identity(now, &ident);
	if (!store_step_name_get(s, &ident, &weak) || digest_equal(&weak, &now->weak))
		return NULL;
	void *body;
	size_t len;
	struct error e = {0};
	if (store_get_step(s, &weak, &body, &len, &e) != 1)
		return NULL;
	struct step rec;
	int decoded = step_decode(body, len, &rec, &e) == 0;
	free(body);
	if (!decoded)
		return NULL;
	struct explain_list found = {0};
	explain_steps(now, &rec, &found);
	step_free(&rec);
	struct buf b;
	buf_init(&b);
	for (size_t i = 0; i < found.n && i < DETAIL_ITEMS; i++)
		buf_addf(&b, "%s%s", i ? "; " : "", found.items[i].text);
	if (found.n > DETAIL_ITEMS)
		buf_addf(&b, "; %zu more differences (cachet explain)", found.n - DETAIL_ITEMS);
	explain_list_free(&found);
	if (!b.len) {
		buf_free(&b);
		return NULL;
	}
	/* One line: the status file and the log hold one per step. */
	for (size_t i = 0; i < b.len; i++)
		if (b.data[i] == '\n')
			b.data[i] = ' ';
	return buf_detach(&b, NULL);
}
