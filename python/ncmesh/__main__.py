from ncmesh.cli import app

app()
