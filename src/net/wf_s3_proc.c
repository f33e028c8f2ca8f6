/* wf_s3_proc.c - an AWS profile's credential_process (wf_s3.h): the
 * command run as the AWS CLI runs it (split as a POSIX shell splits
 * words, no shell), its JSON answer read as the CLI reads it. */
#include "net/wf_s3.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ARGS_MAX 64
#define OUT_MAX (64u << 10) /* the answer: a few hundred bytes */
#define WAIT_S 60           /* a process that prompts (MFA) gets this long */

extern char **environ;

/* cmd split into argv (quotes and backslashes as shlex in POSIX mode):
 * words written into buf; false when malformed or too many. */
static bool split(const char *cmd, char *buf, size_t cap, char **argv, size_t *argc)
{
	size_t n = 0, o = 0;
	const char *p = cmd;
	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == '\n')
			p++;
		if (!*p)
			break;
		if (n + 1 >= ARGS_MAX)
			return false;
		argv[n++] = buf + o;
		char q = 0;
		for (; *p && (q || (*p != ' ' && *p != '\t' && *p != '\n')); p++) {
			if (!q && (*p == '\'' || *p == '"')) {
				q = *p;
				continue;
			}
			if (q && *p == q) {
				q = 0;
				continue;
			}
			if (*p == '\\' && q != '\'' && p[1] && (!q || p[1] == '"' || p[1] == '\\' || p[1] == '$'))
				p++;
			if (o + 2 >= cap)
				return false;
			buf[o++] = *p;
		}
		if (q)
			return false; /* an open quote */
		buf[o++] = '\0';
	}
	argv[n] = NULL;
	*argc = n;
	return n > 0;
}

/* The process's stdout (into out) and last stderr line (into why), until
 * both close or WAIT_S pass. */
static bool drain(int fo, int fe, char *out, size_t *n, char *why, size_t wcap)
{
	struct pollfd p[2] = {{.fd = fo, .events = POLLIN}, {.fd = fe, .events = POLLIN}};
	char eb[4096];
	size_t en = 0;
	time_t end = time(NULL) + WAIT_S;
	while ((p[0].fd >= 0 || p[1].fd >= 0) && time(NULL) < end) {
		if (poll(p, 2, 1000) < 0 && errno != EINTR)
			return false;
		for (int i = 0; i < 2; i++) {
			if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			char *dst = i ? eb + en : out + *n;
			size_t room = i ? sizeof eb - 1 - en : OUT_MAX - *n;
			if (room == 0 && i) { /* keep the end of stderr: its last line */
				memmove(eb, eb + sizeof eb / 2, sizeof eb / 2);
				en = sizeof eb / 2 - 1;
				dst = eb + en, room = sizeof eb - 1 - en;
			}
			ssize_t r = room ? read(p[i].fd, dst, room) : 0;
			if (r <= 0) {
				close(p[i].fd);
				p[i].fd = -1;
			} else if (i) {
				en += (size_t)r;
			} else {
				*n += (size_t)r;
			}
		}
	}
	eb[en] = '\0';
	while (en && (eb[en - 1] == '\n' || eb[en - 1] == '\r'))
		eb[--en] = '\0';
	const char *last = strrchr(eb, '\n');
	last = last ? last + 1 : eb;
	size_t ln = strlen(last) < wcap ? strlen(last) : wcap - 1; /* a long line cut */
	memcpy(why, last, ln);
	why[ln] = '\0';
	bool done = p[0].fd < 0 && p[1].fd < 0;
	for (int i = 0; i < 2; i++)
		if (p[i].fd >= 0)
			close(p[i].fd);
	return done;
}

/* Runs argv with stdout and stderr piped; *status its exit status, or -1
 * when it ran past WAIT_S (then killed). */
