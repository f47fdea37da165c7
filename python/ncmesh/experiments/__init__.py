"""Experiments built on :func:`ncmesh.run`: sweeps with their tables and plots."""
