"""The ingest job: a date's landing files into ``events``, ``quarantine``, ``ingest_report`` and ``bindings``
(docs/ingest.md). ``job`` is the thin entrypoint (``main``, ``cli``); the other modules are its steps: ``check``
(each file streamed once before Spark), ``read``, ``screen``, ``logs``, ``records`` (``trace``, ``dump``),
``event``, ``parse``, over the grammar of ``patterns`` and the SQL helpers of ``sql``; ``catchup`` ingests the
look-back dates a date's reconstruction needs."""
