"""The files ``spark-submit`` runs (``ingest.py``, ``reconstruct.py``) and their ``spark-defaults.conf``.

They ship inside the package so that an installed wheel has them too (``airflow.spark_apps_dir`` defaults here);
each is a few lines that call the job's ``main``. Nothing imports this package.
"""
