/* Runs a fuzz target over every file of its corpus directory (seeds, what
 * `make fuzz` found, and any crash-* reproducers kept there) without
 * libFuzzer: `make check` replays them as regression tests with the
 * ordinary compiler, one PASS/FAIL line per target. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(void) {
  DIR *d = opendir(CORPUS);
  if (!d) {
    printf("FAIL: fuzz_replay.%s (no corpus %s)\n", TARGET, CORPUS);
    return 1;
  }
  static uint8_t buf[1 << 20];
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", CORPUS, e->d_name);
    FILE *f = fopen(path, "rb");
    if (!f)
      continue;
    size_t len = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, len); /* a crash fails the test program */
    n++;
  }
  closedir(d);
  printf("%s: fuzz_replay.%s (%d inputs)\n", n ? "PASS" : "FAIL", TARGET, n);
  return n ? 0 : 1;
}
