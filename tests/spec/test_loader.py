"""Tests for brushfire.spec.loader: exact messages for broken specs, and column checks.

Each case under `bad/` is a small broken dashboard; the table pairs it with the exact text
of its `SpecError`, including the line of the offending key (checked by hand). Files are
loaded by a path relative to this folder, so the messages read `bad/<name>.yaml:<line>: ...`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from brushfire.errors import SpecError
from brushfire.spec.loader import check_columns, load_dashboard, parse_dashboard

HERE = Path(__file__).parent

BAD = [
    # --- unknown keys: the accepted keys, and a hint (a close match, or where it belongs)
    ("unknown_key_view.yaml", """\
bad/unknown_key_view.yaml:7: views[0].titel: unknown key 'titel'
    HistogramView accepts: name, title, aggregate, brush, scale, reverse, type, field, bin
    hint: did you mean 'title'?"""),
    ("unknown_key_bin.yaml", """\
bad/unknown_key_bin.yaml:11: views[0].bin.clmap: unknown key 'clmap'
    Bin accepts: step, extent, clamp
    hint: did you mean 'clamp'?"""),
    ("unknown_key_top_level.yaml", """\
bad/unknown_key_top_level.yaml:8: interaction: unknown key 'interaction'
    Dashboard accepts: name, title, source, views, interactions
    hint: did you mean 'interactions'?"""),
    ("unknown_key_categorical.yaml", """\
bad/unknown_key_categorical.yaml:8: views[0].topp: unknown key 'topp'
    CategoricalView accepts: name, title, aggregate, brush, scale, reverse, type, field, top, other
    hint: did you mean 'top'?"""),
    ("unknown_key_other_view_type.yaml", """\
bad/unknown_key_other_view_type.yaml:9: views[0].top: unknown key 'top'
    HistogramView accepts: name, title, aggregate, brush, scale, reverse, type, field, bin
    hint: 'top' is a key of CategoricalView, not HistogramView"""),
    ("unknown_key_heatmap_axis.yaml", """\
bad/unknown_key_heatmap_axis.yaml:11: views[0].y.clamp: unknown key 'clamp'
    Axis accepts: field, bin
    hint: 'clamp' is a key of Bin, not Axis"""),
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
    ("extent_empty.yaml", """\
bad/extent_empty.yaml:8: views[0].bin.extent: extent [500, 500] is empty: the first value must be below the second
    hint: write extent: [lo, hi] with lo < hi"""),
    ("extent_three_values.yaml", """\
bad/extent_three_values.yaml:10: views[0].bin.extent: expected two numbers [lo, hi], got [0, 1000, 3000]
    hint: e.g. extent: [0, 100]"""),
    # --- aggregates
    ("aggregate_median.yaml", """\
bad/aggregate_median.yaml:10: views[0].aggregate.op: unsupported aggregate op 'median'
    op accepts: count, sum, mean"""),
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
    # --- view types
    ("view_type_unknown.yaml", """\
bad/view_type_unknown.yaml:6: views[0].type: unknown view type 'pie'
    view types: histogram, temporal, categorical, heatmap"""),
    ("view_type_misspelled.yaml", """\
bad/view_type_misspelled.yaml:6: views[0].type: unknown view type 'histgram'
    view types: histogram, temporal, categorical, heatmap
    hint: did you mean 'histogram'?"""),
    ("view_type_missing.yaml", """\
bad/view_type_missing.yaml:8: views[1].type: missing required key 'type'
    view types: histogram, temporal, categorical, heatmap"""),
    # --- missing keys point at the mapping that lacks them
    ("missing_key_bin.yaml", """\
bad/missing_key_bin.yaml:5: views[0].bin: missing required key 'bin'
    HistogramView requires: name, type, field, bin"""),
    ("missing_key_source.yaml", """\
bad/missing_key_source.yaml:1: source: missing required key 'source'
    Dashboard requires: name, source, views"""),
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
bad/parameter_slider_without_op.yaml:10: interactions.parameters[0].op: a slider parameter needs a range op: lt, lte, gt or gte
    hint: add op: lt, lte, gt or gte, or use widget: dropdown for 'eq'"""),
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
    a dashboard spec has the keys: name, title, source, views, interactions
    hint: start the file with top-level keys, e.g. 'name: flights'"""),
    ("not_mapping_scalar.yaml", """\
bad/not_mapping_scalar.yaml:2: the document is a string, not a mapping
    a dashboard spec has the keys: name, title, source, views, interactions
    hint: start the file with top-level keys, e.g. 'name: flights'"""),
    ("not_mapping_empty.yaml", """\
bad/not_mapping_empty.yaml:1: the document is empty, not a mapping
    a dashboard spec has the keys: name, title, source, views, interactions
    hint: start the file with top-level keys, e.g. 'name: flights'"""),
    # --- at most three problems are shown, in file order
    ("many_problems.yaml", """\
bad/many_problems.yaml:8: views[0].bin.step: bin step must be a number > 0, got 0
    hint: step is the width of one bin, in the field's units
bad/many_problems.yaml:8: views[0].bin.extent: extent [180, -60] is empty: the first value must be below the second
    hint: write extent: [lo, hi] with lo < hi
bad/many_problems.yaml:9: views[0].aggregate.op: unsupported aggregate op 'median'
    op accepts: count, sum, mean
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
    hint: use a histogram view for numbers, or derive a timestamp in source.columns"""),
]


@pytest.mark.parametrize(("schema", "expected"), [c[1:] for c in COLUMN_CASES],
                         ids=[c[0] for c in COLUMN_CASES])
def test_check_columns(in_here: None, schema: dict[str, str], expected: str | None) -> None:
    dash = load_dashboard("good/columns.yaml")
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
    hint: derive a timestamp in source.columns, e.g. to_timestamp(...)"""
