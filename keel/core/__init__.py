"""The ground floor: settings, the graphs' state and plain text helpers; imports nothing of Keel."""
