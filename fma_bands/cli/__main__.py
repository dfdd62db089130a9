from fma_bands.cli import run

run()
