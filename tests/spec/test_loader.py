"""Tests for brushfire.spec.loader: exact messages for broken specs, and column checks.

Each case under `bad/` is a small broken dashboard; the table pairs it with the exact text
of its `SpecError`, including the line of the offending key (checked by hand). Files are
loaded by a path relative to this folder, so the messages read `bad/<name>.yaml:<line>: ...`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from brushfire.errors import SpecError
from brushfire.spec import models as m
from brushfire.spec.checks import check_columns
from brushfire.spec.loader import load_dashboard, parse_dashboard

HERE = Path(__file__).parent

BAD = [
    # --- unknown keys: the accepted keys, and a hint (a close match, or where it belongs)
    ("unknown_key_view.yaml", """\
bad/unknown_key_view.yaml:7: views[0].titel: unknown key 'titel'
    a histogram view accepts: name, title, aggregate, brush, scale, reverse, type, field, bin, snap
    hint: did you mean 'title'?"""),
    ("unknown_key_bin.yaml", """\
bad/unknown_key_bin.yaml:11: views[0].bin.clmap: unknown key 'clmap'
    bin accepts: step, extent, maxbins, clamp
    hint: did you mean 'clamp'?"""),
    ("unknown_key_top_level.yaml", """\
bad/unknown_key_top_level.yaml:8: interaction: unknown key 'interaction'
    the dashboard accepts: name, title, source, views, interactions, profile, workload, layout
    hint: did you mean 'interactions'?"""),
    ("unknown_key_categorical.yaml", """\
bad/unknown_key_categorical.yaml:8: views[0].topp: unknown key 'topp'
    a categorical view accepts: name, title, aggregate, brush, scale, reverse, type, field, top, other, sort
    hint: did you mean 'top'?"""),
    ("unknown_key_other_view_type.yaml", """\
bad/unknown_key_other_view_type.yaml:9: views[0].top: unknown key 'top'
    a histogram view accepts: name, title, aggregate, brush, scale, reverse, type, field, bin, snap
    hint: 'top' is a key of a categorical view, not of a histogram view"""),
    ("unknown_key_heatmap_axis.yaml", """\
bad/unknown_key_heatmap_axis.yaml:11: views[0].y.clamp: unknown key 'clamp'
    a heatmap axis (x, y) accepts: field, bin, reverse
    hint: 'clamp' is a key of bin, not of a heatmap axis (x, y)"""),
    # --- interactions naming views that do not exist
    ("unknown_view_crossfilter.yaml", """\
bad/unknown_view_crossfilter.yaml:14: interactions.crossfilter[0].views[1]: unknown view 'origni'
    views: delay, origin
    hint: did you mean 'origin'?"""),
    ("unknown_view_highlight.yaml", """\
bad/unknown_view_highlight.yaml:14: interactions.highlight[0].source: unknown view 'carrier'
    views: delay, origin
    hint: a highlight source must name one of the views above
bad/unknown_view_highlight.yaml:17: interactions.highlight[0].targets[1]: unknown view 'distance'
    views: delay, origin
    hint: a highlight target must name one of the views above"""),
    # --- bins
    ("bin_step_zero.yaml", """\
