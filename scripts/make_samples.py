"""Regenerate the PDF in samples/ (the project writes its own sample documents).

    .venv/bin/python scripts/make_samples.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.pdf_factory import make_pdf  # noqa: E402

PAGES = [
    "Varden Island Annual Report. This report describes the island's harbour, its lighthouse, its school "
    "and the ferry service for the year.",
    "The Varden lighthouse was built in 1874 by the engineer Mara Holt. Its lamp can be seen from 22 nautical "
    "miles away. The lighthouse is painted red and white and is open to visitors on Saturdays.",
    "The island school has 48 pupils and two teachers. The ferry to the mainland leaves every morning at 7 am "
    "and returns at 5 pm. A return ticket costs 12 euros for adults and 6 euros for children.",
]

if __name__ == "__main__":
    target = make_pdf(ROOT / "samples" / "varden-island-report.pdf", PAGES, title="Varden Island Annual Report")
    print(target)
