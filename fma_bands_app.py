"""The script `fma-bands serve` runs: installed beside app_pages/, so the pages' links, written
from this folder ("app_pages/review.py"), resolve as they do from app.py in a checkout."""

from app_pages.main import run

run()
