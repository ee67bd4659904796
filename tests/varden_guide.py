"""Two passages of a small guide to Varden (a lighthouse, a harbour), on which the evidence checks are tried
with fakes (unit_tests/test_answerability.py) and with real embeddings (integration_tests/test_answerability.py)."""

LIGHTHOUSE = ("The Varden lighthouse was built in 1874 by the engineer Mara Holt. "
              "Its lamp can be seen from 22 nautical miles away.")
HARBOUR = ("The harbour master of Varden is Jon Berg. "
           "Fishing boats may not moor at the ferry pier. The pier was rebuilt after the storm of 1990.")
PASSAGES = [(1, LIGHTHOUSE), (2, HARBOUR)]
SOURCES = ["lighthouse.pdf", "harbour.pdf"]
ONE_DOCUMENT = ["Varden Guide.pdf", "Varden Guide.pdf"]  # the two passages as pages of one document
