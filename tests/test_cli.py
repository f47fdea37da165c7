"""The command line."""

from typer.testing import CliRunner

from ncmesh.cli import app


def test_demo_decodes_and_verifies_the_file():
    result = CliRunner().invoke(app, ["codec-demo", "--quick", "--loss", "0.2"])
    assert result.exit_code == 0, result.output
    assert "verified" in result.output
    assert "source -> relay" in result.output


def test_unreadable_file_is_a_clear_error():
    result = CliRunner().invoke(app, ["codec-demo", "--file", "no/such/file"])
    assert result.exit_code != 0
    assert "cannot read" in result.output
