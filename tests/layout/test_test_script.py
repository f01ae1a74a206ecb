"""scripts/test.sh's one option: an unknown argument is refused before any set-up or step runs."""

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_an_unknown_argument_is_refused_naming_the_one_accepted():
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "test.sh"), "--hevy"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2
    assert "unknown argument '--hevy'" in proc.stderr and "--heavy" in proc.stderr
    assert proc.stdout == ""  # nothing ran: no set-up, no step


def test_the_heavy_column_runs_only_with_the_flag():
    script = (ROOT / "scripts" / "test.sh").read_text()
    ort_cpp = [line for line in script.splitlines() if "--impl onnxruntime-web " in line]
    assert ort_cpp and all(line.startswith("  ") for line in ort_cpp)  # inside the `if (( heavy ))` block
    assert script.count("if (( heavy )); then") == 2
