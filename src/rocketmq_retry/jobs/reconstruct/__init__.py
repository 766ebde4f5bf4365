"""The reconstruction job: a date's events into ``transitions``, ``lifecycles``, ``dead_letters``,
``reconciliation`` and ``unattributed`` (docs/reconstruction.md). ``job`` is the thin entrypoint (``main``,
``cli``) and ``pipeline`` wires the pure steps: ``events`` (contract, identities, evidence; ``attribution``),
``facts``, ``tables`` (the engine's answers), ``attempts``, ``transitions``, ``lifecycles``, ``dead_letters``,
``reconciliation``."""
