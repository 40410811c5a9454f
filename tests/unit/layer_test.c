/* SPDX-License-Identifier: MIT */
/*
 * Linked with every object of one lib/ layer and nothing above it
 * (lib/local.mk): the link fails where a layer uses a higher one. Run, it
 * only says which layer linked.
 */
#include <stdio.h>

int main(void)
{
	printf("1..1\nok 1 - lib/%s links with only the layers below it\n",
	       LAYER);
	return 0;
}