bad/bin_step_zero.yaml:9: views[0].bin.step: bin step must be a number > 0, got 0
    hint: step is the width of one bin, in the field's units"""),
    ("bin_step_negative.yaml", """\
bad/bin_step_negative.yaml:10: views[0].y.bin.step: bin step must be a number > 0, got -10
    hint: step is the width of one bin, in the field's units"""),
    ("extent_reversed.yaml", """\
bad/extent_reversed.yaml:10: views[0].bin.extent: extent [180, -60] is empty: the first value must be below the second
    hint: write extent: [lo, hi] with lo < hi"""),
    ("bin_maxbins_and_step.yaml", """\
bad/bin_maxbins_and_step.yaml:8: views[0].bin: give either maxbins, or a step (and an extent): maxbins chooses the step and extent
    hint: keep maxbins for a nice step fitted to the data, or a step (and an extent) of your own"""),
    ("bin_maxbins_one.yaml", """\
bad/bin_maxbins_one.yaml:8: views[0].bin.maxbins: must be >= 2, got 1
    hint: values on both sides of 0 take two whole steps, so maxbins is at least 2"""),
    ("bin_without_step.yaml", """\
bad/bin_without_step.yaml:8: views[0].bin: bin has extent but no step
    hint: e.g. bin: {step: 10, extent: [0, 100]}, bin: {step: 10} (the extent fitted to the data) or bin: {maxbins: 20} (a nice step fitted to the data)"""),
    ("bin_empty.yaml", """\
bad/bin_empty.yaml:8: views[0].bin: bin needs a step (with an extent, or fitted to the data), or maxbins
    hint: e.g. bin: {step: 10, extent: [0, 100]}, bin: {step: 10} (the extent fitted to the data) or bin: {maxbins: 20} (a nice step fitted to the data)"""),
    ("categorical_sort_unknown.yaml", """\
bad/categorical_sort_unknown.yaml:8: views[0].sort: unsupported sort 'frequency'
    sort accepts: count, name
    hint: count: the most frequent value first; name: by value (either way '(other)' last)"""),
    ("temporal_unit_weekday.yaml", """\
bad/temporal_unit_weekday.yaml:8: views[0].unit: unsupported unit 'weekday'
    unit accepts: minute, hour, day, week, month, year, hour_of_day, day_of_week, month_of_year
    hint: for the day of the week use unit: day_of_week; for the hour of the day, hour_of_day"""),
    ("extent_empty.yaml", """\
bad/extent_empty.yaml:8: views[0].bin.extent: extent [500, 500] is empty: the first value must be below the second
    hint: write extent: [lo, hi] with lo < hi"""),
    ("extent_three_values.yaml", """\
bad/extent_three_values.yaml:10: views[0].bin.extent: expected two numbers [lo, hi], got [0, 1000, 3000]
    hint: e.g. extent: [0, 100]"""),
    # --- aggregates
    ("aggregate_median.yaml", """\
bad/aggregate_median.yaml:10: views[0].aggregate.op: unsupported aggregate op 'mode'
    op accepts: count, sum, mean, median, quantile, min, max, distinct
    hint: the most frequent value is the first bar of a categorical view of the field"""),
    ("aggregate_method_unknown.yaml", """\
bad/aggregate_method_unknown.yaml:13: views[0].aggregate.method: unsupported method 'nearest'
    method accepts: continuous, discrete"""),
    ("aggregate_quantile_without_p.yaml", """\
bad/aggregate_quantile_without_p.yaml:9: views[0].aggregate.p: aggregate op 'quantile' needs p, the fraction in [0, 1] (0.5: the median)
    hint: e.g. aggregate: {op: quantile, field: delay, p: 0.9} for the 90th percentile"""),
    ("aggregate_p_out_of_range.yaml", """\
bad/aggregate_p_out_of_range.yaml:12: views[0].aggregate.p: p must be a fraction in [0, 1], got 95
    hint: e.g. aggregate: {op: quantile, field: delay, p: 0.9} for the 90th percentile"""),
    ("aggregate_p_without_quantile.yaml", """\
bad/aggregate_p_without_quantile.yaml:9: views[0].aggregate.p: p is the fraction of op 'quantile'; op 'median' takes none
    hint: e.g. aggregate: {op: quantile, field: delay, p: 0.9} for the 90th percentile"""),
    # SQL's count(delay) counts the rows where delay is not null; count showed every row
    ("aggregate_count_with_field.yaml", """\
bad/aggregate_count_with_field.yaml:11: views[0].aggregate.field: aggregate op 'count' counts a bar's rows (SQL's count(*)) and takes no field; remove field
    hint: to count only the rows where a column is not null, give source.filters: ["<column> IS NOT NULL"]"""),
    ("aggregate_sum_without_field.yaml", """\
bad/aggregate_sum_without_field.yaml:9: views[0].aggregate.field: aggregate op 'sum' needs a field (the column to sum)
    hint: add field: <a numeric column>, or use op: count"""),
    ("aggregate_mean_without_field.yaml", """\
bad/aggregate_mean_without_field.yaml:8: views[0].aggregate.field: aggregate op 'mean' needs a field (the column to average)
    hint: add field: <a numeric column>, or use op: count"""),
    # --- brushes a view type cannot take
    ("brush_interval_on_categorical.yaml", """\
bad/brush_interval_on_categorical.yaml:8: views[0].brush: a categorical view cannot take an 'interval' brush
    categorical views take: points, none
    hint: leave brush out to get the default 'points'; 'interval' brushes are for histogram and temporal views"""),
    ("brush_rect_on_temporal.yaml", """\
bad/brush_rect_on_temporal.yaml:11: views[1].brush: a temporal view cannot take a 'rect' brush
    temporal views take: interval, none
    hint: leave brush out to get the default 'interval'; 'rect' brushes are for heatmap views"""),
    # --- layout: sections of rows of views, each view once
    ("layout_unknown_view.yaml", """\
bad/layout_unknown_view.yaml:9: layout[0].rows[0][1]: unknown view 'orgin'
    views: delay, origin
    hint: did you mean 'origin'?"""),
    ("layout_view_twice.yaml", """\
bad/layout_view_twice.yaml:11: layout[1].rows[0][0]: view 'delay' is placed twice
    hint: it is at layout[0].rows[0][0] already: remove one"""),
    ("layout_empty_row.yaml", """\
bad/layout_empty_row.yaml:9: layout[0].rows[0]: needs at least 1 item, got 0"""),
    ("layout_rows_as_names.yaml", """\
bad/layout_rows_as_names.yaml:7: layout[0]: expected a mapping, got ['delay']
    a section accepts: title, rows"""),
    # --- snap: interval and rect brushes only
    ("snap_without_brush.yaml", """\
bad/snap_without_brush.yaml:10: views[0].snap: snap is for a brush, and this view's brush is 'none'
    hint: remove snap, or the brush: none that keeps the view from being brushed"""),
    ("snap_on_categorical.yaml", """\
bad/snap_on_categorical.yaml:8: views[0].snap: unknown key 'snap'
    a categorical view accepts: name, title, aggregate, brush, scale, reverse, type, field, top, other, sort
    hint: 'snap' is a key of a histogram view, a temporal view, a heatmap view, not of a categorical view"""),
    # --- view types
    ("view_type_unknown.yaml", """\
bad/view_type_unknown.yaml:6: views[0].type: unknown view type 'pie'
    view types: histogram, temporal, categorical, heatmap
    hint: a bar per value of a field (text, categories) is categorical; bars of a number's bins are histogram; bars over time are temporal"""),
    ("view_type_misspelled.yaml", """\
bad/view_type_misspelled.yaml:6: views[0].type: unknown view type 'histgram'
    view types: histogram, temporal, categorical, heatmap
    hint: did you mean 'histogram'?"""),
    ("view_type_missing.yaml", """\
bad/view_type_missing.yaml:8: views[1].type: missing required key 'type'
    view types: histogram, temporal, categorical, heatmap"""),
    # a misspelled `type` key: pydantic sees only that 'type' is missing (the rest of the
    # view is not validated without it); the typo is the problem, at its line
    ("view_type_key_misspelled.yaml", """\
bad/view_type_key_misspelled.yaml:10: views[1].Type: unknown key 'Type': a view needs its 'type'
    view types: histogram, temporal, categorical, heatmap
    hint: did you mean 'type'?"""),
    # --- missing keys point at the mapping that lacks them
    ("missing_key_bin.yaml", """\
bad/missing_key_bin.yaml:5: views[0].bin: missing required key 'bin'
    a histogram view requires: name, type, field, bin"""),
    ("missing_key_source.yaml", """\
bad/missing_key_source.yaml:1: source: missing required key 'source'
    the dashboard requires: name, source, views"""),
    # a NUL in a path: a problem at its key, not ValueError from the file system calls
    ("path_nul.yaml", """\
bad/path_nul.yaml:4: source.path: a path cannot hold a NUL character (\\0); got 'flights\\x00.parquet'
bad/path_nul.yaml:8: workload.trace: a path cannot hold a NUL character (\\0); got 'traces/\\x00'"""),
    # (Path.expanduser raised RuntimeError: a traceback from validate)
    ("path_home_unknown.yaml", """\
bad/path_home_unknown.yaml:4: source.path: '~no-such-user-brushfire/flights.parquet': ~no-such-user-brushfire is a home directory, and no user 'no-such-user-brushfire' on this machine has one; write the path out
bad/path_home_unknown.yaml:8: workload.trace: '~no-such-user-brushfire/trace.json': ~no-such-user-brushfire is a home directory, and no user 'no-such-user-brushfire' on this machine has one; write the path out"""),
    # --- names
    ("duplicate_view_name.yaml", """\
bad/duplicate_view_name.yaml:8: views[1].name: duplicate view name 'origin'
    hint: views[0] has the same name; view names must be unique"""),
    ("parameter_name_clash.yaml", """\
bad/parameter_name_clash.yaml:10: interactions.parameters[0].name: parameter name 'origin' is already used by a view
    hint: parameters and views need distinct names"""),
    ("boolean_name.yaml", """\
bad/boolean_name.yaml:5: views[0].name: expected a string, got false
    hint: YAML reads yes/no/on/off/true/false as booleans: quote the value"""),
    ("dashboard_name.yaml", """\
bad/dashboard_name.yaml:1: name: 'US flights' is not a valid name
    hint: start with a letter or '_', then use letters, digits, '_' or '-'
bad/dashboard_name.yaml:4: views: needs at least 1 item, got 0"""),
    # --- parameters
    ("parameter_dropdown_range_op.yaml", """\
bad/parameter_dropdown_range_op.yaml:13: interactions.parameters[0].op: a dropdown parameter compares with 'eq', not 'lte'
    hint: use widget: slider to compare with lt, lte, gt or gte"""),
    ("parameter_slider_without_op.yaml", """\
bad/parameter_slider_without_op.yaml:10: interactions.parameters[0].op: a slider parameter needs a range op: lt, lte, gt, gte or between
    hint: add op: lt, lte, gt, gte or between, or use widget: dropdown for 'eq'"""),
    # --- not YAML, or not a mapping
    ("yaml_unclosed_bracket.yaml", """\
bad/yaml_unclosed_bracket.yaml:8: not valid YAML: expected ',' or ']', but got '}' (while parsing a flow sequence on line 8)
    hint: check the indentation, brackets and quotes on and above this line"""),
    ("yaml_tab_indent.yaml", """\
bad/yaml_tab_indent.yaml:6: not valid YAML: while scanning for the next token, found character '\\t' that cannot start any token
    hint: indent with spaces, not tabs"""),
    ("yaml_duplicate_key.yaml", """\
bad/yaml_duplicate_key.yaml:9: views[0].field: duplicate key 'field' (first on line 7)
    hint: YAML keeps only the last value: remove one of them"""),
    ("yaml_two_documents.yaml", """\
bad/yaml_two_documents.yaml:4: not valid YAML: expected a single document in the stream, but found another document
    hint: a spec file holds one dashboard: remove the second '---'"""),
    ("not_mapping_list.yaml", """\
bad/not_mapping_list.yaml:1: the document is a list, not a mapping
    a dashboard spec has the keys: name, title, source, views, interactions, profile, workload, layout
    hint: start the file with top-level keys, e.g. 'name: flights'"""),
    ("not_mapping_scalar.yaml", """\
bad/not_mapping_scalar.yaml:2: the document is a string, not a mapping
    a dashboard spec has the keys: name, title, source, views, interactions, profile, workload, layout
    hint: start the file with top-level keys, e.g. 'name: flights'"""),
    ("not_mapping_empty.yaml", """\
bad/not_mapping_empty.yaml:1: the document is empty, not a mapping
    a dashboard spec has the keys: name, title, source, views, interactions, profile, workload, layout
    hint: start the file with top-level keys, e.g. 'name: flights'"""),
    # --- YAML the loader refuses before walking it: alias bombs and cycles, deep nesting, bad bytes
    ("yaml_alias_bomb.yaml", """\
bad/yaml_alias_bomb.yaml:18: title: YAML aliases expand this to 48,427,561 values; a spec holds at most 100,000 (refusing what looks like an alias bomb)
    hint: write the values out, or use fewer nested aliases (*name)"""),
    ("yaml_alias_cycle.yaml", """\
bad/yaml_alias_cycle.yaml:9: a YAML alias refers to a value that contains it (a cycle)
    hint: write the value out instead of the alias"""),
    ("yaml_deep_nesting.yaml", """\
bad/yaml_deep_nesting.yaml:9: the document nests more than 64 levels deep
    hint: a dashboard spec needs fewer than 10 levels: check the brackets"""),
    ("yaml_not_utf8.yaml", """\
bad/yaml_not_utf8.yaml:9: cannot read spec: not UTF-8 text (byte 0xe9 at column 14; Latin-1 or Windows-1252 text?)
    hint: save the file as UTF-8"""),
    ("yaml_utf16.yaml", """\
bad/yaml_utf16.yaml:1: cannot read spec: the file is UTF-16 text, not UTF-8
    hint: save the file as UTF-8"""),
    ("yaml_control_character.yaml", """\
bad/yaml_control_character.yaml:5: not valid YAML: character #x0007 is not allowed in YAML (special characters are not allowed)
    hint: remove the control character (or write it as an escape in a quoted string)"""),
    ("yaml_lone_surrogate.yaml", """\
bad/yaml_lone_surrogate.yaml:4: source.path: 'flights\\ud800.parquet' holds a lone UTF-16 surrogate (U+D800), which is no Unicode character
    hint: write the character itself, or both halves of its pair (\\ud83d\\udd25 is 🔥)"""),
    ("yaml_python_tag.yaml", """\
bad/yaml_python_tag.yaml:9: not valid YAML: could not determine a constructor for the tag 'tag:yaml.org,2002:python/object/apply:os.system'
    hint: a spec holds plain YAML values: remove the '!!' tag"""),
    # a value its type cannot hold: PyYAML's constructors raise ValueError, AttributeError
    ("yaml_date_does_not_exist.yaml", """\
bad/yaml_date_does_not_exist.yaml:9: interactions.parameters[0].default: '2012-02-30' is not a valid date or time: day is out of range for month
    hint: write a date that exists, or quote the value to keep it as text"""),
    ("yaml_tag_on_a_word.yaml", """\
bad/yaml_tag_on_a_word.yaml:8: views[0].field: 'delay' is not a valid integer
    hint: remove the '!!int' tag, or write a value of that type"""),
    ("yaml_unhashable_key.yaml", """\
bad/yaml_unhashable_key.yaml:9: not valid YAML: found unhashable key (while constructing a mapping on line 1)
    hint: check the indentation, brackets and quotes on and above this line"""),
    # a key that is not text: at its own line (not its mapping's), as written (not None)
    ("yaml_key_number.yaml", """\
bad/yaml_key_number.yaml:9: views[0]: key 2001 is not a string
    hint: quote it: '2001'"""),
    ("yaml_key_null.yaml", """\
bad/yaml_key_null.yaml:6: source.columns: key ~ is not a string
    hint: quote it: '~'"""),
    ("yaml_unclosed_quote.yaml", """\
bad/yaml_unclosed_quote.yaml:9: not valid YAML: found unexpected end of stream (while scanning a quoted scalar on line 9)
    hint: check the indentation, brackets and quotes on and above this line"""),
    ("yaml_mapping_in_scalar.yaml", """\
bad/yaml_mapping_in_scalar.yaml:5: not valid YAML: mapping values are not allowed here
    hint: check the indentation, brackets and quotes on and above this line"""),
    # --- values of the wrong shape
    ("source_not_mapping.yaml", """\
bad/source_not_mapping.yaml:2: source: expected a mapping, got 'flights.parquet'
    source accepts: path, format, options, columns, filters, joins"""),
    # --- joins (source.joins): names, and `on` naming the source or a join above
    ("join_cycle.yaml", """\
bad/join_cycle.yaml:8: source.joins[0].on: the joins form a cycle: a -> b -> a
    hint: a join's on names a column of the source or of a join above it: reorder source.joins"""),
    ("join_extension_unknown.yaml", """\
bad/join_extension_unknown.yaml:5: source.joins[0].path: cannot tell the airport join's format: 'airports.txt' has extension '.txt'
    formats: parquet, csv, json, orc, delta
    hint: add format: parquet (or csv, json, orc) to source.joins[0]"""),
    ("join_name_derived_column.yaml", """\
bad/join_name_derived_column.yaml:7: source.joins[0].name: join name 'airport' is a derived column's name
    hint: a join's columns are <join>.<column>: give the join another name"""),
    ("join_name_dotted.yaml", """\
bad/join_name_dotted.yaml:5: source.joins[0].name: 'origin-airport' is not a valid name
    hint: a join's name prefixes its columns (<join>.<column>, in expressions too): letters, digits and '_', starting with a letter or '_'"""),
    ("join_name_duplicate.yaml", """\
bad/join_name_duplicate.yaml:6: source.joins[1].name: duplicate join name 'airport'
    hint: source.joins[0] has the same name; join names must be unique"""),
    ("join_column_quoted_whole.yaml", """\
bad/join_column_quoted_whole.yaml:5: source.columns.state: `airport.state` names a column called 'airport.state', which Spark does not have: the columns of join 'airport' are its fields
    hint: write airport.state or `airport`.`state`"""),
    ("join_name_duplicate_case.yaml", """\
bad/join_name_duplicate_case.yaml:6: source.joins[1].name: join name 'Airport' differs from source.joins[0]'s 'airport' only in case, and Spark reads names case-insensitively
    hint: give the join another name"""),
    ("join_on_derived_column.yaml", """\
bad/join_on_derived_column.yaml:7: source.joins[0].on: 'code' is a derived column, and derived columns are computed after the joins
    hint: join on a column of the source's files (a derived column may read the joined columns)"""),
    ("join_on_itself.yaml", """\
bad/join_on_itself.yaml:5: source.joins[0].on: join 'airport' is joined on its own column 'airport.iata'
    hint: name a column of the source, or of a join above this one"""),
    ("join_on_later_join.yaml", """\
bad/join_on_later_join.yaml:5: source.joins[0].on: 'orders.o_custkey' is a column of join 'orders', which is declared below this one
    hint: a join's on names a column of the source or of a join above it: reorder source.joins"""),
    ("join_unknown_key.yaml", """\
bad/join_unknown_key.yaml:5: source.joins[0].how: unknown key 'how'
    a join accepts: path, format, options, name, key, on
    hint: a join is SQL's LEFT JOIN, many-to-one (docs/spec.md, Joins): remove it"""),
    ("join_composite_key.yaml", """\
bad/join_composite_key.yaml:5: source.joins[0].key: expected a string, got ['origin', 'dest']
    hint: a join matches one column of the source with one of its table: a key of several columns (a composite key) is not supported; join on one column that holds them together, added to both tables' files
bad/join_composite_key.yaml:5: source.joins[0].on: expected a string, got ['origin', 'dest']
    hint: a join matches one column of the source with one of its table: a key of several columns (a composite key) is not supported; join on one column that holds them together, added to both tables' files"""),
    ("join_without_key.yaml", """\
bad/join_without_key.yaml:5: source.joins[0].key: missing required key 'key'
    a join requires: path, name, key, on"""),

    ("views_not_list.yaml", """\
bad/views_not_list.yaml:4: views: expected a list, got {'name': 'delay', 'type': 'histogram'}"""),
    ("view_not_mapping.yaml", """\
bad/view_not_mapping.yaml:5: views[0]: expected a mapping, got 'delay'"""),
    ("title_list.yaml", """\
bad/title_list.yaml:4: title: expected a string, got ['US', 'flights']"""),
    ("name_number.yaml", """\
bad/name_number.yaml:1: name: expected a string, got 2001
    hint: quote it to make it a string: '2001'"""),
    ("view_type_number.yaml", """\
bad/view_type_number.yaml:6: views[0].type: unknown view type '3'
    view types: histogram, temporal, categorical, heatmap"""),
    ("view_type_empty.yaml", """\
bad/view_type_empty.yaml:6: views[0].type: expected a view type, got nothing
    view types: histogram, temporal, categorical, heatmap
    hint: write one of the view types above, e.g. type: histogram"""),
    ("aggregate_not_mapping.yaml", """\
bad/aggregate_not_mapping.yaml:9: views[0].aggregate: expected a mapping, got 'sum'
    aggregate accepts: op, field, p, method
    hint: write aggregate: {op: sum, field: <column>}"""),
    ("crossfilter_names_not_groups.yaml", """\
bad/crossfilter_names_not_groups.yaml:10: interactions.crossfilter[0]: expected a mapping, got 'delay'
    a crossfilter group accepts: views"""),
    # --- the source
    ("source_format_unknown.yaml", """\
bad/source_format_unknown.yaml:4: source.format: unsupported format 'xlsx'
    format accepts: parquet, csv, json, orc, delta"""),
    ("source_extension_unknown.yaml", """\
bad/source_extension_unknown.yaml:3: source.path: cannot tell the source's format: 'flights.txt' has extension '.txt'
    formats: parquet, csv, json, orc, delta
    hint: add format: parquet (or csv, json, orc) to source"""),
    ("source_directory_without_format.yaml", """\
bad/source_directory_without_format.yaml:3: source.path: cannot tell the source's format: 'flights' has no extension
    formats: parquet, csv, json, orc, delta
    hint: add format: parquet (or csv, json, orc) to source"""),
    ("source_path_empty.yaml", """\
bad/source_path_empty.yaml:3: source.path: the path is empty
    hint: give the file or directory to read"""),
    ("source_path_missing.yaml", """\
bad/source_path_missing.yaml:2: source.path: missing required key 'path'
    source requires: path"""),
    ("source_option_boolean.yaml", """\
bad/source_option_boolean.yaml:6: source.options.header: expected a string, got true
    hint: YAML reads yes/no/on/off/true/false as booleans: quote the value"""),
    ("source_filters_not_list.yaml", """\
bad/source_filters_not_list.yaml:4: source.filters: expected a list, got 'delay > 0'"""),
    # --- derived columns and static filters: scalar expressions from the allow-list only (issue 13)
    ("derived_subquery_reads_file.yaml", """\
bad/derived_subquery_reads_file.yaml:5: source.columns.secret: SELECT is not allowed: a spec expression is a scalar expression over the source's columns, not a query (at character 2: 'SELECT max(value) FROM text.`/…')
    hint: only a deployment whose specs are trusted may set BRUSHFIRE_TRUSTED_EXPRESSIONS=1 (docs/spec.md, 'Expressions')"""),
    ("derived_reflect.yaml", """\
bad/derived_reflect.yaml:5: source.columns.who: function 'reflect' is not allowed in spec expressions: it calls Java methods (at character 1: "reflect('java.lang.System', 'g…")
    hint: only a deployment whose specs are trusted may set BRUSHFIRE_TRUSTED_EXPRESSIONS=1 (docs/spec.md, 'Expressions')"""),
    ("derived_java_method.yaml", """\
bad/derived_java_method.yaml:5: source.columns.who: function 'java_method' is not allowed in spec expressions: it calls Java methods (at character 1: "java_method('java.lang.System'…")
    hint: only a deployment whose specs are trusted may set BRUSHFIRE_TRUSTED_EXPRESSIONS=1 (docs/spec.md, 'Expressions')"""),
    ("derived_qualified_function.yaml", """\
bad/derived_qualified_function.yaml:5: source.columns.who: function 'system.builtin.reflect' is not allowed: qualified function names are not (at character 1: "system.builtin.reflect('java.l…")
    hint: spec expressions are limited to scalar expressions (docs/spec.md, 'Expressions')"""),
    ("derived_read_files.yaml", """\
bad/derived_read_files.yaml:5: source.columns.f: function 'read_files' is not allowed in spec expressions: it reads files (at character 1: "read_files('/etc')")
    hint: only a deployment whose specs are trusted may set BRUSHFIRE_TRUSTED_EXPRESSIONS=1 (docs/spec.md, 'Expressions')"""),
    ("derived_variable.yaml", """\
bad/derived_variable.yaml:5: source.columns.home: '${' is not allowed: Spark would substitute a variable there (at character 2: "${env:HOME}'")
    hint: write the value out"""),
    ("derived_comment.yaml", """\
bad/derived_comment.yaml:5: source.columns.hour: comments are not allowed in spec expressions (at character 12: '-- of departure')"""),
    ("derived_semicolon.yaml", """\
bad/derived_semicolon.yaml:5: source.columns.hour: ';' is not allowed: an expression is one value, not statements (at character 11: '; DROP TABLE t')"""),
    ("derived_lambda.yaml", """\
bad/derived_lambda.yaml:5: source.columns.n: function 'transform' is not allowed: it takes a lambda function (at character 1: 'transform(array(delay), x -> x…')
    hint: spec expressions are limited to scalar expressions (docs/spec.md, 'Expressions')"""),
    ("derived_aggregate.yaml", """\
bad/derived_aggregate.yaml:5: source.columns.avg_delay: function 'avg' is not allowed in spec expressions: it is an aggregate (at character 1: 'avg(delay)')
    hint: spec expressions are limited to scalar expressions (docs/spec.md, 'Expressions')"""),
    ("derived_window.yaml", """\
bad/derived_window.yaml:5: source.columns.rank: function 'row_number' is not allowed in spec expressions (at character 1: 'row_number() OVER (ORDER BY de…')
    hint: the allowed functions are listed in docs/spec.md ('Expressions')"""),
    ("derived_current_user.yaml", """\
bad/derived_current_user.yaml:5: source.columns.who: current_user is not allowed in spec expressions: it reveals the server's user (at character 1: 'current_user')
    hint: spec expressions are limited to scalar expressions (docs/spec.md, 'Expressions')"""),
    ("filter_subquery.yaml", """\
bad/filter_subquery.yaml:6: source.filters[1]: SELECT is not allowed: a spec expression is a scalar expression over the source's columns, not a query (at character 12: 'SELECT origin FROM parquet.`/d…')
    hint: only a deployment whose specs are trusted may set BRUSHFIRE_TRUSTED_EXPRESSIONS=1 (docs/spec.md, 'Expressions')"""),
    ("filter_exists.yaml", """\
bad/filter_exists.yaml:5: source.filters[0]: EXISTS is not allowed: a spec expression is a scalar expression over the source's columns, not a query (at character 1: 'EXISTS (SELECT 1)')
    hint: only a deployment whose specs are trusted may set BRUSHFIRE_TRUSTED_EXPRESSIONS=1 (docs/spec.md, 'Expressions')"""),
    ("filter_random.yaml", """\
bad/filter_random.yaml:5: source.filters[0]: function 'rand' is not allowed in spec expressions: it is not deterministic (at character 1: 'rand() < 0.1')
    hint: spec expressions are limited to scalar expressions (docs/spec.md, 'Expressions')"""),
    # --- derived columns and static filters: mistakes
    ("derived_misspelled_function.yaml", """\
bad/derived_misspelled_function.yaml:5: source.columns.hour: function 'huor' is not allowed in spec expressions (at character 1: 'huor(date) + minute(date) / 60…')
    hint: did you mean 'hour'? the allowed functions are listed in docs/spec.md ('Expressions')"""),
    ("derived_syntax_error.yaml", """\
bad/derived_syntax_error.yaml:5: source.columns.hour: expected a value, but the expression ended (at character 13: the end)"""),
    ("derived_unclosed_paren.yaml", """\
bad/derived_unclosed_paren.yaml:5: source.columns.hour: expected ')' to close hour(...), but the expression ended (at character 30: the end)"""),
    ("derived_empty.yaml", """\
bad/derived_empty.yaml:5: source.columns.hour: the expression is empty
    hint: write a Spark SQL expression"""),
    ("derived_number.yaml", """\
bad/derived_number.yaml:5: source.columns.one: expected a string, got 1
    hint: quote it to make it a string: '1'"""),
    ("derived_name_with_space.yaml", """\
bad/derived_name_with_space.yaml:5: source.columns.departure hour: derived column name 'departure hour' is not an identifier
    hint: use letters, digits and '_', starting with a letter or '_'"""),
    ("derived_name_duplicate_case.yaml", """\
bad/derived_name_duplicate_case.yaml:6: source.columns.Hour: derived column name 'Hour' differs from the derived column 'hour' only in case, and Spark reads names case-insensitively
    hint: give the derived column another name"""),
    ("derived_cast_to_array.yaml", """\
bad/derived_cast_to_array.yaml:5: source.columns.a: expected a type such as DOUBLE, BIGINT, DECIMAL(p, s), STRING, DATE or TIMESTAMP, got 'ARRAY' (at character 15: 'ARRAY<INT>)')"""),
    ("filter_not_a_condition.yaml", """\
bad/filter_not_a_condition.yaml:5: source.filters[0]: a static filter is a condition, but this is an arithmetic expression
    hint: compare it with something, e.g. x > 0, or x IS NOT NULL"""),
    # --- limits (brushfire.limits) and numbers a double cannot hold
    ("bin_too_many_bars.yaml", """\
bad/bin_too_many_bars.yaml:8: views[0].bin: 1,000,000 bars (extent [-500, 500] in steps of 0.001); a view has at most 65,534 bars
    hint: use step: 0.016 or more, or a narrower extent"""),
    ("bin_step_tiny.yaml", """\
bad/bin_step_tiny.yaml:8: views[0].bin: 1,000,000,000 bars (extent [0, 1] in steps of 1e-09); a view has at most 65,534 bars
    hint: use step: 1.6e-05 or more, or a narrower extent"""),
    ("bin_huge_extent.yaml", """\
bad/bin_huge_extent.yaml:8: views[0].bin: 340,000,000 bars (extent [-1.7e+308, 1.7e+308] in steps of 1e+300); a view has at most 65,534 bars
    hint: use step: 5.2e+303 or more, or a narrower extent"""),
    ("bin_extent_overflow.yaml", """\
bad/bin_extent_overflow.yaml:8: views[0].bin.extent: extent [-60, inf] must be two finite numbers
    hint: a double holds at most ±1.8e308: larger numbers (e.g. 1.0e+400) read as infinity"""),
    ("bin_extent_infinite.yaml", """\
bad/bin_extent_infinite.yaml:8: views[0].bin.extent: extent [-inf, 0] must be two finite numbers
    hint: a double holds at most ±1.8e308: larger numbers (e.g. 1.0e+400) read as infinity"""),
    ("bin_extent_nan.yaml", """\
bad/bin_extent_nan.yaml:8: views[0].bin.extent: extent [nan, 180] must be two finite numbers
    hint: a double holds at most ±1.8e308: larger numbers (e.g. 1.0e+400) read as infinity"""),
    ("bin_step_infinite.yaml", """\
bad/bin_step_infinite.yaml:8: views[0].bin.step: bin step must be a number > 0, got inf
    hint: step is the width of one bin, in the field's units"""),
    ("heatmap_too_many_cells.yaml", """\
bad/heatmap_too_many_cells.yaml:5: views[0]: 730 × 270 = 197,100 cells; a heatmap has at most 65,534 cells
    hint: use larger steps on x or y, e.g. at most 89 y bars for 730 x bars"""),
    ("heatmap_axis_too_many_bars.yaml", """\
bad/heatmap_axis_too_many_bars.yaml:7: views[0].x.bin: 360,000 bars (extent [0, 360] in steps of 0.001); a heatmap axis has at most 65,534 bars
    hint: use step: 0.0055 or more, or a narrower extent"""),
    ("categorical_top_too_large.yaml", """\
bad/categorical_top_too_large.yaml:8: views[0].top: must be <= 1000, got 5000
    hint: a categorical view shows at most 1000 values, then one '(other)' bar"""),
    ("too_many_filters.yaml", """\
bad/too_many_filters.yaml:73: interactions.crossfilter[0].views[63]: 67 filters: 66 brushable views in crossfilter groups and 1 parameter; a dashboard has at most 63
    hint: this is filter 64; set brush: none on views nobody needs to brush, or split the dashboard"""),
    # --- other values
    ("bin_extent_words.yaml", """\
bad/bin_extent_words.yaml:8: views[0].bin.extent[0]: expected a number, got 'low'
bad/bin_extent_words.yaml:8: views[0].bin.extent[1]: expected a number, got 'high'"""),
    ("bin_step_word.yaml", """\
bad/bin_step_word.yaml:8: views[0].bin.step: expected a number, got 'ten'"""),
    ("bin_step_boolean.yaml", """\
bad/bin_step_boolean.yaml:8: views[0].bin.step: expected a number, got true
    hint: YAML reads yes/no/on/off/true/false as booleans, not numbers"""),
    ("categorical_top_boolean.yaml", """\
bad/categorical_top_boolean.yaml:8: views[0].top: expected a whole number, got true
    hint: YAML reads yes/no/on/off/true/false as booleans, not numbers"""),
    ("bin_clamp_word.yaml", """\
bad/bin_clamp_word.yaml:8: views[0].bin.clamp: expected true or false, got 'maybe'"""),
    ("bin_step_quoted.yaml", """\
bad/bin_step_quoted.yaml:8: views[0].bin.step: expected a number, got '10'
    hint: write it without quotes: a quoted value is text"""),
    ("bin_clamp_quoted.yaml", """\
bad/bin_clamp_quoted.yaml:8: views[0].bin.clamp: expected true or false, got 'yes'
    hint: write it without quotes: a quoted value is text"""),
    ("bin_clamp_number.yaml", """\
bad/bin_clamp_number.yaml:8: views[0].bin.clamp: expected true or false, got 1"""),
    ("categorical_top_quoted.yaml", """\
bad/categorical_top_quoted.yaml:8: views[0].top: expected a whole number, got '20'
    hint: write it without quotes: a quoted value is text"""),
    ("categorical_top_zero.yaml", """\
bad/categorical_top_zero.yaml:8: views[0].top: must be >= 1, got 0"""),
    ("temporal_unit_unknown.yaml", """\
bad/temporal_unit_unknown.yaml:8: views[0].unit: unsupported unit 'fortnight'
    unit accepts: minute, hour, day, week, month, year, hour_of_day, day_of_week, month_of_year"""),
    ("brush_unknown.yaml", """\
bad/brush_unknown.yaml:9: views[0].brush: unsupported brush 'lasso'
    brush accepts: interval, points, rect, none"""),
    ("heatmap_missing_y.yaml", """\
bad/heatmap_missing_y.yaml:5: views[0].y: missing required key 'y'
    a heatmap view requires: name, type, x, y"""),
    # --- interactions
    ("crossfilter_empty_group.yaml", """\
bad/crossfilter_empty_group.yaml:11: interactions.crossfilter[0].views: needs at least 1 item, got 0"""),
    ("crossfilter_view_twice.yaml", """\
bad/crossfilter_view_twice.yaml:9: interactions.crossfilter[0].views[2]: view 'delay' is listed twice in this group
    hint: it is views[0] already: remove one"""),
    ("highlight_without_targets.yaml", """\
bad/highlight_without_targets.yaml:11: interactions.highlight[0].targets: missing required key 'targets'
    a highlight requires: source, targets"""),
    ("details_page_size_zero.yaml", """\
bad/details_page_size_zero.yaml:12: interactions.details.page_size: must be >= 1, got 0"""),
    ("details_page_size_over_limit.yaml", """\
bad/details_page_size_over_limit.yaml:12: interactions.details.page_size: must be <= 10000, got 20000"""),
    ("details_page_size_fraction.yaml", """\
bad/details_page_size_fraction.yaml:12: interactions.details.page_size: expected a whole number, got 10.5"""),
    ("details_no_columns.yaml", """\
bad/details_no_columns.yaml:11: interactions.details.columns: needs at least 1 item, got 0"""),
    ("details_rid_column.yaml", """\
bad/details_rid_column.yaml:11: interactions.details.columns: 'rid' names each row's id in details (replies, downloads): no column may be called so
    hint: derive the column under another name: source: {columns: {row_id: rid}}, then list row_id"""),
    ("interactions_unknown_key.yaml", """\
bad/interactions_unknown_key.yaml:10: interactions.brushes: unknown key 'brushes'
    interactions accepts: crossfilter, highlight, details, parameters
    hint: remove it"""),
    ("parameter_between_empty.yaml", """\
bad/parameter_between_empty.yaml:15: interactions.parameters[0].default: the range [60, 0] is empty: lo must not be above hi
    hint: write default: [lo, hi] with lo <= hi"""),
    ("parameter_between_huge_integer.yaml", """\
bad/parameter_between_huge_integer.yaml:15: interactions.parameters[0].default: an integer of 401 digits is not a finite number
    hint: a slider's default is a double, at most ±1.8e308 (1.0e+400 reads as infinity)"""),
    ("parameter_slider_nan.yaml", """\
bad/parameter_slider_nan.yaml:15: interactions.parameters[0].default: nan is not a finite number
    hint: a slider's default is a double, at most ±1.8e308 (1.0e+400 reads as infinity)"""),
    ("parameter_between_one_value.yaml", """\
bad/parameter_between_one_value.yaml:15: interactions.parameters[0].default: op 'between' takes a range [lo, hi], got 30
    hint: op between takes default: [lo, hi]; the other ops one value"""),
    ("parameter_op_range.yaml", """\
bad/parameter_op_range.yaml:14: interactions.parameters[0].op: unsupported op 'range'
    op accepts: eq, lt, lte, gt, gte, between
    hint: for a range, use widget: slider with op: between (its value is [lo, hi])"""),
    # a default of Scalar | list[Scalar]: one branch's errors, not pydantic's list[union[...]] path
    ("parameter_default_wrong_items.yaml", """\
bad/parameter_default_wrong_items.yaml:9: interactions.parameters[0].default[0]: expected a string, a boolean or a number, got ['ORD']
bad/parameter_default_wrong_items.yaml:10: interactions.parameters[1].default[1]: expected a string, a boolean or a number, got {'max': 60}
bad/parameter_default_wrong_items.yaml:11: interactions.parameters[2].default: expected a string, a boolean or a number, got {'code': 'LAX'}
    hint: a parameter's default is one value: a string, a boolean or a number (a list of them with multiple: true, [lo, hi] with op: between)"""),
    ("parameter_default_list.yaml", """\
bad/parameter_default_list.yaml:15: interactions.parameters[0].default: expected a string, a boolean or a number, got [0, 60]
    hint: a parameter's default is one value; for a range use op: between with default: [lo, hi], for several values a dropdown with multiple: true"""),
    ("parameter_multiple_one_default.yaml", """\
bad/parameter_multiple_one_default.yaml:13: interactions.parameters[0].default: a dropdown with multiple: true takes a list of values, got 'ORD'
    hint: write default: [ORD, ATL] (a list, even of one value: [ORD])"""),
    ("parameter_multiple_slider.yaml", """\
bad/parameter_multiple_slider.yaml:14: interactions.parameters[0].multiple: multiple is for dropdowns: a slider takes one value, or [lo, hi] with op between
    hint: leave multiple out, or use widget: dropdown"""),
    ("parameter_widget_unknown.yaml", """\
bad/parameter_widget_unknown.yaml:11: interactions.parameters[0].widget: unsupported widget 'checkbox'
    widget accepts: dropdown, slider"""),
    ("parameter_missing_field.yaml", """\
bad/parameter_missing_field.yaml:11: interactions.parameters[0].field: missing required key 'field'
    a parameter requires: name, field"""),
    ("view_name_path.yaml", """\
bad/view_name_path.yaml:8: views[1].name: 'delay/hour' is not a valid name
    hint: start with a letter or '_', then use letters, digits, '_' or '-'"""),
    ("parameter_name_column.yaml", """\
bad/parameter_name_column.yaml:11: interactions.parameters[0].name: 'column:dest' is not a valid name
    hint: start with a letter or '_', then use letters, digits, '_' or '-'"""),
    ("parameter_duplicate_name.yaml", """\
bad/parameter_duplicate_name.yaml:12: interactions.parameters[1].name: parameter name 'dest' is already used by parameters[0]
    hint: parameters and views need distinct names"""),
    # --- at most three problems are shown, in file order
    ("many_problems.yaml", """\
bad/many_problems.yaml:8: views[0].bin.step: bin step must be a number > 0, got 0
    hint: step is the width of one bin, in the field's units
bad/many_problems.yaml:8: views[0].bin.extent: extent [180, -60] is empty: the first value must be below the second
    hint: write extent: [lo, hi] with lo < hi
bad/many_problems.yaml:9: views[0].aggregate.op: unsupported aggregate op 'mode'
    op accepts: count, sum, mean, median, quantile, min, max, distinct
    hint: the most frequent value is the first bar of a categorical view of the field
(1 more problem not shown: fix these first)"""),
]


