"""``serve [--specs DIR] [--host H] [--port N] [--report DIR]``: a URL that makes any browser that opens it a column."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

from conformance.cli.lazy import on_use
from conformance.config import REPO_SPECS
from conformance.errors import ConformanceError

report = on_use("conformance.certify.report")
PageServer = on_use("conformance.gpu.backends.served", "PageServer")
devices = on_use("conformance.gpu.device", "devices")
id_pattern = on_use("conformance.plugin.expectations", "id_pattern")
ColumnRun = on_use("conformance.tools.serve", "ColumnRun")
load_packages = on_use("conformance.tools.serve", "load_packages")
one_line = on_use("conformance.certify.report.quote", "one_line")

PROGRESS_STEPS = 20  # terminal lines per column over its run (and one when it ends)


def _serve(args) -> int:
    patterns = [id_pattern(g) for g in args.cases or ()]
    packages = load_packages(
        Path(args.specs) if args.specs else REPO_SPECS,
        args.run_heavy,
        (lambda i: any(p.fullmatch(i) for p in patterns)) if patterns else None,
    )
    report_dir = Path(args.report) if args.report else None
    if report_dir is not None:  # refused now, not once the columns have run
        report.check_paths(report_dir / "column.json")
    runs: list = []
    lock = threading.Lock()

    def on_page(client):
        run = ColumnRun(client, packages, report_dir, reconnect_timeout=args.reconnect_timeout)
        with lock:
            if _enough(runs, args.columns):  # the columns asked for have finished: no new one starts
                client.close(f"this server takes no more columns ({args.columns} finished)")
                return
            runs.append(run)
        threading.Thread(target=run.run, name=f"column-{client.id}", daemon=True).start()

    try:
        server = PageServer(args.host, args.port, timeout=args.timeout, on_page=on_page)
    except OSError as err:
        raise ConformanceError(f"--host {args.host} --port {args.port}: cannot listen there ({err})") from None
    total = sum(len(c) for _, c, _ in packages)
    print(
        f"serving {len(packages)} package(s), {total} cases a column; open this URL in each browser to certify:\n"
        f"  {server.url}\n(requests without its token are refused; Ctrl-C stops)",
        flush=True,
    )
    shown: dict[str, int] = {}
    finished_at = None
    try:
        while True:
            with lock:
                current = list(runs)
            for run in current:
                _progress(run, shown)
            if _enough(current, args.columns) and all(r.done.is_set() for r in current):
                # never while a column runs: one that ended early must not cut another off; and not before each
                # page was sent its verdict, or had a batch's time to ask for it
                finished_at = finished_at or time.monotonic()
                if all(r.told for r in current) or time.monotonic() - finished_at > args.timeout:
                    break
            time.sleep(0.5)
    except KeyboardInterrupt:
        print("\ninterrupted: columns still running are not reported", file=sys.stderr)
    finally:
        server.close()
        devices.release()
    finished = [r for r in runs if r.done.is_set()]
    _finished_lines(runs, finished, report_dir)
    if server.refused:
        print(f"refused {server.refused} request(s) without the token")
    return 0 if finished and all(r.data["conforms"] for r in finished) else 1


def _enough(runs: list, columns: int) -> bool:
    """Whether ``--columns`` columns have finished."""
    return bool(columns) and sum(1 for r in runs if r.done.is_set()) >= columns


def _finished_lines(runs: list, finished: list, report_dir) -> None:
    """How many columns finished and which, each with its result and report (page-given text on one line)."""
    print(
        f"{len(finished)} column(s) finished"
        + (f": {', '.join(r.slug for r in finished)}" if finished else "")
        + (f"; {len(runs) - len(finished)} not finished (not reported)" if len(runs) > len(finished) else "")
    )
    for run in finished:
        print(
            f"{run.slug}: {run.data['result']}: {run.summary()}; device: "
            f"{one_line(report.device_line(run.data['device']))}"
        )
        if run.report_error:
            print(f"  report not written: {one_line(run.report_error)}")
        elif report_dir is not None:
            print(f"  report: {report_dir / (run.slug + '.json')}")
        if run.error:
            print(f"  {one_line(run.error)}")


def _progress(run: ColumnRun, shown: dict) -> None:
    """A line when a column connects, every 1/PROGRESS_STEPS of its cases, and when it ends."""
    done, step = len(run.verdicts), max(1, run.total // PROGRESS_STEPS)
    last = shown.get(run.client.id)
    if last is None and not run.client.generation:  # made for a page whose hello is not through yet: no agent
        return
    if last is None:
        print(f"{run.client.id}: connected: {one_line(run.client.user_agent)}", flush=True)
    if run.device and (run.client.id, "device") not in shown:
        shown[(run.client.id, "device")] = True
        print(f"{run.slug}: device: {one_line(run.device)}", flush=True)
    if last is not None and (done == last or (done // step == last // step and done < run.total)):
        return
    shown[run.client.id] = done
    if last is not None or done:
        print(f"{run.slug}: {done} / {run.total} cases, {run.failed} failed so far", flush=True)


def register(sub) -> None:
    p = sub.add_parser("serve", help="serve a page: every browser that opens its URL runs the cases as one column")
    p.add_argument("--specs", default=None, help="packages to certify (default: the shipped ones)")
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; 0.0.0.0 for other machines of the network)",
    )
    p.add_argument("--port", type=int, default=0, help="port (default: any free one)")
    p.add_argument("--report", default=None, help="write each column's report here as <column>.json, .md and .html")
    p.add_argument(
        "--columns", type=int, default=0, help="exit once this many columns have finished (default: serve until Ctrl-C)"
    )
    p.add_argument(
        "--cases",
        action="append",
        default=None,
        metavar="GLOB",
        help="only the case ids matching GLOB (* and ? wildcards; repeat for more)",
    )
    p.add_argument("--run-heavy", action="store_true", help="include the cases with hundreds of MB of buffers")
    p.add_argument(
        "--timeout",
        type=float,
        default=25.0,
        help="seconds a page may take to answer one batch before the case fails (default 25)",
    )
    p.add_argument(
        "--reconnect-timeout",
        type=float,
        default=600.0,
        help="seconds a column waits for its page to come back (a reload, a crashed tab) before its "
        "remaining cases are not run (default 600)",
    )
    p.set_defaults(func=_serve)
