/* replay.c -- replays a fuzz target's seed corpus through the target, so that `make check`
 * exercises it with any compiler; the target traps on a broken promise. One TAP line per folder.
 * Folders are relative to $top_srcdir (set by the test harness), or given as arguments. Built
 * once per target (tests/fuzz/local.mk), each with its folders in PD_REPLAY_DIRS; without them,
 * the parser's corpus (tests/fuzz/corpus_parse) and the golden parse inputs. */
#include "config.h"
#include "base/base.h"
#include "tests/tap.h"

#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Run every regular file of `dir` (in name order) through the target; returns how many ran, or
 * -1 when the folder cannot be read. */
static int replay(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    if (PD_GROW(names, cap, n + 1)) break;
    names[n] = pd_strdup(e->d_name);
    if (names[n]) n++;
  }
  closedir(d);
  qsort(names, n, sizeof *names, by_name);
  int ran = 0;
  for (size_t i = 0; i < n; i++) {
    pd_buf path;
    pd_buf_init(&path);
    pd_buf_printf(&path, "%s/%s", dir, names[i]);
    char *data;
    size_t len;
    if (!path.oom && pd_read_file(path.data, &data, &len, NULL) == PD_OK) {
      LLVMFuzzerTestOneInput((const uint8_t *)data, len);
      pd_free(data);
      ran++;
    }
    pd_buf_free(&path);
    pd_free(names[i]);
  }
  pd_free(names);
  return ran;
}

#ifndef PD_REPLAY_DIRS
#define PD_REPLAY_DIRS "tests/fuzz/corpus_parse", "tests/golden/parse"
#endif

int main(int argc, char **argv) {
  static const char *const defaults[] = {PD_REPLAY_DIRS};
  const char *top = getenv("top_srcdir");
  if (argc > 1) {
    for (int i = 1; i < argc; i++) {
      int ran = replay(argv[i]);
      ok(ran >= 0, "%s: %d inputs replayed", argv[i], ran);
    }
  } else {
    for (size_t i = 0; i < PD_ARRAY_LEN(defaults); i++) {
      pd_buf dir;
      pd_buf_init(&dir);
      pd_buf_printf(&dir, "%s/%s", top ? top : ".", defaults[i]);
      int ran = dir.oom ? -1 : replay(dir.data);
      ok(ran > 0, "%s: %d inputs replayed", defaults[i], ran);
      pd_buf_free(&dir);
    }
  }
  return tap_done();
}
