"""Tests on the real parts: llama.cpp, Redis Stack, the Mongo-wire server, real embeddings, the keel command, ../shared/data."""
