"""Start-up of the one-shot commands, as a user types them: each run is a new process.

Runs each command ``--runs`` times (default 15) in a subprocess, after one warm-up run (which also
fills the CEL grammar cache, as a user's first run does), and prints the median and the fastest
wall time next to the bare interpreter (``python -c pass``) in the same run, plus the heavy modules
each command imported (``-X importtime``). The aim is under 0.4 s for ``--version``,
``eval``, ``compile`` and ``apply`` on one file. Figures only: never an assertion.

Runs without ``PYTHONDONTWRITEBYTECODE`` (set in some sandboxes and CI images): a user's Python
caches compiled modules, and compiling celmut's ~200 modules from source on every start adds
~0.1 s that no user pays.

    python benchmarks/startup_bench.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import table

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("fastapi", "uvicorn", "starlette", "kubernetes", "prometheus_client", "cryptography", "kubernetes_validate")
COMMANDS: list[tuple[str, list[str]]] = [
    ("python -c pass (floor)", ["-c", "pass"]),
    ("celmut --version", ["-m", "celmut", "--version"]),
    ("celmut --help", ["-m", "celmut", "--help"]),
    ("celmut eval 1+1", ["-m", "celmut", "eval", "1 + 1"]),
    (
        "celmut eval … --object pod.yaml",
        ["-m", "celmut", "eval", "object.spec.containers.map(c, c.name)", "--object", "examples/resources/pod.yaml"],
    ),
    ("celmut compile presets/gpu-slicing.yaml", ["-m", "celmut", "compile", "presets/gpu-slicing.yaml"]),
    (
        "celmut apply (one policy, one pod)",
        [
            "-m",
            "celmut",
            "apply",
            "policies/examples/add-managed-by-label.yaml",
            "-r",
            "examples/resources/pod.yaml",
        ],
    ),
    (
        "celmut apply (ApplyConfiguration policy, deployment)",
        [
            "-m",
            "celmut",
            "apply",
            "policies/examples/default-security-context.yaml",
            "-r",
            "examples/resources/deployment.yaml",
        ],
    ),
]


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def wall_time(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, *argv], cwd=ROOT, check=True, capture_output=True, env=ENV)
    return time.perf_counter() - start


def heavy_imports(argv: list[str]) -> str:
    """The heavy top-level packages the command imported."""
    command = [sys.executable, "-X", "importtime", *argv]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=ENV)
    imported = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in result.stderr.splitlines() if "|" in line}
    return ", ".join(sorted(imported & set(HEAVY))) or "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    rows = []
    floor = 0.0
    for name, argv in COMMANDS:
        wall_time(argv)  # warm-up: the page cache, the grammar cache
        samples = [wall_time(argv) for _ in range(runs)]
        median = statistics.median(samples)
        floor = floor or median
        rows.append(
            [name, f"{median * 1000:.0f}", f"{min(samples) * 1000:.0f}", f"{median / floor:.1f}x", heavy_imports(argv)]
        )
    print(
        table(
            f"Start-up, wall ms over {runs} runs (target < 400 ms)",
            ["command", "median", "fastest", "vs floor", "heavy imports"],
            rows,
        )
    )


if __name__ == "__main__":
    main()
