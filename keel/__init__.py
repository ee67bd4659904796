"""Keel: grounded, cited answers from your documents with small language models.

The design card's folders (graph/, nodes/, chains/, retrievers/, loaders/) live at the top of the
repository and are installed as ``keel.graph``, ``keel.nodes``... (see pyproject.toml); the rest of
Keel lives in this folder. Everything is imported as ``keel.<package>``, so nothing collides with
the packages of the application Keel is embedded in.
"""

import logging

# A library leaves logging to its application: without this, Python's last-resort handler would
# print Keel's warnings on the stderr of every program that embeds it. The `keel` command and
# `keel serve` configure logging themselves (keel/cli/logs.py).
logging.getLogger(__name__).addHandler(logging.NullHandler())
