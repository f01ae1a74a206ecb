"""``certify``: every case of the packages under ``--specs``, in a pytest that the checkout cannot steer.

A plain ``pytest`` in a pull request's checkout obeys that checkout: its ``pytest.ini`` / ``pyproject.toml`` /
``tox.ini`` / ``setup.cfg`` (``addopts`` such as ``-m`` or ``-p``), its ``conftest.py`` files, the
``PYTEST_ADDOPTS`` and ``PYTEST_PLUGINS`` variables, every installed plugin (autoloaded), and its own packages
first on ``sys.path``. ``certify`` runs pytest with none of them: in an empty scratch directory, with an empty
ini file there as the configuration (``-c``, ``--rootdir``), ``--noconftest``, plugin autoloading off and only
this suite's plugin (and xdist's, with ``--workers``) loaded, ``PYTEST_*`` variables dropped, and an interpreter
in isolated mode (``python -I``: no current directory, script directory, ``PYTHON*`` variables or user site on
``sys.path``) given this suite's own location. The packages and the report paths are made absolute first, from
where the command was typed, never resolved: a symlink in them is refused here and again in the scratch run. The
report is always written (``--report``) and the exit status is the report's.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from conformance.cli.lazy import on_use
from conformance.config import ADAPTER_REQUESTS, BACKENDS, CHECKOUT_VARIABLE, JS_RUNTIMES, REPO_SPECS, WEBGPU
from conformance.errors import ConformanceError

check_paths = on_use("conformance.certify.report", "check_paths")
check_no_links = on_use("conformance.files", "check_no_links")

#: Run by ``python -I -c``: this suite's root first on sys.path (argv[1]), then pytest on the rest.
BOOTSTRAP = "import sys; sys.path.insert(0, sys.argv.pop(1)); import pytest; sys.exit(pytest.main(sys.argv[1:]))"


def suite_root() -> Path:
    """The directory that holds this suite's packages (``conformance``, ``cases``, ``reference``)."""
    return Path(__file__).resolve().parents[2]


def pytest_command(args, scratch: Path) -> list[str]:
    """The isolated pytest command line for ``args`` (every path in it absolute)."""
    specs = named_path(args.specs, "--specs")
    if not specs.exists():
        raise ConformanceError(f"--specs {args.specs}: no such directory")
    report = check_paths(named_path(args.report, "--report"))[0]
    ini = scratch / "pytest.ini"
    ini.write_text("[pytest]\n", encoding="utf-8")
    argv = [
        sys.executable,
        "-I",
        "-c",
        BOOTSTRAP,
        str(suite_root()),
        "-c",
        str(ini),
        "--rootdir",
        str(scratch),
        "--noconftest",
        "-p",
        "no:cacheprovider",
        "-p",
        "conformance.plugin",
        "-q",
        "-rfE",
        "--pyargs",
        *targets(args),
        f"--specs={specs}",
        f"--conformance-report={report}",
        f"--device={args.device}",
        f"--webgpu={args.webgpu}",
        f"--impl={args.impl}",
        f"--divergences={args.divergences}",
    ]
    if args.adapter:
        argv.append(f"--adapter={args.adapter}")
    if getattr(args, "webgpu_adapter", None):
        argv.append(f"--webgpu-adapter={args.webgpu_adapter}")
    if args.expectations:
        argv.append(f"--expectations={named_path(args.expectations, '--expectations')}")
    if args.golden:
        argv.append(f"--golden={named_path(args.golden, '--golden')}")
    if args.run_heavy:
        argv.append("--run-heavy")
    if args.repro_dir:
        argv.append(f"--repro-dir={named_path(args.repro_dir, '--repro-dir')}")
    if args.workers:
        argv += ["-p", "xdist.plugin", "-n", str(args.workers)]
    return argv + [f"--rerun-as={rerun_prefix(args, specs, Path(report))}"]


def targets(args) -> list[str]:
    """What the isolated pytest collects: every case, or the ones ``--case`` names."""
    return [f"conformance.test_kernels::{case}" for case in getattr(args, "case", None) or ()] or [
        "conformance.test_kernels"
    ]


