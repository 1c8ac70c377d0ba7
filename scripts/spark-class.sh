#!/bin/sh
# Run a Spark daemon (master or worker) from the installed pyspark's own distribution:
# the brushfire image is then also a Spark node whose executors run Brushfire's Python.
# Usage: spark-class.sh org.apache.spark.deploy.worker.Worker spark://master:7077 ...
set -e
SPARK_HOME="$(python3 -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')"
export SPARK_HOME
exec "$SPARK_HOME/bin/spark-class" "$@"
