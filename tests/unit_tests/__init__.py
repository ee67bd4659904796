"""Tests on fakes only: no embedded server, no real model, nothing from ../shared/data; they run in seconds."""
