/* replay_load.c -- runs the fuzz seed corpus (tests/fuzz/corpus_load) through the fuzz target
 * without libFuzzer, so `make check` covers it with any compiler: no input may crash or break
 * an invariant, valid_* files must load and bad_* files must not. */
#include "config.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "vm/ir/serialize.h"
#include "tests/tap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void) {
  const char *top = getenv("top_srcdir");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus_load", top ? top : ".");
  DIR *d = opendir(dir);
  if (!d) {
    printf("Bail out! cannot open %s\n", dir);
    return 1;
  }
  char *names[1024];
  size_t n = 0;
  for (struct dirent *e; (e = readdir(d)) && n < PD_ARRAY_LEN(names);)
    if (e->d_name[0] != '.') names[n++] = strdup(e->d_name);
  closedir(d);
  qsort(names, n, sizeof *names, by_name);
  ok(n >= 10, "the corpus has %zu files", n);
  for (size_t i = 0; i < n; i++) {
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    char *bytes;
    size_t len;
    pd_error err = {0};
    if (pd_read_file(path, &bytes, &len, &err)) {
      ok(0, "%s: %s", names[i], err.msg);
      pd_error_clear(&err);
      continue;
    }
    LLVMFuzzerTestOneInput((const uint8_t *)bytes, len); /* aborts on a broken invariant */
    pd_program *p = NULL;
    pd_status st = pd_program_from_bytes((const uint8_t *)bytes, len, &p, &err);
    if (strncmp(names[i], "valid_", 6) == 0)
      ok(st == PD_OK, "%s loads%s%s", names[i], err.msg ? ": " : "", err.msg ? err.msg : "");
    else if (strncmp(names[i], "bad_", 4) == 0)
      ok(st == PD_EFORMAT || st == PD_EUNSUPPORTED, "%s is refused: %s", names[i],
         err.msg ? err.msg : "(no message)");
    else
      ok(1, "%s replayed (%s)", names[i], pd_status_str(st));
    pd_program_free(p);
    pd_error_clear(&err);
    pd_free(bytes);
    free(names[i]);
  }
  return tap_done();
}