@pytest.fixture
def in_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(HERE)


@pytest.mark.parametrize(("name", "expected"), BAD, ids=[name.removesuffix(".yaml") for name, _ in BAD])
def test_bad_spec_message(in_here: None, name: str, expected: str) -> None:
    with pytest.raises(SpecError) as info:
        load_dashboard(f"bad/{name}")
    assert str(info.value) == expected


@pytest.mark.parametrize(("view", "hint"), [
    ("{name: v, type: bar, field: k}", "a bar per value of a field (text, categories) is categorical"),
    ("{name: v, type: scatter, field: k}", "two numbers against each other are a heatmap"),
    ("{name: v, type: line, field: k}", "counts over time are a temporal view"),
    ("{name: v, type: histogram, field: x, bin: {step: 1}, aggregate: {op: avg, field: x}}",
     "did you mean 'mean'? (SQL's avg)"),
    ("{name: v, type: histogram, field: x, bin: 10}", "write bin: {maxbins: 10} (about that many bars) or bin: {step: 10}"),
])
def test_what_other_tools_call_a_chart_or_an_aggregate_gets_a_hint(tmp_path, view: str, hint: str) -> None:
    """A first-time analyst writes the chart and aggregate names of other tools and SQL:
    each got the list of what a spec takes, no hint which to write."""
    spec = tmp_path / "s.yaml"
    spec.write_text(f"name: s\nsource: {{path: t.parquet}}\nviews:\n  - {view}\n")
    with pytest.raises(SpecError) as info:
        load_dashboard(spec)
    assert f"\n    hint: {hint}" in str(info.value)


