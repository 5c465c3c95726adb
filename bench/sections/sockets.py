# SPDX-License-Identifier: GPL-2.0-only
"""sockets: the read cost per 10k idle sockets (bench/socketscan: whole
walks by the iterator and sock_diag, and the marked scans)."""
import os
import re
import subprocess
import sys

from .common import BENCH, BUILD, write_csv

# The idle-socket read cost (issue 13 item 6): bench/socketscan (idle TCP
# sockets held open, readcost on <WindowClamp> alone, both scans, and the
# empty iter/tcp program as the floor), or BENCH_SOCKCOST, a tool that
# prints "ms_per_10k_idle=<ms>" (other key=value pairs go to sockets.csv).
SOCKCOST = os.environ.get("BENCH_SOCKCOST")
SOCKETSCAN = os.path.join(BENCH, "socketscan")


def socketscan():
    """Runs bench/socketscan; returns {scan: (us per 10k, us at 100k)}."""
    p = subprocess.run([sys.executable, SOCKETSCAN, "--repeat",
                        os.environ.get("BENCH_SOCKET_REPEAT", "3"), "--floor",
                        "--scans", "iter,sock_diag,marks,nsl"],
                       stdout=subprocess.PIPE, text=True,
                       env=dict(os.environ, BUILD=BUILD))
    sys.stdout.write(p.stdout)
    out, table = {}, False
    for line in p.stdout.splitlines():
        if line.startswith("scan "):
            table = True
            continue
        m = re.match(r"^(.*?)\s+((?:-?\d+\s+)+)$", line + " ") if table else None
        if m:
            nums = [float(x) for x in m.group(2).split()]
            out[m.group(1).strip()] = (nums[-2], nums[-1], nums[:-2])
    return p.returncode, out


def sockcost():
    """(BENCH_SOCKCOST's key=value pairs, None), or (None, why) if it failed."""
    p = subprocess.run([SOCKCOST], stdout=subprocess.PIPE, text=True,
                       env=dict(os.environ, BUILD=BUILD))
    res = {}
    for w in p.stdout.split():
        if "=" in w:
            k, v = w.split("=", 1)
            try:
                res[k] = float(v)
            except ValueError:
                res[k] = v
    if p.returncode != 0 or "ms_per_10k_idle" not in res:
        return None, ("not measured (%s failed: rc %d)"
                      % (os.path.basename(SOCKCOST), p.returncode))
    return res, None


def section_sockets(out):
    if SOCKCOST:
        res, why = sockcost()
        if why:
            return {"why": why}
    else:
        rc, table = socketscan()
        if rc != 0 or "iter" not in table:
            return {"why": "not measured (bench/socketscan failed: rc %d)" % rc}
        res = {"ms_per_10k_idle": table["iter"][0] / 1000.0,
               "ms_at_100k": table["iter"][1] / 1000.0}
        for k, (per10k, at100k, _) in table.items():
            key = k.replace(" ", "_")
            res["%s_us_per_10k" % key] = per10k
            res["%s_us_at_100k" % key] = at100k
        # Issue 23, item 3: what the marked scans add at the largest count
        # (18k idle sockets) over netstacklat alone, whose read is part of
        # the same callback.
        if "marks" in table and "nsl" in table:
            res["marks_us_at_most"] = table["marks"][2][-1]
            res["marks_added_us_at_most"] = (table["marks"][2][-1]
                                             - table["nsl"][2][-1])
    write_csv(os.path.join(out, "sockets.csv"), [res])
    return res
