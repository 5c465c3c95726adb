/* libFuzzer target: the PSI file parser on arbitrary bytes. */
#include "pressure/psi_parse.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* An exact-size heap copy, so ASan sees any read past the end. */
  char *buf = malloc(size ? size : 1);
  if (!buf)
    return 0;
  memcpy(buf, data, size);
  struct psi_stats st;
  int rc = psi_parse(buf, size, &st);
  if (rc == 0 && ((!st.some.present && !st.full.present) ||
                  st.some.avg10 > 100.0 || st.some.avg60 > 100.0 ||
                  st.some.avg300 > 100.0 || st.full.avg10 > 100.0 ||
                  st.full.avg60 > 100.0 || st.full.avg300 > 100.0))
    abort(); /* the parser's promises */
  free(buf);
  return 0;
}
