# SPDX-License-Identifier: GPL-2.0-only
"""The sections of bench/run (`make bench`), one module each, named by their
BENCH_ONLY name; common holds what they share, targets issue 13's targets.
Each section module has section_NAME (measures, writes its CSV files under
the output folder, returns its summary rows) and table (the summary as the
lines of the report)."""
