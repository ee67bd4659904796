"""Runtime plumbing: the embedded servers (Redis Stack, the Mongo-wire server, llama.cpp) and the
model files on disk, shared by keel/stores/ and keel/models/."""
