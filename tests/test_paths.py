"""Shipped scenarios are package data, found the same way in a checkout and in a wheel."""

import os
from importlib import resources
from pathlib import Path

from ncmesh.paths import scenario, shipped
from ncmesh.simulate import load

ROOT = Path(__file__).resolve().parents[1]


def test_shipped_scenarios_sit_in_the_package_and_all_load():
    package = resources.files("ncmesh") / "scenarios"
    names = shipped()
    assert {"chain-5hop", "dumbbell", "honc-single-path"} <= set(names)
    for name in names:
        path = scenario(name)
        assert path == package / f"{name}.toml" and path.is_file()
        assert load(path).duration_s > 0


def test_a_path_is_taken_as_given():
    assert scenario("somewhere/else.toml") == Path("somewhere/else.toml")


def test_the_checkout_links_its_scenarios_directory_to_the_package():
    link = ROOT / "scenarios"
    assert link.is_symlink() and not os.path.isabs(os.readlink(link))
    assert link.resolve() == (resources.files("ncmesh") / "scenarios").resolve()
    # what the sweep files and the Rust tests name through the link
    assert (ROOT / "sweeps" / ".." / "scenarios" / "honc-single-path.toml").is_file()
