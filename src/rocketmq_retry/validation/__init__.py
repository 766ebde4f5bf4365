"""Great Expectations: the suites, the project, one date's validation run and its Data Docs."""
