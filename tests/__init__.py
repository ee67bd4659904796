"""Keel's tests: fast ones on fakes in unit_tests/, the real parts in integration_tests/; the helpers here serve both."""
