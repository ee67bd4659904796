"""Texts about the island of Varden that several tests share: two passages of a small guide (a lighthouse, a
harbour), on which the evidence checks are tried with fakes and with real embeddings, and the three pages of
the island's annual report that the real-store tests ingest as a PDF."""

LIGHTHOUSE = ("The Varden lighthouse was built in 1874 by the engineer Mara Holt. "
              "Its lamp can be seen from 22 nautical miles away.")
HARBOUR = ("The harbour master of Varden is Jon Berg. "
           "Fishing boats may not moor at the ferry pier. The pier was rebuilt after the storm of 1990.")
PASSAGES = [(1, LIGHTHOUSE), (2, HARBOUR)]
SOURCES = ["lighthouse.pdf", "harbour.pdf"]
ONE_DOCUMENT = ["Varden Guide.pdf", "Varden Guide.pdf"]  # the two passages as pages of one document

# The annual report, one string a page: a title page, then the lighthouse and the school on pages of their own.
ISLAND_REPORT_PAGES = [
    "Varden Island Annual Report. This report describes the island's harbour, its lighthouse and its school.",
    "The Varden lighthouse was built in 1874 by the engineer Mara Holt. "
    "Its lamp can be seen from 22 nautical miles away. The lighthouse is painted red and white.",
    "The island school has 48 pupils and two teachers. The ferry to the mainland leaves every morning at 7 am.",
]
