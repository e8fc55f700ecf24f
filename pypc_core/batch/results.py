"""Batch results: the lines of RESULTS.jsonl (or .csv), their blob files,
and the summary.

A result is deterministic: the same job gives the same line, byte for
byte, from any backend and any worker count, except ``wall_s`` (keys
sorted, no host paths, no timestamps).  Blobs (a screenshot, the files a
program wrote on its drives) are files in ``BLOBS/job-N/`` beside the
results, named in the result by their path relative to the results file.
"""

import base64
import csv
import io
import json
import os

CSV_COLUMNS = ("index", "id", "reason", "exit_code", "emulated_s", "wall_s", "console",
               "screen", "error")
FAILED = frozenset(("error", "invalid", "wall_timeout", "worker_crashed"))


def lost_result(spec, reason, wall_s):
    """The result of a job whose worker was killed (``wall_timeout``) or
    died (``worker_crashed``)."""
    text = ("the job passed its wall-clock limit; its worker was killed"
            if reason == "wall_timeout" else "the worker running the job died")
    return {"id": spec["id"], "index": spec["index"], "reason": reason, "exit_code": None,
            "error": text, "wall_s": round(wall_s, 4)}


def invalid_result(index, job_id, error):
    return {"id": job_id, "index": index, "reason": "invalid", "exit_code": None,
            "error": str(error), "wall_s": 0.0}


def dumps(result):
    """The result's line (sorted keys, compact, ASCII)."""
    return json.dumps(result, sort_keys=True, separators=(",", ":"))


def without_wall(result):
    return {k: v for k, v in result.items() if k != "wall_s"}


def place_blobs(result, blobs, blob_dir, relative_to):
    """Write ``blobs`` into ``blob_dir/job-N/`` and point the result at
    them (paths relative to ``relative_to``); with ``blob_dir`` None the
    blob is carried in the result as base64 instead."""
    if not blobs:
        return result
    folder = None
    if blob_dir is not None:
        folder = os.path.join(blob_dir, f"job-{result['index']}")
    videos = (result.get("video") or {}).get("files") or []
    for entry in [result.get("screenshot")] + list(result.get("files") or []) + list(videos):
        if not entry or "blob" not in entry:
            continue
        name = entry["blob"]
        data = blobs[name]
        if folder is None:
            del entry["blob"]
            entry["base64"] = base64.b64encode(data).decode("ascii")
            continue
        path = os.path.join(folder, *name.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(data)
        entry["blob"] = os.path.relpath(path, relative_to).replace(os.sep, "/")
    return result


def csv_text(results):
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in results:
        writer.writerow(["" if r.get(c) is None else r.get(c) for c in CSV_COLUMNS])
    return out.getvalue()


def summary(results):
    """[(reason, exit code, count)] sorted."""
    counts = {}
    for r in results:
        key = (r["reason"], r.get("exit_code"))
        counts[key] = counts.get(key, 0) + 1
    return sorted(((k[0], k[1], n) for k, n in counts.items()),
                  key=lambda t: (t[0], -1 if t[1] is None else t[1]))
