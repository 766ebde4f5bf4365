"""The Spark jobs: ``ingest`` and ``reconstruct``, each a package with a thin ``job.main()`` over pure
``DataFrame -> DataFrame`` steps (docs/ingest.md, docs/reconstruction.md); ``lifecycle_schedule`` is what both read
of the engine's schedule (the look-back)."""
