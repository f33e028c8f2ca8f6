/* hftok_dump.c - writes the hf/ tokenizer files of a GGUF model
 * (wf_hf_tok_make) into a folder, for tests/mount/t_hftok.py.
 *
 *   hftok_dump MODEL.gguf OUTDIR
 *
 * Exit 0: files written; 3: refused (WF_ERR_UNSUP), the reason on stderr;
 * 1: any other failure. */
#include "model/wf_gguf.h"
#include "model/wf_hf_tok.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int put(const char *dir, const char *name, const char *p, size_t n)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
		perror(path);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: hftok_dump MODEL.gguf OUTDIR\n");
		return 2;
	}
	int fd = open(argv[1], O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
		perror(argv[1]);
		return 1;
	}
	void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	char err[WF_ERRLEN];
	struct wf_model *m = NULL;
	if (wf_gguf_parse(&m, p, (uint64_t)st.st_size, err) != WF_OK) {
		fprintf(stderr, "%s: %s\n", argv[1], err);
		return 1;
	}
	struct wf_hf_tok t;
	enum wf_err e = wf_hf_tok_make(m, &t, err);
	if (e != WF_OK) {
		fprintf(stderr, "%s: %s\n", argv[1], err);
		wf_model_free(m);
		munmap(p, (size_t)st.st_size);
		close(fd);
		return e == WF_ERR_UNSUP ? 3 : 1;
	}
	mkdir(argv[2], 0755);
	int bad = put(argv[2], "tokenizer.json", t.tokenizer_json, t.tokenizer_json_len) |
		  put(argv[2], "tokenizer_config.json", t.tokenizer_config_json, t.tokenizer_config_json_len) |
		  put(argv[2], "special_tokens_map.json", t.special_tokens_map_json, t.special_tokens_map_json_len);
	if (t.tokenizer_model)
		bad |= put(argv[2], "tokenizer.model", t.tokenizer_model, t.tokenizer_model_len);
	wf_hf_tok_free(&t);
	wf_model_free(m);
	munmap(p, (size_t)st.st_size);
	close(fd);
	return bad;
}
