"""Bad input on the command line and in the Python API: a one-line error that
names the file, line or option and what was expected, and exit status 2;
never a traceback."""

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

import ncmesh
from ncmesh import files
from ncmesh.cli import app
from ncmesh.store import Store

SCENARIO = """\
duration = 5
seed = 1
nodes = [1, 2]

[[links]]
between = [1, 2]
capacity = 1e6
delay = 0.01

[[flows]]
src = 1
dst = 2
app = "bulk"
"""


def refused(*args: str) -> str:
    """Runs the command line, checks it refused the input in one line with status 2, and gives the line."""
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = [line for line in result.output.splitlines() if line.startswith(("error:", "Error:"))]
    assert len(lines) == 1, result.output
    return lines[0]


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "base.toml"
    path.write_text(SCENARIO)
    return path


# ---------------------------------------------------------------- input files


def test_a_scenario_that_is_not_utf8_is_refused_at_the_line_of_the_first_bad_byte(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'duration = 5\nname = "caf\xe9"\n')
    line = refused("run", str(path))
    assert f"{path}:2: cannot read the scenario: byte 0xe9 at column 12 is not UTF-8" in line


def test_a_utf16_scenario_is_named_as_such(tmp_path):
    path = tmp_path / "utf16.toml"
    path.write_text("duration = 5\n", encoding="utf-16")
    assert "is UTF-16 text; expected UTF-8" in refused("run", str(path))


def test_an_empty_scenario_path_or_a_directory_is_refused(tmp_path):
    assert "empty path" in refused("run", "")
    assert f"{tmp_path}: cannot read the scenario: is a directory; expected a file" in refused("run", str(tmp_path))


def test_input_is_read_up_to_a_limit(tmp_path):
    path = tmp_path / "big.toml"
    path.write_bytes(b"#" * 2**20 + b"\n")
    with pytest.raises(files.InputFileError, match="larger than 0 MiB"):
        files.read_text(path, limit=2**19)
    assert files.read_text(path).startswith("#")


def test_the_python_api_raises_scenario_error_naming_a_non_utf8_file(tmp_path):
    path = tmp_path / "binary.toml"
    path.write_bytes(b"\x00\x01\xc9\xff\n")
    with pytest.raises(ncmesh.ScenarioError, match=rf"{path.name}:1: cannot read the scenario: byte 0xc9"):
        ncmesh.run(path)


def test_a_binary_sweep_file_is_refused_with_its_name(tmp_path):
    path = tmp_path / "sweep.toml"
    path.write_bytes(b"name = 'x'\n\xc9\x00\x00")
    assert f"{path}:2: file: cannot read the sweep file: byte 0xc9" in refused("sweep", str(path))


# ---------------------------------------------------------------- output paths


def test_write_atomically_refuses_a_directory_and_names_the_path_not_the_temporary(tmp_path):
    with pytest.raises(IsADirectoryError) as refusal:
        files.write_text_atomically(tmp_path, "x")
    assert refusal.value.filename == str(tmp_path)

    def fails(p: Path) -> None:
        raise PermissionError(13, "Permission denied", str(p))

    with pytest.raises(PermissionError) as refusal:
        files.write_atomically(tmp_path / "out.csv", fails)
    assert refusal.value.filename == str(tmp_path / "out.csv")
    assert os.listdir(tmp_path) == []


def test_an_output_path_in_the_way_is_one_line_naming_it(scenario, tmp_path):
    in_the_way = tmp_path / "file.txt"
    in_the_way.write_text("")
    assert refused("run", str(scenario), "--out", str(in_the_way)) == (
        f"error: {in_the_way}: exists and is not a directory"
    )
    assert refused("schema", "--out", str(tmp_path)) == f"error: {tmp_path}: is a directory; expected a file name"
    assert refused("schema", "--out", str(in_the_way / "schema.json")) == (
        f"error: {in_the_way}: exists and is not a directory"
    )
    assert in_the_way.read_text() == ""