def test_every_bad_file_has_a_case() -> None:
    on_disk = sorted(p.name for p in (HERE / "bad").glob("*.yaml"))
    assert on_disk == sorted(name for name, _ in BAD)


def test_error_is_raised_without_the_validator_traceback(in_here: None) -> None:
    with pytest.raises(SpecError) as info:
        load_dashboard("bad/unknown_key_view.yaml")
    err = info.value
    assert err.__cause__ is None and err.__suppress_context__
    assert err.cause is not None  # the pydantic error, kept for debugging
    assert [(p.line, p.path) for p in err.problems] == [(7, "views[0].titel")]


def test_missing_file() -> None:
    with pytest.raises(SpecError) as info:
        load_dashboard(HERE / "bad" / "no_such_spec.yaml")
    assert str(info.value).endswith("no_such_spec.yaml: cannot read spec: No such file or directory")


def test_a_folder_given_as_a_spec_says_to_give_its_spec_files(tmp_path) -> None:
    """`brushfire validate dashboards` said only "cannot read spec: Is a directory"."""
    with pytest.raises(SpecError) as info:
        load_dashboard(tmp_path)
    assert str(info.value) == (f"{tmp_path}: cannot read spec: it is a folder, not a spec file\n"
                               f"    hint: give the spec files in it, e.g. {tmp_path / '*.yaml'}")


