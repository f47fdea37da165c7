"""Predicts the NEON product's speed on Arm cores with LLVM's scheduling models.

No Arm machine has measured the `neon` tier yet. Until one does, this runs
`llvm-mca` on the inner loop of ncmesh's NEON matrix product, as rustc
compiles it for AArch64, and on the inner loop of ISA-L's NEON encoder
(`gf_5vect_dot_prod_neon`, which `ec_encode_data_neon` runs for five
outputs at a time), and prints cycles per multiply-add of 16 bytes on each
core model. These are a model's predictions, not measurements.

Needs Debian's `llvm` (llvm-mca), `binutils-aarch64-linux-gnu` and rustup's
`aarch64-unknown-linux-gnu` target; fetches `libisal2:arm64` with
`apt-get download`. Run from the repository root:

    python3 tools/neon_model.py
"""

from __future__ import annotations

import glob
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

# LLVM's scheduling model for each core: Cortex-A72 runs on A57's, which
# LLVM also gives the Neoverse N1 and the Cortex-A76.
CORES = {"cortex-a53": "Cortex-A53 (in order)", "cortex-a55": "Cortex-A55 (in order)", "cortex-a72": "Cortex-A57"}
ISAL_LOOP = "gf_5vect_dot_prod_neon"


def run(*cmd: str, cwd: str | None = None, env: dict[str, str] | None = None) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=cwd, env=env).stdout


def tool(*names: str) -> str:
    for name in names:
        if path := shutil.which(name):
            return path
    sys.exit(f"neon_model: none of {', '.join(names)} is installed")


def llvm_mca() -> str:
    found = sorted(glob.glob("/usr/bin/llvm-mca-*"), key=lambda p: int(p.rsplit("-", 1)[1]))
    return found[-1] if found else tool("llvm-mca")


BRANCH = re.compile(r"(b\.\w+|b|cbn?z|tbn?z)\s+(?:\S+,\s*)*(\S+)$")


def hottest_loop(lines: list[tuple[str, str]]) -> list[str]:
    """The branch-free loop with the most `tbl`s: `lines` are (label,
    instruction) pairs, and a loop runs from a label to a branch back to it."""
    position = {label: i for i, (label, _) in enumerate(lines) if label}
    best: tuple[int, list[str]] | None = None
    for end, (_, insn) in enumerate(lines):
        match = BRANCH.match(insn)
        start = position.get(match.group(2)) if match else None
        if start is None or start > end:
            continue
        body = [i for _, i in lines[start:end] if i]
        tbls = sum(i.startswith("tbl") for i in body)
        if tbls and not any(BRANCH.match(i) for i in body) and (best is None or tbls > best[0]):
            best = (tbls, body)
    if best is None:
        sys.exit("neon_model: no loop with tbl found")
    return best[1]


def ncmesh_loop(work: str) -> list[str]:
    env = dict(os.environ, CARGO_TARGET_DIR=os.path.join(work, "target"))
    run(
        "cargo",
        "rustc",
        "-q",
        "-p",
        "ncmesh-gf",
        "--release",
        "--lib",
        "--target",
        "aarch64-unknown-linux-gnu",
        "--",
        "--emit",
        "asm",
        "-C",
        "debuginfo=0",
        env=env,
    )
    asm = glob.glob(os.path.join(work, "target/aarch64-unknown-linux-gnu/release/deps/ncmesh_gf-*.s"))
    for path in asm:
        text = pathlib.Path(path).read_text().splitlines()
        name = re.compile(r"_ZN\S*neon4tier10map_matmul\S*:$")
        start = next((i for i, line in enumerate(text) if name.match(line)), None)
        if start is None:
            continue
        lines = []
        for line in text[start + 1 :]:
            if ".cfi_endproc" in line:
                break
            if m := re.match(r"(\.LBB\w+):", line):
                lines.append((m.group(1), ""))
            elif line.startswith("\t") and not line.startswith("\t."):
                lines.append(("", line.strip().replace("\t", " ")))
        return hottest_loop(lines)
    sys.exit("neon_model: the NEON matrix product was not found in the AArch64 build")


def isal_loop(work: str) -> list[str]:
    run("apt-get", "download", "libisal2:arm64", cwd=work)
    deb = glob.glob(os.path.join(work, "libisal2_*_arm64.deb"))[0]
    run("dpkg", "-x", deb, os.path.join(work, "isal"))
    lib = glob.glob(os.path.join(work, "isal/usr/lib/aarch64-linux-gnu/libisal.so.2.*"))[0]
    defined = [line.split() for line in run(tool("aarch64-linux-gnu-nm"), "-D", "--defined-only", lib).splitlines()]
    start = next(int(address, 16) for address, _, name in defined if name == ISAL_LOOP)
    after = min(a for a in (int(address, 16) for address, _, _ in defined) if a > start)
    dump = run(
        tool("aarch64-linux-gnu-objdump"),
        "-d",
        "--no-show-raw-insn",
        f"--start-address={start:#x}",
        f"--stop-address={after:#x}",
        lib,
    )
    lines = []
    for line in dump.splitlines():
        if m := re.match(r"\s+([0-9a-f]+):\s+(.*)", line):
            insn = re.sub(r"\s*//.*", "", m.group(2))
            insn = re.sub(r"\s+<[^>]*>", "", insn).replace("\t", " ")
            lines.append((m.group(1), ""))
            lines.append(("", insn))
    return hottest_loop(lines)


def cycles_per_multiply_add(mca: str, loop: list[str], core: str, work: str) -> float:
    path = os.path.join(work, "loop.s")
    with open(path, "w") as f:
        f.write("\n".join(loop) + "\n")
    out = run(mca, "-mtriple=aarch64", f"-mcpu={core}", "-iterations=400", path)
    total = re.search(r"Total Cycles:\s+(\d+)", out)
    if total is None:
        sys.exit(f"neon_model: llvm-mca printed no cycle count for {core}")
    cycles = int(total.group(1))
    multiply_adds = sum(i.startswith("tbl") for i in loop) // 2
    return cycles / 400 / multiply_adds


def main() -> None:
    mca = llvm_mca()
    with tempfile.TemporaryDirectory() as work:
        loops = {"ncmesh": ncmesh_loop(work), "ISA-L": isal_loop(work)}
        print(f"{os.path.basename(mca)}; cycles per 16-byte multiply-add of each inner loop\n")
        for name, loop in loops.items():
            tbl = sum(i.startswith("tbl") for i in loop)
            print(f"- {name}: {len(loop)} instructions, {tbl // 2} multiply-adds a turn")
        print("\n| core model | ncmesh | ISA-L | ISA-L / ncmesh |\n|---|---|---|---|")
        for core, model in CORES.items():
            ours, theirs = (cycles_per_multiply_add(mca, loops[n], core, work) for n in ("ncmesh", "ISA-L"))
            print(f"| {model} | {ours:.2f} | {theirs:.2f} | {theirs / ours:.2f}x |")


if __name__ == "__main__":
    main()
