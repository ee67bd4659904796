"""Tests on fakes: no server, no model run (the splitters read the embedding model's tokenizer as data), nothing
from ../shared/data; the whole folder runs in under a minute."""
