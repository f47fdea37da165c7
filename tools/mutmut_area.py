"""Mutation testing of one Python area of ncmesh with mutmut (the Python half of `make mutants`).

mutmut 3 expects a src/ layout with the tests beside it, which the package
(python/ncmesh, built in place by maturin) is not. So each run stages a copy
under target/mutmut/AREA: src/ncmesh (the package with its compiled _native
module), tests/, and a setup.cfg that says what to mutate and which tests to
run. Nothing is written into the package; the staging directory is made anew
each run and kept afterwards, so that `mutmut show NAME` there prints a
survivor's diff.

    .venv/bin/python tools/mutmut_area.py models    # or: store
    .venv/bin/python tools/mutmut_area.py models --only 'ncmesh.models.bianchi.*'

It prints, per module, the mutants generated, killed and surviving, and
lists every mutant that no test killed. It fails only when mutmut cannot run;
survivors are reported, and docs/testing.md says why each one is harmless or
how it will be killed.
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Area:
    mutate: list[str]
    """Files to mutate, as globs under the staged src/."""
    tests: list[str]
    """The test files that cover them: mutmut runs, per mutant, those of their tests that reach the mutated function."""
    functions: list[str] = field(default_factory=list)
    """When set, only mutants of these functions (mutmut name globs) are run and counted."""


AREAS = {
    "models": Area(
        mutate=["src/ncmesh/models/*"],
        tests=[
            "tests/test_models_honc.py",
            "tests/test_models_interface.py",
            "tests/test_models_markov.py",
            "tests/test_models_num.py",
            "tests/test_models_tcp.py",
            # Bianchi's model is checked beside the 802.11 channel it predicts.
            "tests/test_wifi.py",
        ],
    ),
    # The store, and the parts of the sweep that decide what a resume runs
    # again: the run keys (plan), the skip set (run_sweep) and the row written (_record).
    "store": Area(
        mutate=["src/ncmesh/store.py", "src/ncmesh/sweep.py"],
        # The sweep tests of planning and resuming; the others run simulations for other reasons.
        tests=[
            "tests/test_store.py",
            *(
                f"tests/test_sweep.py::test_{name}"
                for name in [
                    "axes_cross_zips_and_ranges_expand",
                    "invalid_axis_value_plans_a_failed_run",
                    "resume_skips_done_runs_and_rerun_replaces_them",
                    "resume_tries_failed_runs_again",
                    "runs_go_to_fresh_worker_processes_by_default",
                    "null_runs_have_their_own_keys_and_no_metrics",
                ]
            ),
        ],
        functions=[
            "ncmesh.store.*",
            "ncmesh.sweep.x_plan__*",
            "ncmesh.sweep.x_run_sweep__*",
            "ncmesh.sweep.x__record__*",
        ],
    ),
}


def stage(area: Area, where: Path) -> None:
    shutil.rmtree(where, ignore_errors=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "python" / "ncmesh", where / "src" / "ncmesh", ignore=ignore, symlinks=True)
    shutil.copytree(ROOT / "tests", where / "tests", ignore=ignore)
    # Tests find the shipped scenarios at the project root, as in the checkout;
    # mutmut copies them (also_copy) beside the tests it runs.
    (where / "scenarios").symlink_to(Path("src", "ncmesh", "scenarios"))
    lines = [
        "[mutmut]",
        "source_paths=src/ncmesh",
        "also_copy=scenarios",
        "only_mutate=",
        *(f"    {glob}" for glob in area.mutate),
        "pytest_add_cli_args_test_selection=",
        *(f"    {test}" for test in area.tests),
        "",
        "[tool:pytest]",
        "filterwarnings = error",
        "",
    ]
    (where / "setup.cfg").write_text("\n".join(lines))


def results(where: Path, mutmut: Path) -> dict[str, str]:
    """Every mutant mutmut knows of in `where`, with its status."""
    out = subprocess.run([mutmut, "results", "--all", "true"], cwd=where, capture_output=True, text=True, check=True)
    found = (re.match(r"\s*(\S+): (.+)$", line) for line in out.stdout.splitlines())
    return {m[1]: m[2].strip() for m in found if m}


def module_of(name: str) -> str:
    """ncmesh.models.honc.x_delay_one_hop__mutmut_3 -> ncmesh.models.honc"""
    return re.split(r"\.x_|\.xǁ", name, maxsplit=1)[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("area", choices=sorted(AREAS))
    parser.add_argument(
        "--only",
        nargs="+",
        metavar="GLOB",
        help="run only the mutants these mutmut name globs match (survivors again, after new tests)",
    )
    args = parser.parse_args()
    area = AREAS[args.area]
    if args.only:
        area = replace(area, functions=args.only)
    where = ROOT / "target" / "mutmut" / args.area
    mutmut = Path(sys.executable).with_name("mutmut")
    stage(area, where)
    run = subprocess.run([mutmut, "run", *area.functions], cwd=where)
    statuses = results(where, mutmut)
    if run.returncode != 0 or not statuses:
        print(f"mutmut failed in {where} (exit status {run.returncode})", file=sys.stderr)
        return 1
    if area.functions:
        from fnmatch import fnmatch

        statuses = {k: v for k, v in statuses.items() if any(fnmatch(k, f) for f in area.functions)}
    by_module: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for name, status in statuses.items():
        by_module[module_of(name)][status] += 1
    print(f"\n{'module':32} {'generated':>9} {'killed':>7} {'surviving':>9}  other")
    for module, counts in sorted(by_module.items()):
        other = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()) if s not in ("killed", "survived"))
        total = sum(counts.values())
        print(f"{module:32} {total:9} {counts['killed']:7} {counts['survived']:9}  {other}")
    alive = sorted(name for name, status in statuses.items() if status != "killed")
    if alive:
        print(f"\nNot killed (see each with `mutmut show NAME` in {where.relative_to(ROOT)}):")
        for name in alive:
            print(f"    {name}: {statuses[name]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