def test_a_spec_over_the_size_limit_is_refused_before_it_is_read(tmp_path, monkeypatch) -> None:
    """A 10 MB spec (a data file given as the spec, a generated one gone wrong) took 22 s
    to be validated; one over limits.MAX_SPEC_BYTES is refused at once, file or text."""
    from brushfire.limits import MAX_SPEC_BYTES

    spec = tmp_path / "big.yaml"
    spec.write_text("name: d\nsource: {path: x.parquet}\nviews:\n  - {name: c, type: categorical, field: c}\n"
                    + "# é\n" * (MAX_SPEC_BYTES // 5 + 1))
    size = spec.stat().st_size
    expected = (f"cannot read spec: {size:,} bytes; a spec is at most {MAX_SPEC_BYTES:,} bytes (limits.py)\n"
                "    hint: a dashboard spec is a few KB of YAML: is this the data file, not the spec?")
    monkeypatch.setattr("brushfire.spec.loader.read_yaml", None)  # (never reached)
    with pytest.raises(SpecError) as info:
        load_dashboard(spec)
    assert str(info.value) == f"{spec}: {expected}"
    with pytest.raises(SpecError) as info:
        parse_dashboard(spec.read_text(encoding="utf-8"), filename="big.yaml")
    assert str(info.value) == f"big.yaml: {expected}"


def test_dict_specs_have_no_lines() -> None:
    raw = yaml.safe_load((HERE / "bad" / "unknown_view_crossfilter.yaml").read_text())
    with pytest.raises(SpecError) as info:
        parse_dashboard(raw)
    assert str(info.value) == """\
<spec>: interactions.crossfilter[0].views[1]: unknown view 'origni'
    views: delay, origin
    hint: did you mean 'origin'?"""


# --- check_columns: the spec against the source schema ----------------------------------

SCHEMA = {"date": "temporal", "delay": "number", "distance": "number", "origin": "string",
          "carrier": "string"}

COLUMN_CASES = [
    ("ok", SCHEMA, None),
    # `hour` is derived in source.columns: known without the schema, and of any kind
    ("derived_shadows_source", SCHEMA | {"hour": "string"}, None),
    ("missing_column", {c: k for c, k in SCHEMA.items() if c != "carrier"}, """\
good/columns.yaml:36: interactions.parameters[0].field: column 'carrier' is not in the source
    columns: date, delay, distance, origin, hour
    hint: add it to source.columns as a derived column"""),
    ("misspelled_column", {("Origin" if c == "origin" else c): k for c, k in SCHEMA.items()}, """\
good/columns.yaml:21: views[3].field: column 'origin' is not in the source
    columns: date, delay, distance, Origin, carrier, hour
    hint: did you mean 'Origin'?
good/columns.yaml:33: interactions.details.columns[1]: column 'origin' is not in the source
    columns: date, delay, distance, Origin, carrier, hour
    hint: did you mean 'Origin'?"""),
    # difflib compares characters: 'CARRIER' was no match for 'carrier'
    ("column_in_another_case", {("CARRIER" if c == "carrier" else c): k for c, k in SCHEMA.items()}, """\
good/columns.yaml:36: interactions.parameters[0].field: column 'carrier' is not in the source
    columns: date, delay, distance, origin, CARRIER, hour
    hint: did you mean 'CARRIER'?"""),
    ("histogram_over_string", SCHEMA | {"delay": "string"}, """\
good/columns.yaml:10: views[0].field: column 'delay' is a string column, but a histogram view needs a number column
    hint: use a categorical view for strings, or derive a number in source.columns
good/columns.yaml:22: views[3].aggregate.field: column 'delay' is a string column, but aggregate op 'mean' needs a number column
    hint: aggregate a numeric column, or use op: count
good/columns.yaml:27: views[4].y.field: column 'delay' is a string column, but a heatmap axis needs a number column
    hint: use a categorical view for strings, or derive a number in source.columns"""),
    ("other_kind", SCHEMA | {"distance": "other"}, """\
good/columns.yaml:25: views[4].x.field: column 'distance' is neither number, temporal nor string, but a heatmap axis needs a number column
    hint: pick a number column, or derive one in source.columns
good/columns.yaml:38: interactions.parameters[1].field: column 'distance' is neither number, temporal nor string, but a slider parameter needs a number or temporal column
    hint: use widget: dropdown to pick values instead of a range"""),
    # details columns take any kind; the temporal view does not
    ("temporal_over_number", SCHEMA | {"date": "number"}, """\
good/columns.yaml:18: views[2].field: column 'date' is a number column, but a temporal view needs a temporal column
    hint: use a histogram view for numbers; or, for times counted from 1970, derive a timestamp in source.columns, e.g. `date_time: timestamp_millis(date)` (or timestamp_seconds; for years, make_date(CAST(date AS INT), 1, 1)), and give the view that field"""),
]


@pytest.mark.parametrize(("schema", "expected"), [c[1:] for c in COLUMN_CASES],
                         ids=[c[0] for c in COLUMN_CASES])
def test_check_columns(in_here: None, schema: dict[str, str], expected: str | None) -> None:
    assert_columns_checked(load_dashboard("good/columns.yaml"), schema, expected)


def assert_columns_checked(dash, schema: dict, expected: str | None) -> None:
    """check_columns passes (expected None) or raises exactly `expected`."""
    if expected is None:
        check_columns(dash, schema)
        return
    with pytest.raises(SpecError) as info:
        check_columns(dash, schema)
    assert str(info.value) == expected


def test_check_columns_on_a_dict_spec() -> None:
    dash = parse_dashboard(yaml.safe_load((HERE / "good" / "columns.yaml").read_text()))
    with pytest.raises(SpecError) as info:
        check_columns(dash, SCHEMA | {"date": "string"})
    assert str(info.value) == """\
<spec>: views[2].field: column 'date' is a string column, but a temporal view needs a temporal column
    hint: derive a timestamp in source.columns, e.g. `date_time: to_timestamp(date)` (text not in ISO form needs its pattern: to_timestamp(date, 'yyyy/MM/dd HH:mm')), and give the view that field"""


@pytest.mark.parametrize("field, hint", [
    ("properties.mag", "'properties' is a struct column (a nested object): derive its field in "
                       "source.columns, e.g. `mag: properties.mag`, and give that name here"),
    ("geometry.coords.depth km", "'geometry' is a struct column (a nested object): derive its field in "
                                 "source.columns, e.g. `value: geometry.coords.`depth km``, and give that name here"),
    ("propertie", "did you mean 'properties'?"),
])
def test_a_field_of_a_struct_column_gets_the_derived_column_that_reads_it(field, hint) -> None:
    """A nested JSON object's field named as a view's field (GeoJSON's `properties.mag`) was
    'not in the source' with 'did you mean 'properties'?', a struct no view takes: the hint
    is the derived column that reads the field (a field is a column of its own only through
    a join)."""
    dash = parse_dashboard({"name": "quakes", "source": {"path": "quakes.json"}, "views": [
        {"name": "mag", "type": "histogram", "field": field, "bin": {"step": 0.5}}]})
    with pytest.raises(SpecError) as info:
        check_columns(dash, {"id": "string", "properties": "nested", "geometry": "nested"})
    assert str(info.value) == f"""\
<spec>: views[0].field: column {field!r} is not in the source
    columns: id, properties, geometry
    hint: {hint}"""


def test_a_csv_header_naming_a_column_twice_says_how_spark_names_them() -> None:
    """A CSV file whose first line names 'x' twice is read by Spark with columns x1 and x2
    (each named after its place): a view of 'x' got "did you mean 'x2'?", as if 'x' were
    misspelt. The hint says why."""
    dash = parse_dashboard({"name": "twice", "source": {"path": "twice.csv"}, "views": [
        {"name": "x", "type": "histogram", "field": "x", "bin": {"step": 1}}]})
    with pytest.raises(SpecError) as info:
        check_columns(dash, {"_c0": "int", "x1": "int", "X2": "double", "y": "string"})
    assert str(info.value) == """\
<spec>: views[0].field: column 'x' is not in the source
    columns: _c0, x1, X2, y
    hint: the file's first line names 'x' 2 times: Spark names each after its place (x1, X2); name the one meant, or rename them in the file"""


# A parameter's default of a type its field never takes: refused against the schema, before
# Spark (it was refused only when a session applied it, after the capture).
DEFAULT_SPEC = """\
name: defaults
source: {{path: flights.parquet}}
views:
  - {{name: origin, type: categorical, field: origin}}
interactions:
  parameters:
    - {parameter}
"""

DEFAULT_CASES = [
    ("slider_number_ok", "{name: p, field: delay, widget: slider, op: lte, default: 30}", None),
    ("slider_number_text", "{name: p, field: delay, widget: slider, op: lte, default: abc}", """\
d.yaml:7: interactions.parameters[0].default: the default cannot be applied to column 'delay' (a number): 'abc' is not a number
    hint: give a number (unquoted), or leave default out"""),
    ("slider_between_one_bound", "{name: p, field: delay, widget: slider, op: between, default: [0, '9']}", """\
d.yaml:7: interactions.parameters[0].default[1]: the default cannot be applied to column 'delay' (a number): '9' is not a number
    hint: give a number (unquoted), or leave default out"""),
    ("slider_time_ok", "{name: p, field: date, widget: slider, op: gte, default: 2012-01-01}", None),
    ("slider_time_number", "{name: p, field: date, widget: slider, op: gte, default: 2012}", """\
d.yaml:7: interactions.parameters[0].default: the default cannot be applied to column 'date' (a timestamp): 2012 is a number, not a time; temporal bounds are ISO times, e.g. 2021-03-01 or 2021-03-01T12:30:00Z
    hint: give an ISO time, e.g. 2021-03-01 or 2021-03-01T12:30:00Z, or leave default out"""),
    ("slider_time_not_iso", "{name: p, field: date, widget: slider, op: gte, default: 'Jan 1'}", """\
d.yaml:7: interactions.parameters[0].default: the default cannot be applied to column 'date' (a timestamp): 'Jan 1' is not an ISO time; write e.g. 2021-03-01 or 2021-03-01T12:30:00Z
    hint: give an ISO time, e.g. 2021-03-01 or 2021-03-01T12:30:00Z, or leave default out"""),
    ("dropdown_string_ok", "{name: p, field: carrier, default: AA}", None),
    ("dropdown_string_number", "{name: p, field: carrier, default: 3}", """\
d.yaml:7: interactions.parameters[0].default: the default cannot be applied to column 'carrier' (a string): 3 is not a string
    hint: quote it ('3'), or leave default out"""),
    ("dropdown_multiple_one_item", "{name: p, field: carrier, multiple: true, default: [AA, 9]}", """\
d.yaml:7: interactions.parameters[0].default[1]: the default cannot be applied to column 'carrier' (a string): 9 is not a string
    hint: quote it ('9'), or leave default out"""),
    ("dropdown_number_ok", "{name: p, field: distance, default: 300}", None),
    ("dropdown_number_infinity", "{name: p, field: distance, default: Infinity}", None),  # (its wire spelling)
    ("dropdown_number_text", "{name: p, field: distance, default: '300'}", """\
d.yaml:7: interactions.parameters[0].default: the default cannot be applied to column 'distance' (a number): '300' is not a number
    hint: give a number (unquoted), or leave default out"""),
    ("dropdown_time_number", "{name: p, field: date, default: 5}", """\
d.yaml:7: interactions.parameters[0].default: the default cannot be applied to column 'date' (a timestamp): 5 is a number, not a time; temporal bounds are ISO times, e.g. 2021-03-01 or 2021-03-01T12:30:00Z
    hint: give an ISO time, e.g. 2021-03-01 or 2021-03-01T12:30:00Z, or leave default out"""),
    # a kind only Spark knows (a CSV's column): left to capture's analysis
    ("unknown_kind", "{name: p, field: x, widget: slider, op: lte, default: abc}", None),
]


@pytest.mark.parametrize(("parameter", "expected"), [c[1:] for c in DEFAULT_CASES],
                         ids=[c[0] for c in DEFAULT_CASES])
def test_check_columns_refuses_a_default_of_the_wrong_type(parameter: str, expected: str | None) -> None:
    assert_columns_checked(parse_dashboard(DEFAULT_SPEC.format(parameter=parameter), "d.yaml"),
                           SCHEMA | {"x": None}, expected)


# --- temporal bars against the source's time range (Parquet statistics) ------------------


@pytest.mark.parametrize("unit", ["minute", "hour", "day", "week", "month", "year"])
def test_calendar_bars_count_as_capture_bins(unit: str) -> None:
    from datetime import datetime, timedelta

    import numpy as np

    from brushfire.bins import calendar_labels
    from brushfire.spec.checks import calendar_bars

    rng = np.random.default_rng(3)
    for _ in range(30):
        lo = datetime(2000, 1, 1) + timedelta(minutes=int(rng.integers(0, 10**7)))
        hi = lo + timedelta(minutes=int(rng.integers(0, 10**6 if unit in ("minute", "hour") else 10**7)))
        us = np.array([int((t - datetime(1970, 1, 1)).total_seconds()) * 10**6 for t in (lo, hi)])
        labels = calendar_labels(unit, int(us[0]), int(us[1]))
        assert calendar_bars(unit, lo, hi) == len(labels), (unit, lo, hi)


def test_validate_counts_temporal_bars_from_parquet_statistics(tmp_path, capsys) -> None:
    from datetime import datetime, timedelta

    import pyarrow as pa
    import pyarrow.parquet as pq

    from brushfire.cli import main

    t0 = datetime(2001, 1, 1)
    pq.write_table(pa.table({"t": pa.array([t0, t0 + timedelta(days=180)], pa.timestamp("us"))}),
                   tmp_path / "rows.parquet")
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: t\nsource: {path: rows.parquet}\nviews:\n"
                    "  - {name: when, type: temporal, field: t, unit: minute}\n")
    assert main(["validate", str(spec)]) == 1
    assert capsys.readouterr().err == f"""\
{spec}:4: views[0].unit: 259,201 minute bars from 2001-01-01 00:00 to 2001-06-30 00:00 (the first and last t in the source); a view has at most 65,534 bars
    hint: use unit: hour (4,321 bars)
"""
    spec.write_text(spec.read_text().replace("minute", "hour"))
    assert main(["validate", str(spec)]) == 0


def test_validate_counts_the_bars_of_a_step_alone_from_parquet_statistics(tmp_path, capsys) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from brushfire.cli import main

    # two row groups, each with its own statistics (NaN and null are in none)
    pq.write_table(pa.table({"x": [0.25, float("nan"), None, 3e4], "k": pa.array([-7, 40, 3, 0], pa.int32())}),
                   tmp_path / "rows.parquet", row_group_size=2)
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: t\nsource: {path: rows.parquet}\nviews:\n"
                    "  - {name: hx, type: histogram, field: x, bin: {step: 0.1}}\n"
                    "  - {name: heat, type: heatmap, x: {field: k, bin: {step: 0.001}},\n"
                    "     y: {field: x, bin: {step: 10000}}}\n")
    assert main(["validate", str(spec)]) == 1
    assert capsys.readouterr().err == f"""\
{spec}:4: views[0].bin.step: step 0.1 makes 299,998 bars from 0.25 to 30000 (the smallest and largest x in the source); a view has at most 65,534 bars
    hint: use a step of at least 0.458, or give an extent and clamp: true
{spec}:5: views[1]: 47,000 × 3 = 141,000 cells over the source's range; a heatmap has at most 65,534 cells
    hint: use larger steps on x or y
"""
    spec.write_text(spec.read_text().replace("step: 0.1}", "step: 1}").replace("0.001", "0.01"))
    assert main(["validate", str(spec)]) == 0  # 29,999 bars; 4,700 × 3 cells


# --- environment variables in source paths ---------------------------------------------

ENV_SPEC = """\
name: env
source:
  path: {path}
views:
  - {{name: hx, type: histogram, field: x, bin: {{step: 1, extent: [0, 10]}}}}
"""


