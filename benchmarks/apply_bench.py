"""Offline ``celmut apply`` of 2,000 realistic Pods through 20 policies vs. its I/O floor.

The floor is what the same interpreter needs to read the same YAML stream with libyaml's C loader
and write it as JSON with orjson (in a fresh process, like the command); a second floor does the
same with Python's cyclic garbage collector off. celmut runs ``celmut apply POLICIES -r pods.yaml -o
json`` (and ``-o yaml``) in a fresh process. The figure is the CPU time (user + system) of each
process, which a busy shared machine disturbs less than the wall clock; the runs are interleaved
(floor, json, yaml, floor, …) and each row is its median over ``--repeat``. Python bytecode is cached
(in a temporary directory) as in an installed celmut, even where ``PYTHONDONTWRITEBYTECODE`` is set.
``--baseline DIR`` adds the rows of the celmut package found in DIR (e.g. ``git archive main celmut |
tar -x -C DIR``), for a before/after in one run. Figures only, no assertions.

    python benchmarks/apply_bench.py [--pods 2000] [--repeat 3] [--baseline DIR] [--profile]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import table
from workloads import realistic_pod

from policies import benchmark_policies

FLOOR = """
import sys, orjson, yaml
with open(sys.argv[1]) as f:
    docs = [d for d in yaml.load_all(f.read(), Loader=yaml.CSafeLoader) if d is not None]
sys.stdout.buffer.write(orjson.dumps({"apiVersion": "v1", "kind": "List", "items": docs}, option=orjson.OPT_INDENT_2))
"""
# The same without Python's cyclic garbage collector, which at its default thresholds walks the
# millions of objects read over and over (celmut raises the thresholds): what reading costs at least.
FLOOR_NO_GC = "import gc; gc.disable()\n" + FLOOR


def cpu_seconds(command: list[str], env: dict[str, str], cwd: Path) -> float:
    """The CPU time (user + system) of one run of ``command`` (in ``cwd``: ``python -m`` imports from
    the working directory first, which must not be a checkout of celmut)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{command[:4]} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def interleaved(commands: dict[str, tuple[list[str], dict[str, str]]], repeat: int, cwd: Path) -> dict[str, float]:
    """The median CPU seconds of each command, run in turn ``repeat`` times (after one warm-up each,
    which also writes the bytecode cache)."""
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for round_ in range(repeat + 1):
        for name, (command, env) in commands.items():
            seconds = cpu_seconds(command, env, cwd)
            if round_:
                samples[name].append(seconds)
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", type=Path, help="a directory holding another celmut package to run beside")
    parser.add_argument("--profile", action="store_true", help="also print a cProfile of one celmut -o json run")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="celmut-apply-bench-"))
    try:
        run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)  # 11 MiB of Pods and a bytecode cache per run


def run(args: argparse.Namespace, work: Path) -> None:
    policy_dir = work / "policies"
    policy_dir.mkdir()
    for policy in benchmark_policies():
        (policy_dir / f"{policy['metadata']['name']}.yaml").write_text(yaml.safe_dump(policy))
    pods = [realistic_pod(f"checkout-{i}") for i in range(args.pods)]
    resources = work / "pods.yaml"
    resources.write_text(yaml.safe_dump_all(pods, sort_keys=False))
    size_mb = resources.stat().st_size / 2**20

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")  # bytecode cached, as pip install compiles it
    apply = [sys.executable, "-m", "celmut", "apply", str(policy_dir), "-r", str(resources)]
    commands = {
        "floor: libyaml read + orjson write": ([sys.executable, "-c", FLOOR, str(resources)], env),
        "floor, collector off": ([sys.executable, "-c", FLOOR_NO_GC, str(resources)], env),
    }
    packages = {"celmut": env}
    if args.baseline is not None:
        packages["baseline"] = {**env, "PYTHONPATH": str(args.baseline.resolve())}
    for package, package_env in packages.items():
        for fmt in ("json", "yaml"):
            commands[f"{package} apply -o {fmt}"] = ([*apply, "-o", fmt], package_env)
    runs = interleaved(commands, args.repeat, work)
    floor, strict = runs["floor: libyaml read + orjson write"], runs["floor, collector off"]
    print(
        f"{args.pods:,} Pods ({size_mb:.1f} MiB of YAML) through 20 policies (5 matching); "
        f"CPU seconds, median of {args.repeat}"
    )
    rows = [[n, f"{s:.2f}", f"{s / floor:.2f}×", f"{s / strict:.2f}×"] for n, s in runs.items()]
    print(table("", ["run", "CPU s", "× floor", "× floor, collector off"], rows))
    if args.profile:
        profile = work / "apply.prof"
        subprocess.run(
            [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "celmut", *apply[3:], "-o", "json"],
            stdout=subprocess.DEVNULL,
            env=env,
            cwd=work,
            check=False,
        )
        import pstats

        pstats.Stats(str(profile)).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
