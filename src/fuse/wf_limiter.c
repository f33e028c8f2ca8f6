/* wf_limiter.c - the message limiter (see wf_limiter.h). */
#include "fuse/wf_limiter.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int wf_limiter_init(struct wf_limiter *l)
{
	memset(l, 0, sizeof *l);
	return pthread_mutex_init(&l->mu, NULL);
}

void wf_limiter_destroy(struct wf_limiter *l)
{
	pthread_mutex_destroy(&l->mu);
}

static bool power_of_ten(uint64_t n)
{
	while (n >= 10 && n % 10 == 0)
		n /= 10;
	return n == 1;
}

/* Emits line unless this window's budget is spent. */
static void rate(struct wf_limiter *l, uint64_t now, const char *line, wf_emit_fn emit, void *ctx)
{
	if (now - l->window_start >= WF_LOG_WINDOW || now < l->window_start) {
		if (l->suppressed) {
			char s[96];
			snprintf(s, sizeof s, "weightfs: %" PRIu64 " more messages were not shown",
				 l->suppressed);
			emit(ctx, s);
		}
		l->window_start = now;
		l->window_lines = l->suppressed ? 1 : 0;
		l->suppressed = 0;
	}
	if (l->window_lines >= WF_LOG_WINDOW_LINES) {
		l->suppressed++;
		return;
	}
	l->window_lines++;
	emit(ctx, line);
}

void wf_limiter_log(struct wf_limiter *l, uint64_t now, const char *msg, wf_emit_fn emit, void *ctx)
{
	char cur[WF_LOG_LINE];
	size_t n = strlen(msg);
	while (n && msg[n - 1] == '\n')
		n--;
	if (n >= sizeof cur)
		n = sizeof cur - 1;
	memcpy(cur, msg, n);
	cur[n] = '\0';

	pthread_mutex_lock(&l->mu);
	if (l->last_count && strcmp(cur, l->last) == 0) {
		l->last_count++;
		if (power_of_ten(l->last_count)) {
			char line[WF_LOG_LINE + 48];
			snprintf(line, sizeof line, "%s (repeated %" PRIu64 " times)", cur, l->last_count);
			l->last_said = l->last_count;
			rate(l, now, line, emit, ctx);
		}
	} else {
		if (l->last_count > l->last_said) {
			char line[96];
			snprintf(line, sizeof line, "weightfs: the message before came %" PRIu64 " times in all",
				 l->last_count);
			rate(l, now, line, emit, ctx);
		}
		memcpy(l->last, cur, n + 1);
		l->last_count = l->last_said = 1;
		rate(l, now, cur, emit, ctx);
	}
	pthread_mutex_unlock(&l->mu);
}