def test_an_empty_output_path_is_refused_rather_than_taken_as_the_current_directory(scenario, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert "'--out': an empty path names no file" in refused("run", str(scenario), "--out", "")
    assert sorted(os.listdir(tmp_path)) == ["base.toml"]


# ---------------------------------------------------------------- stores


def stored(path: Path) -> Path:
    with Store(path) as s:
        s.record(
            {
                "key": "abcdef123456789",
                "sweep": "s",
                "params": {"links.0.loss": 0.1},
                "seed": 1,
                "status": "ok",
                "ncmesh_version": "0",
                "build": "b",
                "finished_at": "2024-01-01T00:00:00",
            }
        )
    return path


def test_a_store_that_is_not_one_is_refused_naming_it(scenario, tmp_path):
    not_sqlite = tmp_path / "notes.txt"
    not_sqlite.write_text("not a database\n" * 100)
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(f'scenario = "{scenario.name}"\n')
    for db in (not_sqlite, tmp_path):
        line = refused("sweep", str(sweep), "--db", str(db), "-j", "1")
        assert line.startswith(f"error: {db}: ") and "an SQLite file written by ncmesh sweep" in line
        assert refused("results", str(db)).startswith(f"error: {db}: ")
        assert refused("report", str(db), "--out", str(tmp_path / "r.html")).startswith(f"error: {db}: ")
    assert not_sqlite.read_text() == "not a database\n" * 100


def test_a_store_missing_a_column_or_holding_bad_json_is_named_with_what_is_wrong(tmp_path):
    dropped = stored(tmp_path / "dropped.sqlite")
    with Store(dropped) as s:
        s.db.execute("ALTER TABLE runs DROP COLUMN params")
    damaged = stored(tmp_path / "damaged.sqlite")
    with Store(damaged) as s, s.db:
        s.db.execute("UPDATE runs SET params = '{bad'")
    for command in (["results"], ["report", "--out", str(tmp_path / "r.html")]):
        line = refused(command[0], str(dropped), *command[1:])
        assert line == f"error: {dropped}: not a results store: table runs has no column params"
        line = refused(command[0], str(damaged), *command[1:])
        assert line.startswith(f"error: {damaged}: run abcdef123456: params: not JSON")
    exported = CliRunner().invoke(app, ["results", str(stored(tmp_path / "ok.sqlite")), "--format", "json"])
    [run] = json.loads(exported.output)
    assert run["links.0.loss"] == 0.1 and "params" not in run


# ---------------------------------------------------------------- sizes


def sweep_file(tmp_path: Path, scenario: Path, body: str) -> Path:
    path = tmp_path / "sweep.toml"
    path.write_text(f'scenario = "{scenario.name}"\n{body}')
    return path


def test_seed_counts_ranges_and_whole_sweeps_are_capped_at_a_million(scenario, tmp_path):
    path = sweep_file(tmp_path, scenario, "seeds = 1000000000\n")
    assert refused("sweep", str(path)) == f"error: {path}:2: seeds: expected at most 1,000,000 seeds, found 1000000000"
    path = sweep_file(tmp_path, scenario, '[axes]\n"links.0.loss" = { start = 0.0, stop = 0.1, num = 1000000000 }\n')
    line = refused("sweep", str(path))
    assert line.startswith(f"error: {path}:3: axes.links.0.loss: range has 1000000000 values")
    assert "at most 1,000,000" in line
    body = "seeds = 3\n[axes]\n"
    body += '"links.0.loss" = { start = 0.0, stop = 0.1, num = 1000 }\n'
    body += '"links.0.delay" = { start = 0.01, stop = 0.1, num = 1000 }\n'
    path = sweep_file(tmp_path, scenario, body)
    assert refused("sweep", str(path)) == (
        f"error: {path}:3: axes: the axes crossed and the seeds make 3,000,000 runs; "
        "that is surely a mistake (expected at most 1,000,000)"
    )


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["validate", "bianchi", "--stations", "1000000"], "--stations 1000000: expected counts from 1 to 500"),
        (["validate", "bianchi", "--stations", "1,,2"], "--stations 1,,2: expected comma-separated counts"),
        (["bench", "grid", "--size", "100000"], "'--size': 100000 is not in the range 2<=x<=200"),
        (["validate", "bianchi", "--duration", "nan"], "'--duration': nan is out of range; expected a finite number"),
        (["validate", "bianchi", "--duration", "inf"], "'--duration': inf is out of range; expected a finite number"),
        (["bench", "sim", "--loss", "nan"], "'--loss': nan is out of range; expected a finite number from 0 to 0.99"),
        (["bench", "sim", "--duration", "inf"], "'--duration': inf is out of range"),
        (["codec-demo", "--size-mb", "inf"], "'--size-mb': inf is out of range"),
    ],
)
def test_sizes_and_floats_out_of_range_are_refused_naming_the_option(args, words):
    assert words in refused(*args)


def help_of(*args: str) -> str:
    return " ".join(CliRunner().invoke(app, [*args, "--help"]).output.split())


def test_bounds_are_stated_in_the_help():
    assert "x<=200" in help_of("bench", "grid")
    assert "1 to 500 each" in help_of("validate", "bianchi")
    assert "at least 1" in help_of("bench", "sim")


# ---------------------------------------------------------------- option values


def test_reproduce_refuses_fewer_than_one_job_as_sweep_does(tmp_path):
    for jobs in ("0", "-3"):
        line = refused("reproduce", "honc2012", "--quick", "--jobs", jobs, "--out", str(tmp_path / "out"))
        assert f"'--jobs': {jobs} is not in the range x>=1" in line
    assert not (tmp_path / "out").exists()


def test_a_dask_address_that_is_not_one_is_refused_before_any_run(scenario, tmp_path):
    pytest.importorskip("distributed")
    sweep = sweep_file(tmp_path, scenario, "")
    line = refused("sweep", str(sweep), "--db", str(tmp_path / "r.sqlite"), "--dask", "notaurl")
    assert line.startswith("error: --dask notaurl: expected 'local' or a scheduler address such as tcp://HOST:8786")
    assert not (tmp_path / "r.sqlite").exists()
    line = refused("reproduce", "honc2012", "--quick", "--dask", "notaurl", "--out", str(tmp_path / "out"))
    assert line.startswith("error: --dask notaurl: expected 'local'")


