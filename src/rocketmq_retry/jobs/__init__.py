"""The Spark jobs: ingest and reconstruct, each a thin main() over pure DataFrame -> DataFrame steps
(docs/ingest.md, docs/reconstruction.md)."""
