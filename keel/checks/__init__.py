"""Answer checks: pure functions over the question, the evidence and an answer, that judge it,
clean it or name what is wrong with it. No model calls, no I/O."""