def test_seeds_the_store_cannot_hold_are_refused_before_any_run(scenario, tmp_path):
    sweep = sweep_file(tmp_path, scenario, "seeds = [1, 18446744073709551615]\n")
    assert refused("sweep", str(sweep), "--db", str(tmp_path / "r.sqlite")) == (
        f"error: {sweep}:2: seeds: expected a seed from 0 to 2**63 - 1 (the store's integers), "
        "found 18446744073709551615"
    )
    assert not (tmp_path / "r.sqlite").exists()


def test_a_seed_out_of_range_names_the_option_or_the_argument(scenario):
    assert "'--seed': 18446744073709551615 is not in the range 0<=x<=9223372036854775807" in refused(
        "run", str(scenario), "--seed", str(2**64 - 1)
    )
    with pytest.raises(ncmesh.ScenarioError, match=r"^seed: expected an integer from 0 to 2\*\*63 - 1, found -1$"):
        ncmesh.run(scenario, seed=-1)
    with pytest.raises(ncmesh.ScenarioError, match=r"^seed: .* found 18446744073709551616$"):
        ncmesh.run(scenario, seed=2**64)
    for seed in (1.7, "abc", True):
        with pytest.raises(TypeError, match=rf"^seed: expected an integer .* \({type(seed).__name__}\)$"):
            ncmesh.run(scenario, seed=seed)
    assert ncmesh.run(scenario, seed=2**63 - 1).sim_time_s == 5


# ---------------------------------------------------------------- --where


@pytest.mark.parametrize(
    "where",
    [
        "1=1; COPY (SELECT 42) TO '{out}'",
        "1=1; DROP VIEW runs",
        "seed = 1 ORDER BY seed",
        "seed = 1, seed = 2",
    ],
)
def test_where_is_one_condition_and_runs_no_other_statement(tmp_path, where):
    db, out = stored(tmp_path / "r.sqlite"), tmp_path / "written.csv"
    line = refused("results", str(db), "--where", where.format(out=out))
    assert "expected one SQL condition over the columns" in line
    assert not out.exists()


def test_where_reads_the_runs_and_no_file(tmp_path):
    db, secret = stored(tmp_path / "r.sqlite"), tmp_path / "secret.csv"
    secret.write_text("a\n1\n")
    line = refused("results", str(db), "--where", f"seed = (SELECT max(a) FROM read_csv('{secret}'))")
    assert "file system operations are disabled" in line
    kept = CliRunner().invoke(app, ["results", str(db), "--where", "\"links.0.loss\" > 0 AND status = 'ok' -- note"])
    assert kept.exit_code == 0 and len(kept.output.splitlines()) == 2


# ---------------------------------------------------------------- the Python API


@pytest.mark.parametrize(
    ("value", "error", "words"),
    [
        (float("nan"), ValueError, "links.0.loss: expected a finite number, found nan"),
        (float("inf"), ValueError, "links.0.loss: expected a finite number, found inf"),
        (None, TypeError, "links.0.loss: expected a number, a string, a boolean, a list or a table, found None"),
        (object(), TypeError, "links.0.loss: expected a number, .* \\(object\\)"),
        (b"0.1", TypeError, "links.0.loss: expected a number, .* found b'0.1' \\(bytes\\)"),
        ([0.1, float("nan")], ValueError, r"links.0.loss\[1\]: expected a finite number"),
    ],
)
def test_an_override_python_cannot_put_in_a_scenario_names_its_key(scenario, value, error, words):
    with pytest.raises(error, match=f"^{words}"):
        ncmesh.run(scenario, links__0__loss=value)


def test_a_dictionary_scenario_names_the_key_of_a_value_json_cannot_hold():
    doc = {"duration": 5, "nodes": [1, 2], "links": [{"between": [1, 2], "capacity": 1e6, "delay": 0.01}]}
    doc["links"][0]["loss"] = float("nan")
    with pytest.raises(ncmesh.ScenarioError, match=r"^<dict>: links\[0\]\.loss: expected a finite number, found nan$"):
        ncmesh.run(doc)
    with pytest.raises(TypeError, match=r"^<dict>: duration: expected a number"):
        ncmesh.run({**doc, "duration": object()})


@pytest.mark.parametrize("scenario", [42, None, b"base.toml", []])
def test_a_scenario_of_another_type_is_told_what_is_accepted(scenario):
    with pytest.raises(TypeError, match=r"^scenario: expected a path \(str or os.PathLike\), TOML text or a mapping"):
        ncmesh.run(scenario)


def test_override_keys_are_strings(scenario):
    with pytest.raises(TypeError, match=r"^overrides: expected dotted keys such as 'links.0.loss', found 5$"):
        ncmesh.run(scenario, overrides={5: 0.1})
