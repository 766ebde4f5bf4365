"""The warehouse's floor: one date's partition of a table is committed as a unit (``partitions``: the protocol and
``committed``) over a plain path or a Hadoop file system (``partition_fs``). Every writer (the jobs) and reader
(compensation, explore, validation, the Airflow tasks) stands on it; it imports no room above it."""