@pytest.mark.parametrize(("path", "environ", "expected"), [
    ("${DATA_DIR}/rows.parquet", {"DATA_DIR": "/data"}, "/data/rows.parquet"),
    ("${DATA_DIR:-/srv}/rows.parquet", {}, "/srv/rows.parquet"),
    ("${DATA_DIR:-/srv}/rows.parquet", {"DATA_DIR": ""}, "/srv/rows.parquet"),
    ("${DATA_DIR:-/srv}/rows.parquet", {"DATA_DIR": "/data"}, "/data/rows.parquet"),
    ("${A}/${B}.parquet", {"A": "/x", "B": "y"}, "/x/y.parquet"),
    ("/data/$HOME.parquet", {}, "/data/$HOME.parquet"),  # only ${...} is replaced
    ("${DATA_DIR}/rows.parquet", {}, """\
env.yaml:3: source.path: environment variable 'DATA_DIR' is not set (in '${DATA_DIR}/rows.parquet')
    hint: set it before starting Brushfire (e.g. DATA_DIR=/data brushfire serve ...), or give a default: ${DATA_DIR:-/data}"""),
    ("${A}/${B}/${A}.parquet", {}, """\
env.yaml:3: source.path: environment variables 'A', 'B' are not set (in '${A}/${B}/${A}.parquet')
    hint: set it before starting Brushfire (e.g. A=/data brushfire serve ...), or give a default: ${A:-/data}"""),
    ("${DATA_DIR:-~no-such-user-brushfire}/rows.parquet", {}, """\
env.yaml:3: source.path: '~no-such-user-brushfire/rows.parquet': ~no-such-user-brushfire is a home directory, and no user 'no-such-user-brushfire' on this machine has one; write the path out (from '${DATA_DIR:-~no-such-user-brushfire}/rows.parquet')
    hint: fix the environment variable, or the default after :-"""),
], ids=str)
def test_environment_variables_in_the_source_path(monkeypatch, path, environ, expected) -> None:
    for name in ("DATA_DIR", "A", "B"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    text = ENV_SPEC.format(path=path)
    if expected.startswith("/"):
        assert parse_dashboard(text, "env.yaml", base_dir="/").source.path == expected
        return
    with pytest.raises(SpecError) as info:
        parse_dashboard(text, "env.yaml", base_dir="/")
    assert str(info.value) == expected


# --- profiling checks -------------------------------------------------------------------

PROFILE_SPEC = """\
name: prof
source: {{path: rows.parquet}}
views:
  - {{name: hx, type: histogram, field: x, bin: {{step: 1, extent: [0, 10]}}}}
  - {{name: cat, type: categorical, field: cat}}
interactions:
  crossfilter:
    - views: [hx, cat]
profile:
  fd: {fd}
"""


@pytest.mark.parametrize(("fd", "expected"), [
    ("[[cat], [dest]]", [("fd_cat__dest", ["cat"], ["dest"])]),
    ("[[[cat, k], [dest]], {lhs: [x], rhs: [dest, k], name: x_fd}]",
     [("fd_cat_k__dest", ["cat", "k"], ["dest"]), ("x_fd", ["x"], ["dest", "k"])]),
    ("[{lhs: [cat], rhs: [dest]}]", [("fd_cat__dest", ["cat"], ["dest"])]),
    ("[[cat], [cat]]", """\
prof.yaml:10: profile.fd[0].rhs: column 'cat' is on both sides: the dependency always holds
    hint: list each column on one side only"""),
    ("[{lhs: [cat], rhs: [dest], name: hx}]", """\
prof.yaml:10: profile.fd[0]: its view's name 'hx' is a view's name already
    hint: give the check another name: name: <identifier>"""),
    ("[{lhs: [cat], rhs: []}]", """\
prof.yaml:10: profile.fd[0].rhs: needs at least 1 item, got 0"""),
    ("[{lhs: [cat], rhs: [dest], name: 'a b'}]", """\
prof.yaml:10: profile.fd[0].name: 'a b' is not a valid name
    hint: start with a letter or '_', then use letters, digits, '_' or '-'"""),
], ids=str)
def test_profile_checks_add_a_linked_view(fd, expected) -> None:
    text = PROFILE_SPEC.format(fd=fd)
    if isinstance(expected, str):
        with pytest.raises(SpecError) as info:
            parse_dashboard(text, "prof.yaml")
        assert str(info.value) == expected
        return
    dash = parse_dashboard(text, "prof.yaml")
    assert [(f.view_name, f.lhs, f.rhs) for f in dash.profile.fd] == expected
    names = [n for n, _, _ in expected]
    assert [v.name for v in dash.views] == ["hx", "cat", *names]
    for name in names:
        v = dash.view(name)
        assert (v.type, v.field, v.top, v.other) == ("categorical", name, 2, False)
    assert dash.interactions.crossfilter[0].views == ["hx", "cat", *names]
    again = parse_dashboard(dash.model_dump(mode="json"))  # loading a dumped spec adds nothing
    assert again.model_dump(mode="json") == dash.model_dump(mode="json")
    check_columns(dash, {"x": "number", "cat": "string", "dest": "string", "k": "number"})
    with pytest.raises(SpecError, match=r"profile.fd\[0\].rhs\[0\]: column 'dest' is not in the source"):
        check_columns(dash, {"x": "number", "cat": "string", "k": "number"})


def test_a_profile_without_crossfilter_groups_links_every_view() -> None:
    text = PROFILE_SPEC.format(fd="[[cat], [dest]]").replace(
        "interactions:\n  crossfilter:\n    - views: [hx, cat]\n", "")
    dash = parse_dashboard(text)
    assert [g.views for g in dash.interactions.crossfilter] == [["hx", "cat", "fd_cat__dest"]]


def test_a_profile_view_may_not_shadow_a_source_column() -> None:
    from brushfire.spec.checks import check_profile_columns

    dash = parse_dashboard(PROFILE_SPEC.format(fd="[{lhs: [cat], rhs: [dest], name: k}]"), "prof.yaml")
    check_profile_columns(dash, ["x", "cat", "dest"])
    with pytest.raises(SpecError) as info:
        check_profile_columns(dash, ["x", "cat", "dest", "K"])
    assert str(info.value) == """\
prof.yaml:10: profile.fd[0]: its view's name 'k' is a column of the source already
    hint: give the check another name: name: <identifier>"""


def test_a_dashboard_name_longer_than_a_file_name_allows_is_an_error() -> None:
    """The name makes up the lineage cache entry's folder name (at most 255 bytes there)."""
    spec = {"name": "d" * 300, "source": {"path": "x.parquet"},
            "views": [{"name": "v", "type": "categorical", "field": "origin"}]}
    with pytest.raises(SpecError) as e:
        parse_dashboard(spec)
    assert str(e.value) == ("<spec>: name: 'dddddddddddddddddddd…' is 300 characters long; at most 100\n"
                            "    hint: use a shorter name, and a title for the words")


def test_a_view_name_longer_than_a_file_name_allows_is_an_error() -> None:
    spec = {"name": "d", "source": {"path": "x.parquet"},
            "views": [{"name": "v" * 300, "type": "categorical", "field": "origin"}]}
    with pytest.raises(SpecError) as e:
        parse_dashboard(spec)
    assert str(e.value) == ("<spec>: views[0].name: 'vvvvvvvvvvvvvvvvvvvv…' is 300 characters long; at most 100\n"
                            "    hint: use a shorter name, and a title for the words")


# --- joins: keys, `on` and names against the tables' schemas ------------------------------

LINEITEM = {"l_orderkey": "number", "l_partkey": "number", "l_extendedprice": "number"}
ORDERS = {"orders.o_orderkey": "number", "orders.o_custkey": "number",
          "orders.o_orderdate": "temporal", "orders.o_orderpriority": "string"}
CUSTOMER = {"customer.c_custkey": "number", "customer.c_mktsegment": "string",
            "customer.c_name": "string"}
PART = {"part.p_partkey": "number", "part.p_brand": "string"}

JOIN_CASES = [
    ("ok", LINEITEM | ORDERS | CUSTOMER | PART, None),
    # part.csv: its schema is Spark's to infer, so its columns are checked at capture
    ("dimension_schema_unknown", LINEITEM | ORDERS | CUSTOMER, None),
    ("key_not_in_dimension", LINEITEM | ORDERS | CUSTOMER | {"part.partkey": "number",
                                                             "part.p_brand": "string"}, """\
good/joins.yaml:9: source.joins[2].key: column 'p_partkey' is not in the table of join 'part' (part.csv)
    columns: partkey, p_brand
    hint: did you mean 'partkey'?"""),
    ("on_not_in_source", {"orderkey": "number", "l_partkey": "number", "l_extendedprice": "number"}
     | ORDERS | CUSTOMER | PART, """\
good/joins.yaml:7: source.joins[0].on: column 'l_orderkey' is not in the source
    columns: orderkey, l_partkey, l_extendedprice
    hint: did you mean 'orderkey'?
good/joins.yaml:17: interactions.details.columns[0]: column 'l_orderkey' is not in the source
    columns: orderkey, l_partkey, l_extendedprice, orders.o_orderkey, orders.o_custkey, orders.o_orderdate, orders.o_orderpriority, customer.c_custkey, customer.c_mktsegment, customer.c_name, part.p_partkey, part.p_brand, ...
    hint: did you mean 'orderkey'?"""),
    ("on_not_in_earlier_join", LINEITEM | {k: v for k, v in ORDERS.items() if k != "orders.o_custkey"}
     | CUSTOMER | PART, """\
good/joins.yaml:8: source.joins[1].on: column 'orders.o_custkey' is not in the table of join 'orders'
    columns: orders.o_orderkey, orders.o_orderdate, orders.o_orderpriority
    hint: did you mean 'orders.o_orderkey'?"""),
    ("name_is_a_column", LINEITEM | {"orders": "string"} | ORDERS | CUSTOMER | PART, """\
good/joins.yaml:7: source.joins[0].name: join name 'orders' is a column of the source ('orders')
    hint: a join's columns are <join>.<column>: give the join another name"""),
    ("joined_column_missing", LINEITEM | ORDERS | {k: v for k, v in CUSTOMER.items()
                                                   if k != "customer.c_mktsegment"} | PART, """\
good/joins.yaml:12: views[1].field: column 'customer.c_mktsegment' is not in the table of join 'customer' (customer.parquet)
    columns: customer.c_custkey, customer.c_name
    hint: did you mean 'customer.c_name'?"""),
    ("key_of_a_kind_no_join_compares", LINEITEM | ORDERS | {"orders.o_orderkey": "temporal"} | CUSTOMER | PART, """\
good/joins.yaml:7: source.joins[0].on: column 'l_orderkey' (a number) and key 'o_orderkey' of orders.parquet (a date or time) are of types no join compares
    hint: give them one type in the files (Spark's join compares numbers with numbers or text, times with times or text)"""),
    ("joined_column_of_another_kind", LINEITEM | ORDERS | {"orders.o_orderdate": "string"}
     | CUSTOMER | PART, """\
good/joins.yaml:13: views[2].field: column 'orders.o_orderdate' is a string column, but a temporal view needs a temporal column
    hint: derive a timestamp in source.columns, e.g. `o_orderdate_time: to_timestamp(orders.o_orderdate)` (text not in ISO form needs its pattern: to_timestamp(orders.o_orderdate, 'yyyy/MM/dd HH:mm')), and give the view that field"""),
]


@pytest.mark.parametrize(("schema", "expected"), [c[1:] for c in JOIN_CASES],
                         ids=[c[0] for c in JOIN_CASES])
def test_check_columns_of_joins(in_here: None, schema: dict[str, str], expected: str | None) -> None:
    dash = load_dashboard("good/joins.yaml")
    if expected is None:
        check_columns(dash, schema)
        return
    with pytest.raises(SpecError) as info:
        check_columns(dash, schema)
    assert str(info.value) == expected


def test_joins_are_read_as_written(in_here: None) -> None:
    """`on:` is a key (YAML 1.1 would read it as true); a join's path is relative to the
    spec's folder; `<join>.<column>` in a derived column is a column of the join."""
    from brushfire.spec import expressions as ex

    dash = load_dashboard("good/joins.yaml")
    assert [(j.name, j.key, j.on) for j in dash.source.joins] == [
        ("orders", "o_orderkey", "l_orderkey"), ("customer", "c_custkey", "orders.o_custkey"),
        ("part", "p_partkey", "l_partkey")]
    assert dash.source.joins[0].path == str(HERE / "good" / "orders.parquet")
    assert [j.name for j in dash.source.join_chain("customer.c_name")] == ["orders", "customer"]
    assert ex.analyze(dash.source.columns["year"], check=False).columns == [("orders.o_orderdate", 5)]


def test_a_missing_dimension_file_is_an_error_at_its_path(tmp_path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from brushfire.source import read_types

    pq.write_table(pa.table({"k": [1, 2]}), tmp_path / "fact.parquet")
    pq.write_table(pa.table({"id": [1], "name": ["a"]}), tmp_path / "dim.parquet")
    spec = tmp_path / "s.yaml"
    spec.write_text("name: s\nsource:\n  path: fact.parquet\n  joins:\n"
                    "    - {name: d, path: dim.parquet, key: id, on: k}\n"
                    "    - {name: e, path: nowhere.parquet, key: id, on: k}\n"
                    "views:\n  - {name: n, type: categorical, field: d.name}\n")
    dash = load_dashboard(spec)
    with pytest.raises(SpecError) as info:
        read_types(dash.source)
    assert str(info.value) == f"""\
{spec}:6: source.joins[1].path: 'nowhere.parquet' (relative paths are relative to the spec's folder {tmp_path}: {tmp_path}/nowhere.parquet): no such file or directory
    hint: {tmp_path} has no 'nowhere.parquet'; did you mean 'dim.parquet'?; fix the path, or make it absolute"""
    (tmp_path / "nowhere.parquet").write_bytes((tmp_path / "dim.parquet").read_bytes())
    assert read_types(dash.source) == {"k": "int", "d.id": "int", "d.name": "string",
                                       "e.id": "int", "e.name": "string"}


def test_a_file_name_too_long_for_the_file_system_is_an_error_at_its_path(tmp_path) -> None:
    """The file system refuses a name over 255 bytes (ENAMETOOLONG) where other names are
    merely missing: `stat` raised OSError, a traceback out of the loader and validate."""
    from brushfire.source import read_types

    long = "a" * 300
    spec = tmp_path / "s.yaml"
    spec.write_text(f"name: s\nsource:\n  path: {long}.parquet\n"
                    "views:\n  - {name: n, type: categorical, field: k}\n")
    with pytest.raises(SpecError) as info:
        read_types(load_dashboard(spec).source)
    assert str(info.value).startswith(f"{spec}:3: source.path: '{long}.parquet' (relative paths")
    assert str(info.value).endswith("): File name too long\n    hint: fix the path")
    spec.write_text(f"name: s\nsource:\n  path: {long}\n"  # no extension: a folder's files?
                    "views:\n  - {name: n, type: categorical, field: k}\n")
    with pytest.raises(SpecError, match="source.path: cannot tell the source's format"):
        load_dashboard(spec)


def test_a_json_spec_indented_with_tabs_is_read_with_its_lines() -> None:
    """JSON is YAML, but PyYAML refused a tab-indented JSON spec (JSON.stringify(spec,
    null, "\\t")) as "not valid YAML ... indent with spaces, not tabs"."""
    import json

    spec = {"name": "j", "title": "a\tb", "source": {"path": "f.parquet"},
            "views": [{"name": "c", "type": "categorical", "field": "k"}]}
    dash = parse_dashboard(json.dumps(spec, indent="\t"), filename="d.json")
    assert (dash.title, dash.views[0].field) == ("a\tb", "k")  # (a string's tab is JSON's escape)
    spec["views"][0]["titel"] = "x"
    with pytest.raises(SpecError, match=r"^d\.json:12: views\[0\]\.titel: unknown key 'titel'"):
        parse_dashboard(json.dumps(spec, indent="\t"), filename="d.json")
    with pytest.raises(SpecError, match="indent with spaces, not tabs"):  # (YAML, not JSON)
        parse_dashboard("name: j\n\tviews: []\n", filename="d.yaml")


def test_an_unquoted_date_or_time_is_read_as_its_iso_text() -> None:
    """YAML reads `2012-01-01` as a date and `2012-06-01 10:30:00` as a time, where a spec
    takes times as ISO text: a time parameter's natural default was refused with
    "expected a string or a number, got datetime.date(2012, 1, 1)"."""
    dash = parse_dashboard("""\
name: w
source: {path: weather.parquet}
views:
  - {name: t, type: temporal, field: date, unit: month}
interactions:
  parameters:
    - {name: span, field: date, widget: slider, op: between, default: [2012-01-01, 2013-01-01]}
    - {name: since, field: date, widget: slider, op: gte, default: 2012-06-01 10:30:00}
    - {name: until, field: date, widget: slider, op: lt, default: 2012-06-01T10:30:00Z}
    - {name: day, field: date, multiple: true, default: [2012-01-02]}
""")
    assert [p.default for p in dash.interactions.parameters] == [
        ["2012-01-01", "2013-01-01"], "2012-06-01T10:30:00", "2012-06-01T10:30:00+00:00", ["2012-01-02"]]


def test_numpy_numbers_and_booleans_of_a_notebooks_dict_are_taken() -> None:
    """A spec built in a notebook holds numpy's scalars (an extent from `df.x.min()`, a
    clamp from a comparison): numbers and booleans as the spec's own, not text."""
    import numpy as np

    dash = parse_dashboard({
        "name": "d", "source": {"path": "x.parquet"},
        "views": [{"name": "h", "type": "histogram", "field": "x",
                   "bin": {"step": np.int64(10), "extent": [np.float32(0), np.int64(100)],
                           "clamp": np.bool_(True)}},
                  {"name": "c", "type": "categorical", "field": "c", "top": np.int64(5),
                   "other": np.bool_(False)}]})
    assert dash.views[0].bin.clamp is True and dash.views[0].bin.step == 10
    assert dash.views[1].top == 5 and dash.views[1].other is False


def test_a_character_escaped_as_its_utf16_pair_is_the_character() -> None:
    """JSON writers (Python's json.dumps) escape 🔥 as its UTF-16 pair, which PyYAML reads as
    two lone halves: joined into the character (half a pair alone is refused:
    bad/yaml_lone_surrogate.yaml)."""
    text = json.dumps({"name": "d", "title": "a 🔥", "source": {"path": "x.parquet"},
                       "views": [{"name": "c", "type": "categorical", "field": "c", "title": "🔥"}]})
    assert "\\ud83d\\udd25" in text
    dash = parse_dashboard(text, "s.json")
    assert (dash.title, dash.views[0].title) == ("a 🔥", "🔥")


def test_numbers_with_an_exponent_are_numbers_as_json_writes_them() -> None:
    """YAML 1.1 reads `1e1` (no dot, no sign in the exponent) as text, which the models
    coerced to a number; now that quoted text is refused as a number, the loader reads
    them as numbers, as JSON and YAML 1.2 do."""
    dash = parse_dashboard("""\
name: d
source: {path: x.parquet}
views:
  - {name: h, type: histogram, field: x, bin: {step: 1e1, extent: [-1E2, 1.5e2]}}
""")
    assert (dash.views[0].bin.step, dash.views[0].bin.extent) == (10.0, (-100.0, 150.0))


@pytest.mark.parametrize(("written", "step"), [
    ("010", 10), ("0010", 10), ("+5", 5), ("0x10", 16), ("0o10", 8), ("012.5", 12.5), (".5", 0.5),
    ("1:30", "views[0].bin.step: expected a number, got '1:30'"),
    ("1_000", "views[0].bin.step: expected a number, got '1_000'"),
    ("0b11", "views[0].bin.step: expected a number, got '0b11'"),
])
def test_integers_are_read_as_json_and_yaml_1_2_read_them(written: str, step) -> None:
    """YAML 1.1 (PyYAML) read `010` as the octal 8, `1:30` as the sexagesimal 90, `0b11` as
    3 and `1_000` as 1000: `step: 010` was a step of 8, silently. Now as YAML 1.2's core
    schema: decimal (leading zeros too), 0o octal and 0x hex; the rest is text, refused
    where a number goes (with no hint to unquote it: it was not quoted)."""
    text = f"name: d\nsource: {{path: x.parquet}}\nviews:\n  - {{name: h, type: histogram, field: x, bin: {{step: {written}}}}}\n"
    if isinstance(step, str):
        with pytest.raises(SpecError) as info:
            parse_dashboard(text, "s.yaml")
        assert str(info.value) == f"s.yaml:4: {step}"
        return
    assert parse_dashboard(text, "s.yaml").views[0].bin.step == step


@pytest.mark.parametrize(("written", "title"), [
    ("1984", "1984"), ("1.50", "1.50"), ("1e3", "1e3"), ("0x1F", "0x1F"), (".inf", ".inf"),
    ("010", "010"), ("1:30", "1:30"), ("1_000", "1_000"),
    ("-0", "-0"), ("yes", "yes"), ("No", "No"), ("2012-06-01", "2012-06-01"),
    ("2012-02-30", "2012-02-30"),  # (no date: text, not a problem)
    ("'1.50'", "1.50"), ("US flights", "US flights"), ("~", None), ("", None),
])
def test_a_title_is_the_text_as_written(written: str, title: str | None) -> None:
    """A title YAML reads as a number, boolean or date (`title: 1984`) was refused as "not
    a string"; the dashboard's, a view's and a layout section's are the text as written
    (`1.50` stays '1.50', not 1.5)."""
    dash = parse_dashboard(f"""\
name: d
title: {written}
source: {{path: x.parquet}}
views:
  - name: c
    type: categorical
    field: cat
    title: {written}
layout:
  - title: {written}
    rows: [[c]]
""")
    assert (dash.title, dash.views[0].title, dash.layout[0].title) == (title, title, title)


def test_a_dict_specs_number_or_boolean_title_is_its_text() -> None:
    """A spec given as a dict (a notebook's, or JSON, which the schema lets have a number or
    boolean title) was refused as "not a string" where the same YAML is taken; names keep
    their check, and the caller's dict is left as it was."""
    spec = {"name": "d", "title": 1984, "source": {"path": "x.parquet"},
            "views": [{"name": "c", "type": "categorical", "field": "cat", "title": 1.5}],
            "layout": [{"title": True, "rows": [["c"]]}]}
    dash = parse_dashboard(spec)
    assert (dash.title, dash.views[0].title, dash.layout[0].title) == ("1984", "1.5", "true")
    assert spec["title"] == 1984 and spec["layout"][0]["title"] is True
    with pytest.raises(SpecError, match=r"views\[0\]\.name: expected a string, got 7"):
        parse_dashboard({**spec, "views": [{**spec["views"][0], "name": 7}]})


def test_only_titles_take_numbers_as_text() -> None:
    """Names and expressions keep YAML's reading: a number there is still refused, and an
    alias to a title's number elsewhere is a number."""
    with pytest.raises(SpecError) as info:
        parse_dashboard("name: d\ntitle: &n 1984\nsource: {path: x.parquet, columns: {one: *n}}\n"
                        "views:\n  - {name: 1984, type: categorical, field: cat}\n", "d.yaml")
    assert str(info.value) == """\
d.yaml:3: source.columns.one: expected a string, got 1984
    hint: quote it to make it a string: '1984'
d.yaml:5: views[0].name: expected a string, got 1984
    hint: quote it to make it a string: '1984'"""


def test_messages_name_the_parts_of_a_spec_as_its_author_does_not_the_models_classes():
    from brushfire.spec.problems import all_models, model_name

    names = {model: model_name(model) for model in all_models()}
    assert all(name == name.lower() for name in names.values()), names  # no 'HistogramView'
    assert names[m.HistogramView] == "a histogram view" and names[m.DashboardSpec] == "the dashboard"

    class SectionLayout(m.Model):  # a model added without a name of its own: its class's words
        pass

    assert model_name(SectionLayout) == "a section layout"


@pytest.mark.parametrize(("join", "view", "expected"), [
    ("key: iata, options: {header: 'true'}", "{name: n, type: categorical, field: d.nmae}", """\
{spec}:7: views[0].field: column 'd.nmae' is not in the table of join 'd' (dim.csv)
    columns: d.iata, d.name, d.lat
    hint: did you mean 'd.name'?"""),
    ("key: iata, options: {}", "{name: n, type: histogram, field: d.lat, bin: {maxbins: 5}}", None),  # (inferred: CSV_DEFAULTS)
    # without inferSchema, Spark reads every column of a CSV file as a string
    ("key: iata, options: {inferSchema: 'false'}", "{name: n, type: histogram, field: d.lat, bin: {maxbins: 5}}", """\
{spec}:7: views[0].field: column 'd.lat' is a string column, but a histogram view needs a number column
    hint: use a categorical view for strings, or derive a number in source.columns"""),
    ("key: iat, options: {header: 'true'}", "{name: n, type: categorical, field: d.name}", """\
{spec}:5: source.joins[0].key: column 'iat' is not in the table of join 'd' (dim.csv)
    columns: iata, name, lat
    hint: did you mean 'iata'?"""),
    ("key: iata, options: {header: 'false'}", "{name: n, type: categorical, field: d._c1}", """\
{spec}:5: source.joins[0].key: column 'iata' is not in the table of join 'd' (dim.csv)
    columns: _c0, _c1, _c2
    hint: Spark names a CSV file's columns _c0, _c1, ... unless it reads their names from its first line: drop header: "false" from the join's options"""),
], ids=["unknown_column", "inferred_kind_unchecked", "string_without_inferschema", "unknown_key",
        "key_without_header"])
def test_a_csv_dimension_tables_columns_are_checked_from_its_first_line(tmp_path, join, view, expected):
    """validate knows a local CSV dimension table's columns without Spark (its header):
    the key, `on` of a join below and joined columns are checked as a Parquet table's."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from brushfire.source import read_types

    pq.write_table(pa.table({"k": ["ORD"]}), tmp_path / "fact.parquet")
    (tmp_path / "dim.csv").write_text("iata,name,lat\nORD,O'Hare,41.9\n")
    spec = tmp_path / "s.yaml"
    spec.write_text(f"name: s\nsource:\n  path: fact.parquet\n  joins:\n"
                    f"    - {{name: d, path: dim.csv, on: k, {join}}}\n"
                    f"views:\n  - {view}\n")
    if expected is None:
        dash = load_dashboard(spec)
        check_columns(dash, read_types(dash.source))
        return
    with pytest.raises(SpecError) as info:
        dash = load_dashboard(spec)
        check_columns(dash, read_types(dash.source))
    assert str(info.value) == expected.format(spec=spec)


def test_the_columns_known_without_spark_hold_the_joins(tmp_path):
    """`source_columns` (what a message's column names are checked against before Spark
    starts): a CSV dimension table's columns too, so that a lazy `filter` or unlisted
    details column over one is answered (it was refused: 'no column ... in the source');
    None (only Spark can tell) while a dimension table's columns are unknown (JSON)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from brushfire.source import source_columns

    pq.write_table(pa.table({"k": ["ORD"], "n": [1]}), tmp_path / "fact.parquet")
    (tmp_path / "fact.csv").write_text("k,n\nORD,1\n")
    (tmp_path / "dim.csv").write_text("iata,country\nORD,USA\n")
    (tmp_path / "dim.json").write_text('{"iata": "ORD", "country": "USA"}\n')

    def columns(source: str, dim: str, options: str = "{header: 'true'}"):
        spec = tmp_path / "s.yaml"
        spec.write_text(f"name: s\nsource:\n  path: {source}\n  options: {{header: 'true'}}\n  joins:\n"
                        f"    - {{name: d, path: {dim}, key: iata, on: k, options: {options}}}\n"
                        "views:\n  - {name: c, type: categorical, field: d.country}\n")
        return source_columns(load_dashboard(spec).source)

    assert columns("fact.parquet", "dim.csv", "{inferSchema: 'false'}") == {
        "k": "string", "n": "number", "d.iata": "string", "d.country": "string"}
    assert columns("fact.parquet", "dim.csv") == {  # inferred at capture (CSV_DEFAULTS)
        "k": "string", "n": "number", "d.iata": None, "d.country": None}
    assert columns("fact.csv", "dim.csv") == {"k": None, "n": None, "d.iata": None, "d.country": None}
    assert columns("fact.parquet", "dim.json", "{}") is None


def test_the_columns_known_without_spark_leave_a_partitioned_csv_folder_to_spark(tmp_path):
    """A CSV folder of `key=value` subfolders has those keys as columns too, which no
    file's first line names: `source_columns` gave the first file's names alone, and a lazy
    `filter` on `year` (or details of it) was refused, 'no column ... in the source'. And a
    first line with a byte-order mark named its first column with it."""
    from brushfire.source import source_columns

    for year in (2023, 2024):
        (tmp_path / "part" / f"year={year}").mkdir(parents=True)
        (tmp_path / "part" / f"year={year}" / "a.csv").write_text("price,cat\n1.5,a\n")
    spec = tmp_path / "s.yaml"
    spec.write_text("name: s\nsource: {path: part, format: csv}\nviews:\n"
                    "  - {name: c, type: categorical, field: cat}\n")
    assert source_columns(load_dashboard(spec).source) is None  # (Spark's to tell)
    (tmp_path / "b.csv").write_bytes("\ufeffprice,cat\n1.5,a\n".encode())
    spec.write_text(spec.read_text().replace("{path: part, format: csv}", "{path: b.csv}"))
    assert source_columns(load_dashboard(spec).source) == {"price": None, "cat": None}


def test_a_csv_header_with_a_quote_in_a_name_is_left_to_spark(tmp_path) -> None:
    """Spark's CSV reader (escape '\\') names the header field `"q""r"` '"q""r"', where
    Python's csv module reads q"r: validate refused the name Spark gives and passed the one
    capture then refused. Such a header is not read plainly: its names are Spark's to tell."""
    from brushfire.source import csv_source_names, source_columns

    spec = tmp_path / "s.yaml"
    spec.write_text("name: s\nsource: {path: q.csv}\nviews:\n  - {name: c, type: categorical, field: x}\n")
    for header in ['x,"s\\"t"']:
        (tmp_path / "q.csv").write_text(f"{header}\n1,2\n")
        source = load_dashboard(spec).source
        assert csv_source_names(source) is None and source_columns(source) is None, header
    # a doubled quote: Spark reads q"r as Python does with the default escape (the quote,
    # as RFC 4180), and keeps "q""r" whole with a backslash for escape
    (tmp_path / "q.csv").write_text('x,"q""r"\n1,2\n')
    assert csv_source_names(load_dashboard(spec).source) == {"x": None, 'q"r': None}
    spec.write_text(spec.read_text().replace("{path: q.csv}", '{path: q.csv, options: {escape: "\\\\"}}'))
    assert csv_source_names(load_dashboard(spec).source) is None
    (tmp_path / "q.csv").write_text('x,"a,b"\n1,2\n')  # (a quoted name without a quote in it)
    assert csv_source_names(load_dashboard(spec).source) == {"x": None, "a,b": None}


@pytest.mark.parametrize("text", ["", "\n", "\nx,y\n1,2\n"], ids=["empty", "blank", "blank_first_line"])
@pytest.mark.parametrize("header", ["true", "false"])
def test_a_csv_file_empty_or_with_a_blank_first_line_is_left_to_spark(tmp_path, capsys, text, header):
    """An empty CSV source (or one whose first line is blank, which Spark skips) made
    validate end in an IndexError traceback, or (header: false) say it had no columns."""
    from brushfire.cli import main
    from brushfire.source import csv_source_names

    (tmp_path / "e.csv").write_text(text)
    spec = tmp_path / "s.yaml"
    spec.write_text(f"name: s\nsource: {{path: e.csv, options: {{header: '{header}'}}}}\nviews:\n"
                    "  - {name: c, type: categorical, field: x}\n")
    assert csv_source_names(load_dashboard(spec).source) is None
    assert main(["validate", str(spec)]) == 0
    assert capsys.readouterr().out == f"{spec}: ok (columns are checked at capture, or with --spark)\n"


@pytest.mark.parametrize("column", ["l", "m", "s"])
def test_a_categorical_view_over_a_list_map_or_struct_column_is_refused_before_spark(tmp_path, column):
    """validate passed it, and capture failed in Spark's scan (pyarrow's dictionary_encode
    has no kernel for list<int64> or map<string, int64>)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from brushfire.source import read_types

    pq.write_table(pa.table({"l": pa.array([[1, 2]]), "s": pa.array([{"x": 1}]), "ok": [True],
                             "m": pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int64()))}),
                   tmp_path / "n.parquet")
    spec = tmp_path / "s.yaml"
    spec.write_text("name: s\nsource: {path: n.parquet}\nviews:\n"
                    f"  - {{name: v, type: categorical, field: {column}}}\n"
                    "  - {name: b, type: categorical, field: ok}\n")
    dash = load_dashboard(spec)
    with pytest.raises(SpecError) as info:
        check_columns(dash, read_types(dash.source))
    assert str(info.value) == (
        f"{spec}:4: views[0].field: column {column!r} is a list, map or struct column, but a "
        "categorical view needs a column of single values\n"
        "    hint: pick a column of single values, or derive one in source.columns")


def test_a_folder_without_format_takes_the_format_its_files_share(tmp_path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    def spec_over(folder: str) -> str:
        spec = tmp_path / f"{folder}.yaml"
        spec.write_text(f"name: s\nsource: {{path: {folder}}}\nviews:\n"
                        "  - {name: c, type: categorical, field: k}\n")
        return str(spec)

    (tmp_path / "parts" / "year=2001").mkdir(parents=True)
    pq.write_table(pa.table({"k": ["a"]}), tmp_path / "parts" / "year=2001" / "p0.parquet")
    pq.write_table(pa.table({"k": ["b"]}), tmp_path / "parts" / "p1.PARQUET")
    (tmp_path / "parts" / "_SUCCESS").write_text("")  # not data, as Spark lists a folder
    assert load_dashboard(spec_over("parts")).source.format == "parquet"
    (tmp_path / "rows").mkdir()
    (tmp_path / "rows" / "a.csv").write_text("k\na\n")
    assert load_dashboard(spec_over("rows")).source.format == "csv"
    (tmp_path / "table" / "_delta_log").mkdir(parents=True)
    assert load_dashboard(spec_over("table")).source.format == "delta"
    (tmp_path / "rows" / "b.json").write_text('{"k": "b"}\n')  # two kinds: the format must be given
    with pytest.raises(SpecError, match="cannot tell the source's format: 'rows' has no extension"):
        load_dashboard(spec_over("rows"))


def test_a_folder_of_several_formats_or_none_says_what_it_holds(tmp_path) -> None:
    """A folder without format whose files share no format said only "'rows' has no
    extension" (and "'.' has extension '.'"); then `format: csv`, as its hint asked, read
    the README in the folder as CSV rows."""
    def problem(folder: str) -> str:
        spec = tmp_path / "d.yaml"
        spec.write_text(f"name: s\nsource: {{path: {folder}}}\nviews:\n"
                        "  - {name: c, type: categorical, field: k}\n")
        with pytest.raises(SpecError) as e:
            load_dashboard(spec)
        return str(e.value)

    (tmp_path / "rows").mkdir()
    for name in ("a.csv", "b.csv", "README.md"):
        (tmp_path / "rows" / name).write_text("k\na\n")
    assert problem("rows") == (
        f"{tmp_path / 'd.yaml'}:2: source.path: cannot tell the source's format: 'rows' has no "
        "extension, and the folder's data files are of several formats (csv: 2 files, md: README.md)\n"
        "    formats: parquet, csv, json, orc, delta\n"
        "    hint: add format: csv to source, and move the files of other formats out of the folder "
        "(Spark reads every file in it as that format)")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "_SUCCESS").write_text("")  # not data, as Spark lists a folder
    assert problem("empty").startswith(
        f"{tmp_path / 'd.yaml'}:2: source.path: cannot tell the source's format: 'empty' has no "
        "extension, and the folder holds no data files\n")
    assert "source.path: cannot tell the source's format: '.' has no extension, and the folder's " \
        "data files are of several formats (" in problem(".")


def test_compressed_csv_and_json_files_are_read_by_the_extension_before_their_codec(tmp_path) -> None:
    """`day.csv.gz` is a CSV file Spark decompresses as it reads: validate said it could not
    tell the format of '.gz' and asked for `format: parquet`; a folder of them too."""
    import gzip

    (tmp_path / "day.csv.gz").write_bytes(gzip.compress(b"k\na\n"))
    (tmp_path / "logs.JSONL.bz2").write_bytes(b"")
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "a.csv.gz").write_bytes(gzip.compress(b"k\na\n"))
    (tmp_path / "parts" / "b.csv").write_text("k\nb\n")
    for path, fmt in (("day.csv.gz", "csv"), ("logs.JSONL.bz2", "json"), ("parts", "csv")):
        spec = tmp_path / "s.yaml"
        spec.write_text(f"name: s\nsource: {{path: {path}}}\nviews:\n"
                        "  - {name: c, type: categorical, field: k}\n")
        assert load_dashboard(spec).source.resolved_format == fmt, path


@pytest.mark.parametrize(("name", "hint"), [
    ("flights.arrow", "Spark reads no Arrow IPC (Feather) file: write it as Parquet"),
    ("sheet.xlsx", "Spark reads no spreadsheet: save the sheet as CSV"),
    ("rows.tsv", 'add format: csv and options: {sep: "\\t"} to source'),
    ("rows.parquet.gz", "Spark decompresses CSV and JSON files only"),
    ("rows.txt", "add format: parquet (or csv, json, orc) to source"),
])
def test_a_format_spark_does_not_read_says_what_to_do(tmp_path, name, hint) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text(f"name: s\nsource: {{path: {name}}}\nviews:\n"
                    "  - {name: c, type: categorical, field: k}\n")
    with pytest.raises(SpecError) as info:
        load_dashboard(spec)
    assert hint in str(info.value).split("hint: ", 1)[1]


def test_a_copy_in_progress_is_no_data_file_as_spark_lists_a_folder(tmp_path) -> None:
    """Spark skips a file whose name ends with '._COPYING_' (`hadoop fs -put` writes it so,
    then renames it): it was a data file here, so a folder holding one had two kinds of
    files (no format), and the files listed without Spark were never those the capture
    read: `serve --watch` found the source changed at every check and captured it again."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from brushfire.spec.loader import data_files

    (tmp_path / "parts").mkdir()
    pq.write_table(pa.table({"k": ["a"]}), tmp_path / "parts" / "p0.parquet")
    (tmp_path / "parts" / "p1.parquet._COPYING_").write_bytes(b"PAR1")
    assert data_files(tmp_path / "parts") == [tmp_path / "parts" / "p0.parquet"]
    spec = tmp_path / "s.yaml"
    spec.write_text("name: s\nsource: {path: parts}\nviews:\n  - {name: c, type: categorical, field: k}\n")
    assert load_dashboard(spec).source.format == "parquet"


def test_json_lines_files_by_their_usual_extensions_are_json(tmp_path) -> None:
    """'.jsonl' and '.ndjson' are JSON Lines' usual extensions: a file or a folder of them is
    read as JSON, where validate said it could not tell the format."""
    (tmp_path / "logs.jsonl").write_text('{"k": "a"}\n')
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "a.ndjson").write_text('{"k": "a"}\n')
    (tmp_path / "parts" / "b.jsonl").write_text('{"k": "b"}\n')
    for path in ("logs.jsonl", "parts"):
        spec = tmp_path / "s.yaml"
        spec.write_text(f"name: s\nsource: {{path: {path}}}\nviews:\n"
                        "  - {name: c, type: categorical, field: k}\n")
        assert load_dashboard(spec).source.resolved_format == "json", path


@pytest.mark.parametrize(("text", "expected"), [
    ('a,b\n1,"x"\n', False),
    ('a,b\n1,"x,y"\n', False),  # a quoted comma
    ('a,b\n1,"x\ny"\n', True),
    ('a,b\r\n1,"x\r\ny"\r\n', True),
    ('a,b\n1,"x\ry"\n', True),  # (Spark's line reader breaks at \r too)
    ('"a\nb",c\n1,2\n', True),  # in the header
    ('a,b\n1,"x "" y"\n2,z\n', False),  # a doubled quote is two
    ('a,b\n1,"x ""\n y"\n', True),
    ('a,b\n1,"x \\" y"\n2,z\n', False),  # an escaped quote none, as Spark reads \"
    ('a,b\n1,5" screen\n2,z\n', True),  # a quote in an unquoted field: read whole, alike
])
def test_a_quoted_line_break_in_a_csv_file_is_found(tmp_path, text: str, expected: bool) -> None:
    from brushfire.spec.loader import quoted_line_break

    path = tmp_path / "f.csv"
    path.write_bytes(text.encode())
    assert [quoted_line_break(path, chunk=n) for n in (1, 2, 3, 5, 1 << 20)] == [expected] * 5


def test_a_comma_csv_read_with_another_separator_gets_the_comma_as_its_hint(tmp_path, capsys) -> None:
    """A spec giving sep: ";" for a file separated by commas read it as one column too, and
    the hint said "add it to source.columns as a derived column"."""
    from brushfire.cli import main

    (tmp_path / "d.csv").write_text("id,name,v\n1,a,2\n")
    spec = tmp_path / "s.yaml"
    spec.write_text('name: s\nsource: {path: d.csv, options: {sep: ";"}}\nviews:\n'
                    "  - {name: n, type: categorical, field: name}\n")
    assert main(["validate", str(spec)]) == 1
    assert "it looks separated by ',', not ';'; give source.options: {sep: \",\"}" in capsys.readouterr().err


@pytest.mark.parametrize(("header", "sep"), [("id;name;v", ";"), ("id\tname", "\\t"), ("id|name", "|")])
def test_a_csv_separated_otherwise_than_by_commas_gets_the_separator_as_its_hint(tmp_path, capsys, header,
                                                                                  sep) -> None:
    """Spark reads a CSV split by ',' unless told: a European ';' file is one column named
    after its whole first line, and "did you mean 'id;name;v'?" was the hint."""
    from brushfire.cli import main

    (tmp_path / "d.csv").write_text(f"{header}\n" + header.replace("id", "1").replace("name", "a") + "\n")
    spec = tmp_path / "s.yaml"
    spec.write_text("name: s\nsource: {path: d.csv}\nviews:\n  - {name: n, type: categorical, field: name}\n")
    assert main(["validate", str(spec)]) == 1
    assert f'it looks separated by \'{sep}\', not \',\'; give source.options: {{sep: "{sep}"}}' \
        in capsys.readouterr().err
    spec.write_text(spec.read_text().replace("{path: d.csv}", f'{{path: d.csv, options: {{sep: "{sep}"}}}}'))
    assert main(["validate", str(spec)]) == 0, capsys.readouterr().err
    (tmp_path / "d.csv").write_text("id,names\n1,a\n")  # (a comma file: the usual hint)
    spec.write_text(spec.read_text().replace(f', options: {{sep: "{sep}"}}', ""))
    assert main(["validate", str(spec)]) == 1
    assert "did you mean 'names'?" in capsys.readouterr().err


def test_a_csv_file_is_scanned_for_line_breaks_once_per_version(tmp_path, monkeypatch) -> None:
    """A server loads its specs again on each reload: an unchanged file is not read again."""
    import brushfire.spec.loader as loader

    scans = []
    real = loader.quoted_line_break
    monkeypatch.setattr(loader, "quoted_line_break", lambda *a: scans.append(a[0]) or real(*a))
    data = tmp_path / "d.csv"
    data.write_text('id,note\n1,"two\nlines"\n', newline="")
    spec = tmp_path / "s.yaml"
    spec.write_text("name: s\nsource: {path: d.csv}\nviews:\n  - {name: n, type: categorical, field: note}\n")
    for _ in range(3):
        assert load_dashboard(spec).source.options == {"multiLine": "true"}
    assert len(scans) == 1
    data.write_text('id,note\n1,"one line"\n', newline="")
    assert load_dashboard(spec).source.options == {}
    assert len(scans) == 2


def test_a_csv_with_a_quoted_line_break_is_read_with_multiline(tmp_path, capsys) -> None:
    """Spark's CSV reader reads a file line by line unless `multiLine`: a quoted field with
    a line break was two broken rows. The loader asks for multiLine where a file needs it
    (not otherwise: it reads each file whole, in one task), unless the options say; and
    validate reads a header name's line break as Spark then does."""
    from brushfire.cli import main

    data = tmp_path / "d"
    data.mkdir()
    (data / "1.csv").write_text('id,"unit\nprice",note\n1,2.5,plain\n', newline="")
    (data / "2.csv").write_text('id,"unit\nprice",note\n2,3.5,"two\nlines"\n', newline="")
    spec = tmp_path / "s.yaml"
    spec.write_text('name: s\nsource: {path: d, format: csv}\nviews:\n'
                    '  - {name: p, type: histogram, field: "unit\\nprice", bin: {step: 1}}\n')
    assert load_dashboard(spec).source.options == {"multiLine": "true"}
    assert main(["validate", str(spec)]) == 0, capsys.readouterr().err
    spec.write_text(spec.read_text().replace("unit\\nprice", "unit\\nprize"))
    assert main(["validate", str(spec)]) == 1
    assert "hint: did you mean 'unit\\nprice'?" in capsys.readouterr().err
    (data / "2.csv").write_text('id,unit price,note\n2,3.5,"one line"\n', newline="")
    (data / "1.csv").unlink()
    assert load_dashboard(spec).source.options == {}
    (data / "2.csv").write_text('id,price,note\n2,3.5,"two\nlines"\n', newline="")
    for given in ("false", "TRUE"):
        spec.write_text(spec.read_text().replace("format: csv}", f"format: csv, options: {{multiline: '{given}'}}}}")
                        if "options" not in spec.read_text() else spec.read_text().replace("'false'", "'TRUE'"))
        assert load_dashboard(spec).source.options == {"multiline": given}
