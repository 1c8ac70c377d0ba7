"""The lazy baseline of the Smoke paper: no lineage; every interaction re-runs each
affected view's group-by, with the filters that apply to it, as a Spark SQL job over
the source (held in Spark's in-memory cache, so no query re-reads the files).

Uses Spark through `capture.spark` (the one pyspark importer) and Spark SQL text from
`brushfire.sql`; one job per view and interaction.
"""

from __future__ import annotations

from brushfire import sql
from brushfire.baselines.base import Backend, Groups, SqlSession
from brushfire.capture.spark import get_spark, read_source, spark_errors
from brushfire.spec import models as m
from brushfire.views import source_fields

TABLE = "brushfire_src"


class SparkBackend(Backend):
    dialect = sql.SPARK

    def __init__(self, spec: m.DashboardSpec, layouts, master: str | None = None) -> None:
        self.spark = get_spark(master, app_name="brushfire-lazy-baseline")
        if spec.source.joins:  # the joined rows, as capture reads them
            from brushfire.capture.analyze import analyze_source

            df = analyze_source(self.spark, spec)
        else:
            df = read_source(self.spark, spec.source)
        used = sorted({f for v in spec.views for f in source_fields(v)}
                      | {p.field for p in spec.interactions.parameters})
        with spark_errors("caching the source for the lazy baseline"):
            df.select(*[sql.ident(c, sql.SPARK) for c in used]).createOrReplaceTempView(TABLE)
            self.spark.catalog.cacheTable(TABLE)
            self.spark.sql(f"SELECT count(*) FROM {TABLE}").collect()  # fill the cache now
        super().__init__(spec, layouts)

    def groups(self, view: str, where: str, cursor=None) -> Groups:
        mf = self.spec.view(view).aggregate.field
        mf = mf and sql.summed_sql(mf, sql.SPARK)  # null, NaN and ±inf skipped, as the engine
        order = self.spec.view(view).aggregate.order
        agg = f"sum(CAST({mf} AS DOUBLE)), count({mf})" if mf and not order else "CAST(NULL AS DOUBLE), 0"
        q = (f"SELECT {self.bar_sql[view]} AS k, count(*), {agg}, {self.stat_sql(view)} "
             f"FROM {TABLE} WHERE {where} GROUP BY 1")
        with spark_errors(f"running the group-by of view {view}"):
            return {r[0]: (r[1], r[2], r[3], r[4]) for r in self.spark.sql(q).collect()}

    def measure_kind(self, view: str) -> str:
        from brushfire.capture.spark import schema_kinds

        mf = self.spec.view(view).aggregate.field
        return schema_kinds(self.spark.table(TABLE)).get(mf, "number")

    def count(self, where: str, cursor=None) -> int:
        with spark_errors("counting the selected rows"):
            return self.spark.sql(f"SELECT count(*) FROM {TABLE} WHERE {where}").collect()[0][0]


class SparkSqlSession(SqlSession):
    """The `lazy` baseline's session: every view's group-by run again on Spark under the
    current filters, no lineage."""

    engine = "lazy"