def rerun_prefix(args, specs: Path, report: Path) -> str:
    """This certify command as it reruns one case from anywhere (the case is appended as ``--case NAME``): the
    same interpreter, packages, device and options, paths absolute, the report written beside this run's as
    ``<name>-rerun.json`` (not over it), no workers or repros."""
    words = [
        sys.executable,
        *(["-P"] if sys.flags.safe_path else []),
        "-m",
        "conformance",
        "certify",
        "--specs",
        str(specs),
        "--device",
        args.device,
        "--webgpu",
        args.webgpu,
        "--impl",
        args.impl,
        "--divergences",
        args.divergences,
        "--report",
        str(report.with_name(f"{report.stem}-rerun.json")),
    ]
    if args.adapter:
        words += ["--adapter", args.adapter]
    if getattr(args, "webgpu_adapter", None):
        words += ["--webgpu-adapter", args.webgpu_adapter]
    if args.expectations:
        words += ["--expectations", str(Path(args.expectations).resolve())]
    if args.golden:
        words += ["--golden", str(Path(args.golden).resolve())]
    if args.run_heavy:
        words.append("--run-heavy")
    env = [f"PYTHONPATH={os.environ['PYTHONPATH']}"] if os.environ.get("PYTHONPATH") else []
    return " ".join(shlex.quote(w) for w in [*env, *words])


def named_path(path: str, flag: str) -> Path:
    """``path`` as typed, made absolute without resolving it: refused when a folder or file of it below the
    current directory is a symlink (a pull request's ``out -> /elsewhere``, ``kernel-cases -> /home``). Resolving
    first would hide the link from the scratch run, which checks every path again below the checkout."""
    check_no_links(Path(path), lambda message: ConformanceError(f"{flag} {message}"))
    return Path(os.path.abspath(path))


def isolated_environment() -> dict[str, str]:
    """This process's environment less what configures pytest, with plugin autoloading off."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env[CHECKOUT_VARIABLE] = os.getcwd()  # the scratch run refuses links below the checkout too
    return env


def _certify(args) -> int:
    with tempfile.TemporaryDirectory(prefix="conformance-certify-") as tmp:
        scratch = Path(tmp)
        argv = pytest_command(args, scratch)
        return subprocess.call(argv, cwd=scratch, env=isolated_environment())


def register(sub) -> None:
    p = sub.add_parser(
        "certify",
        help="run every conformance case in a pytest the checkout cannot configure "
        "(no conftest.py, ini files, addopts or autoloaded plugins)",
    )
    p.add_argument("--specs", default=str(REPO_SPECS), help="a directory of packages, or one package directory")
    p.add_argument("--device", default="auto", choices=sorted(BACKENDS) + ["all"])
    p.add_argument("--adapter", default=None)
    p.add_argument(
        "--webgpu-adapter",
        default=None,
        choices=ADAPTER_REQUESTS,
        help="a launched Chromium's WebGPU adapter: gpu, software or auto (pytest's --webgpu-adapter)",
    )
    p.add_argument("--webgpu", default="wgpu", choices=WEBGPU + JS_RUNTIMES + ("all",))
    p.add_argument("--impl", default="manifest")
    p.add_argument("--divergences", choices=("fail", "xfail"), default="fail")
    p.add_argument("--expectations", default=None, metavar="FILE")
    p.add_argument(
        "--golden", default=None, metavar="DIR", help="the kernel repository's golden files (as pytest's --golden)"
    )
    p.add_argument("--run-heavy", action="store_true")
    p.add_argument(
        "--repro-dir",
        default=None,
        metavar="DIR",
        help="standalone repros of an outside implementation's failures, one per group of identical "
        "ones, with DIR/index.md (as pytest's --repro-dir)",
    )
    p.add_argument(
        "--case",
        action="append",
        default=[],
        metavar="NAME",
        help="run only this case (its test name, test_case[...], as a failure's rerun line gives it); repeatable",
    )
    p.add_argument("--workers", "-n", type=int, default=0, metavar="N", help="pytest-xdist workers (default: none)")
    p.add_argument(
        "--report",
        default="conformance-report.json",
        metavar="PATH",
        help="the JSON report (and the Markdown and HTML ones beside it); default conformance-report.json",
    )
    p.set_defaults(func=_certify)