static bool run(char **argv, char *out, size_t *n, char *why, size_t wcap, int *status)
{
	int po[2], pe[2];
	if (pipe2(po, O_CLOEXEC) != 0)
		return false;
	if (pipe2(pe, O_CLOEXEC) != 0) {
		close(po[0]), close(po[1]);
		return false;
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, po[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
	pid_t pid;
	int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(po[1]), close(pe[1]);
	if (rc != 0) {
		close(po[0]), close(pe[0]);
		snprintf(why, wcap, "%s", strerror(rc));
		*status = -2;
		return true;
	}
	bool done = drain(po[0], pe[0], out, n, why, wcap);
	if (!done)
		kill(pid, SIGKILL);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	*status = !done ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	return true;
}

/* The answer's string field name into out (cap bytes); false when absent. */
static bool field(const cJSON *j, const char *name, char *out, size_t cap)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
	if (!cJSON_IsString(v) || strlen(v->valuestring) >= cap)
		return false;
	snprintf(out, cap, "%s", v->valuestring);
	return true;
}

static enum wf_err answer(const char *out, size_t n, const char *profile, struct wf_http_sigv4 *sig, char *err)
{
	cJSON *j = cJSON_ParseWithLength(out, n);
	const cJSON *ver = cJSON_GetObjectItemCaseSensitive(j, "Version");
	enum wf_err rc = WF_OK;
	if (!cJSON_IsObject(j))
		rc = wf_fail(err, WF_ERR_IO, "the credential_process of profile %s did not print a JSON object", profile);
	else if (!cJSON_IsNumber(ver) || ver->valuedouble != 1)
		rc = wf_fail(err, WF_ERR_IO, "the credential_process of profile %s printed Version %s, not 1", profile,
			     cJSON_IsNumber(ver) ? "other" : "none");
	else if (!field(j, "AccessKeyId", sig->key, sizeof sig->key) ||
		 !field(j, "SecretAccessKey", sig->secret, sizeof sig->secret) || !sig->key[0] || !sig->secret[0])
		rc = wf_fail(err, WF_ERR_IO, "the credential_process of profile %s printed no AccessKeyId and "
			     "SecretAccessKey", profile);
	else if (!field(j, "SessionToken", sig->session, sizeof sig->session))
		sig->session[0] = '\0';
	cJSON_Delete(j);
	return rc;
}

enum wf_err wf_s3_process(const char *cmd, const char *profile, struct wf_http_sigv4 *sig, char *err)
{
	size_t len = strlen(cmd) + 1, argc = 0, n = 0;
	char *buf = malloc(len + 2), *argv[ARGS_MAX], *out = malloc(OUT_MAX + 1), why[WF_ERRLEN - 200];
	int status = 0;
	enum wf_err rc = WF_OK;
	if (!buf || !out)
		rc = wf_fail(err, WF_ERR_NOMEM, "out of memory");
	else if (!split(cmd, buf, len + 2, argv, &argc))
		rc = wf_fail(err, WF_ERR_IO, "the credential_process of profile %s is not a command line", profile);
	else if (!run(argv, out, &n, why, sizeof why, &status))
		rc = wf_fail(err, WF_ERR_IO, "the credential_process of profile %s: cannot run it: %s", profile,
			     strerror(errno));
	else if (status == -2)
		rc = wf_fail(err, WF_ERR_IO, "the credential_process of profile %s: cannot run %s: %s", profile, argv[0],
			     why);
	else if (status == -1)
		rc = wf_fail(err, WF_ERR_IO, "the credential_process of profile %s gave no answer in %d s", profile,
			     WAIT_S);
	else if (status != 0)
		rc = wf_fail(err, WF_ERR_IO, "the credential_process of profile %s exited %d%s%s", profile, status,
			     why[0] ? ": " : "", why);
	else
		rc = answer(out, n, profile, sig, err);
	free(buf);
	free(out);
	return rc;
}

/* ---- a container's credentials endpoint (ECS, EKS Pod Identity) ---- */

#define CONTAINER_HOST "http://169.254.170.2" /* the ECS agent, for a relative URI */
#define TOKEN_MAX 16384

static const char *env_set(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

/* As the SDKs allow a full URI: https anywhere, http only to a loopback
 * address or the container agents' link-local ones. */
static bool full_uri_ok(const char *url)
{
	if (strncmp(url, "https://", 8) == 0)
		return true;
	if (strncmp(url, "http://", 7) != 0)
		return false;
	char host[256];
	wf_http_host(url, host, sizeof host);
	char *colon = host[0] == '[' ? strchr(host, ']') : strrchr(host, ':');
	if (host[0] == '[' && colon)
		colon[1] = '\0';
	else if (colon)
		*colon = '\0';
	static const char *const ok[] = {"localhost", "[::1]", "169.254.170.2", "169.254.170.23", "[fd00:ec2::23]"};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
		if (strcmp(host, ok[i]) == 0)
			return true;
	unsigned a, b, c, d;
	char tail;
	return sscanf(host, "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) == 4 && a == 127 && b < 256 && c < 256 && d < 256;
}

/* The Authorization value: the token file's contents, else the variable's. */
static enum wf_err container_token(char *tok, size_t cap, char *err)
{
	tok[0] = '\0';
	const char *file = env_set("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"), *v = env_set("AWS_CONTAINER_AUTHORIZATION_TOKEN");
	if (file) {
		FILE *f = fopen(file, "re");
		size_t n = f ? fread(tok, 1, cap - 1, f) : 0;
		bool ok = f && !ferror(f) && (n < cap - 1 || feof(f));
		if (f)
			fclose(f);
		if (!ok)
			return wf_fail(err, WF_ERR_IO, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE %s: %s", file,
				       f ? "longer than 16 KiB" : strerror(errno));
		tok[n] = '\0';
	} else if (v) {
		snprintf(tok, cap, "%s", v);
	}
	size_t n = strlen(tok);
	while (n && (tok[n - 1] == '\n' || tok[n - 1] == '\r' || tok[n - 1] == ' '))
		tok[--n] = '\0';
	if (strpbrk(tok, "\r\n"))
		return wf_fail(err, WF_ERR_IO, "the container authorization token holds a line break");
	return WF_OK;
}

bool wf_s3_container_set(void)
{
	return env_set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") || env_set("AWS_CONTAINER_CREDENTIALS_FULL_URI");
}

enum wf_err wf_s3_container(struct wf_http_sigv4 *sig, char *err)
{
	const char *rel = env_set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"),
		   *full = env_set("AWS_CONTAINER_CREDENTIALS_FULL_URI");
	char url[2048], tok[TOKEN_MAX];
	if (rel)
		snprintf(url, sizeof url, "%s%s%s", CONTAINER_HOST, rel[0] == '/' ? "" : "/", rel);
	else if (full && full_uri_ok(full) && strlen(full) < sizeof url)
		snprintf(url, sizeof url, "%s", full);
	else
		return wf_fail(err, WF_ERR_IO, "AWS_CONTAINER_CREDENTIALS_FULL_URI: http only to a loopback address or "
			       "the container agent's (169.254.170.2, 169.254.170.23), else https");
	enum wf_err rc = container_token(tok, sizeof tok, err);
	if (rc != WF_OK)
		return rc;
	struct wf_http_req rq = {.url = url, .auth = tok[0] ? tok : NULL, .cap = OUT_MAX};
	struct wf_http_resp r;
	char why[WF_ERRLEN - 64];
	if ((rc = wf_http_do(NULL, &rq, &r, why)) != WF_OK)
		return wf_fail(err, WF_ERR_IO, "the container credentials endpoint: %s", why);
	cJSON *j = r.status == 200 ? cJSON_ParseWithLength((const char *)r.body, r.body_len) : NULL;
	free(r.body);
	if (r.status != 200)
		rc = wf_fail(err, WF_ERR_IO, "the container credentials endpoint answered HTTP %ld", r.status);
	else if (!field(j, "AccessKeyId", sig->key, sizeof sig->key) ||
		 !field(j, "SecretAccessKey", sig->secret, sizeof sig->secret) || !sig->key[0] || !sig->secret[0])
		rc = wf_fail(err, WF_ERR_IO, "the container credentials endpoint gave no AccessKeyId and SecretAccessKey");
	else if (!field(j, "Token", sig->session, sizeof sig->session))
		sig->session[0] = '\0';
	cJSON_Delete(j);
	return rc;
}
