"""Reading YAML with line marks: the document's nodes, the line of each key, duplicate keys,
non-string keys, and bounds on nesting and on alias expansion (a document that grows
exponentially through aliases is refused before it is built).
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from brushfire.errors import SpecError, SpecProblem
from brushfire.spec.models import DISPLAY_TEXT
from brushfire.spec.problems import PLAIN_FLOAT, PLAIN_INT, Loc, render

# --- reading YAML with line marks ------------------------------------------------------


MAX_DEPTH = 64  # nesting levels; real specs use fewer than 10
MAX_NODES = 100_000  # values in the document once aliases (*name) are expanded


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, reading plain numbers as JSON and YAML 1.2 do: `1e3` and
    `1.5e-3` are numbers (YAML 1.1's floats need a dot and a signed exponent: PyYAML read
    them as text, which the models took as numbers while they coerced quoted text), and
    `010` is ten. YAML 1.1 read `010` as the octal 8, `1:30` as the sexagesimal 90 and
    `0b11`, `1_000` as 3 and 1000: `step: 010` was a step of 8, silently. As in YAML 1.2's
    core schema, integers are decimal (leading zeros too), `0o` octal or `0x` hex; the
    other forms are text, which a number's key refuses at its line."""

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        text = self.construct_scalar(node)
        base = {"0o": 8, "0x": 16}.get(text[:2].lower(), 10)
        return int(text[2:] if base != 10 else text, base)


_INT, _FLOAT = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
_Loader.yaml_implicit_resolvers = {  # (YAML 1.1's numbers out; 1.2's in, below)
    first: [(tag, rx) for tag, rx in resolvers if tag not in (_INT, _FLOAT)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_Loader.add_implicit_resolver(_INT, PLAIN_INT, list("-+0123456789"))
_Loader.add_implicit_resolver(_FLOAT, PLAIN_FLOAT, list("-+0123456789."))
_Loader.add_constructor(_INT, _Loader.construct_yaml_int)


def read_yaml(text: str, filename: str) -> tuple[yaml.Node | None, Any]:
    """The document's node tree (for lines) and its Python value.

    Refused before anything walks the tree: nesting deeper than MAX_DEPTH (PyYAML's
    composer is recursive) and aliases expanding to more than MAX_NODES values (a
    "billion laughs" document is a few lines that expand to billions of values).
    """
    text = _json_tabs_as_spaces(text)
    try:
        _check_depth(text, filename)
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
            if node is not None:
                _check_expansion(node, filename)
                _no_surrogates(node, filename)
                _string_keys(node)
                _display_text(node, DISPLAY_TEXT)
            raw = _construct(loader, node, filename) if node is not None else None
        finally:
            loader.dispose()
    except yaml.YAMLError as e:
        raise SpecError([_yaml_problem(e, text, filename)]) from None
    return node, raw


def _json_tabs_as_spaces(text: str) -> str:
    """A JSON spec indented with tabs (JSON.stringify(spec, null, "\\t")) as the same
    document indented with spaces. JSON is YAML, but PyYAML refuses a tab that indents
    ("indent with spaces, not tabs"); in valid JSON a tab is only ever white space between
    tokens (a string holds it as the escape \\t), so each one becomes a space, on its line."""
    if "\t" not in text or not text.lstrip("\ufeff \t\r\n").startswith("{"):
        return text
    try:
        json.loads(text)
    except ValueError:
        return text  # (not JSON: YAML says what is wrong, at its line)
    return text.replace("\t", " ")


_BOOL = "tag:yaml.org,2002:bool"
# what PyYAML's scalar constructors raise on a value their type cannot hold (not YAMLError)
_SCALAR_ERRORS = (ValueError, TypeError, AttributeError, OverflowError)
_TYPE_NAMES = {"timestamp": "date or time", "int": "integer", "float": "number", "bool": "boolean"}


def _construct(loader: yaml.SafeLoader, root: yaml.Node, filename: str) -> Any:
    """The document's value. A date that does not exist (`2024-02-30`, which YAML reads as a
    date) or a tag on a value it does not fit (`!!int name`, `!!timestamp soon`) makes
    PyYAML's constructors raise ValueError or AttributeError: a problem at that value."""
    try:
        return loader.construct_document(root)
    except _SCALAR_ERRORS as e:
        error = e
    probe = _Loader("")
    try:
        for loc, node in _scalars(root):
            try:
                probe.construct_object(node)
            except _SCALAR_ERRORS as e:
                kind = node.tag.rsplit(":", 1)[-1]
                msg = f"{node.value!r} is not a valid {_TYPE_NAMES.get(kind, kind)}"
                if isinstance(e, ValueError) and kind == "timestamp":
                    msg += f": {e}"
                implicit = probe.resolve(yaml.ScalarNode, node.value, (True, False)) == node.tag
                hint = ("write a date that exists, or quote the value to keep it as text" if implicit
                        else f"remove the '!!{kind}' tag, or write a value of that type")
                raise SpecError([SpecProblem(filename, node.start_mark.line + 1, render(loc),
                                             msg, hint)]) from None
    finally:
        probe.dispose()
    msg = f"not valid YAML: {error}"  # (no value fails alone: not seen)
    raise SpecError([SpecProblem(filename, root.start_mark.line + 1, "", msg, "check the values' types")])


def _scalars(root: yaml.Node):
    """(key path, node) of every scalar of the document in document order, keys included
    (at their mapping's path), without following an alias twice."""
    seen: set[int] = set()
    stack: list[tuple[Loc, yaml.Node]] = [((), root)]
    while stack:
        loc, node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            yield loc, node
        elif isinstance(node, yaml.MappingNode):  # (pushed last first: popped in document order)
            for k, v in reversed(node.value):
                stack.append(((*loc, str(k.value)), v))
                stack.append((loc, k))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(reversed([((*loc, i), v) for i, v in enumerate(node.value)]))


_SURROGATE = re.compile("[\ud800-\udfff]")


def _no_surrogates(root: yaml.Node, filename: str) -> None:
    """A double-quoted scalar's escapes write a character beyond U+FFFF as its UTF-16 pair
    ("\\ud83d\\udd25", as JSON writers do), which PyYAML reads as two halves: joined here
    into the character (🔥). Half a pair alone ("\\ud800") is no character: a path holding
    one made validate fail with a traceback (the file system cannot encode it), and a
    title, an option or a value would fail where Arrow, Spark or a reply encode it.
    Refused at its line and key (a key too), as the protocol refuses one in a message
    (requests._check_text)."""
    for loc, node in _scalars(root):
        if not isinstance(node.value, str) or not _SURROGATE.search(node.value):
            continue
        node.value = node.value.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")
        if bad := _SURROGATE.search(node.value):
            msg = (f"{node.value!r} holds a lone UTF-16 surrogate (U+{ord(bad.group()):04X}),"
                   " which is no Unicode character")
            hint = "write the character itself, or both halves of its pair (\\ud83d\\udd25 is 🔥)"
            raise SpecError([SpecProblem(filename, node.start_mark.line + 1, render(loc), msg, hint)])


def _string_keys(root: yaml.Node) -> None:
    """Keys read as written: YAML 1.1 reads a plain `on` (yes, no, off) as a boolean, but a
    key of a spec is a name (a join's `on:`), never a boolean. Values keep YAML's reading."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.tag == _BOOL and k.style is None:
                    k.tag = "tag:yaml.org,2002:str"
                stack.append(v)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)


_STR = "tag:yaml.org,2002:str"
_NULL = "tag:yaml.org,2002:null"


def _display_text(root: yaml.Node, paths: tuple[tuple[str, ...], ...]) -> None:
    """Plain scalars at the key paths of display text (models.DISPLAY_TEXT; '*': any
    item of a list) read as the text written: `title: 1984` is '1984' and `title: 1.50`
    '1.50', not a number the models refuse as "not a string" (nor 1.5); `title: yes` is
    'yes', `title: 2012-06-01` '2012-06-01'. Null (`title: ~`, or nothing) stays no title;
    a quoted value is as YAML reads it. The node is replaced, not changed: an alias to it
    elsewhere keeps YAML's reading."""
    for path in paths:
        parents = [root]
        for step in path[:-1]:
            if step == "*":
                parents = [n for p in parents if isinstance(p, yaml.SequenceNode) for n in p.value]
            else:
                parents = [v for p in parents if isinstance(p, yaml.MappingNode)
                           for k, v in p.value if isinstance(k, yaml.ScalarNode) and k.value == step]
        for parent in parents:
            if not isinstance(parent, yaml.MappingNode):
                continue
            for i, (k, v) in enumerate(parent.value):
                if isinstance(k, yaml.ScalarNode) and k.value == path[-1] and isinstance(v, yaml.ScalarNode) \
                        and v.style is None and v.tag not in (_STR, _NULL):
                    text = yaml.ScalarNode(_STR, v.value, v.start_mark, v.end_mark, v.style)
                    parent.value[i] = (k, text)


_OPEN = (yaml.BlockMappingStartToken, yaml.BlockSequenceStartToken,
         yaml.FlowMappingStartToken, yaml.FlowSequenceStartToken)
_CLOSE = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)


def _check_depth(text: str, filename: str) -> None:
    depth = 0
    for token in yaml.scan(text, Loader=yaml.SafeLoader):  # iterative, unlike composing
        if isinstance(token, _OPEN):
            depth += 1
            if depth > MAX_DEPTH:
                msg = f"the document nests more than {MAX_DEPTH} levels deep"
                hint = "a dashboard spec needs fewer than 10 levels: check the brackets"
                raise SpecError([SpecProblem(filename, token.start_mark.line + 1, "", msg, hint)])
        elif isinstance(token, _CLOSE):
            depth -= 1


def _check_expansion(root: yaml.Node, filename: str) -> None:
    """Count the values the document holds with its aliases expanded, without expanding
    them (each node's count is memoized), and refuse cycles and alias bombs."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_:
            msg = "a YAML alias refers to a value that contains it (a cycle)"
            raise SpecError([SpecProblem(filename, node.start_mark.line + 1, "", msg,
                                         "write the value out instead of the alias")])
        if isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = node.value
        else:
            children = []
        open_.add(key)
        sizes[key] = 1 + sum(size(c) for c in children)
        open_.discard(key)
        return sizes[key]

    total = size(root)
    if total <= MAX_NODES:
        return
    # point at the top-level key whose value expands the most (an alias's use, if any)
    if isinstance(root, yaml.MappingNode) and root.value:
        k, v = max(root.value, key=lambda kv: (size(kv[1]), kv[1].start_mark.line < kv[0].start_mark.line))
        line, path, n = k.start_mark.line + 1, str(k.value), size(v)
    else:
        line, path, n = root.start_mark.line + 1, "", total
    msg = (f"YAML aliases expand this to {n:,} values; a spec holds at most {MAX_NODES:,}"
           " (refusing what looks like an alias bomb)")
    hint = "write the values out, or use fewer nested aliases (*name)"
    raise SpecError([SpecProblem(filename, line, path, msg, hint)])


def _yaml_problem(e: yaml.YAMLError, text: str, filename: str) -> SpecProblem:
    """PyYAML's complaint, placed at the line to fix."""
    problem = str(getattr(e, "problem", None) or e).replace("'<stream end>'", "the end of the file")
    mark, context = getattr(e, "problem_mark", None), getattr(e, "context", None)
    cmark = getattr(e, "context_mark", None)
    line = mark.line + 1 if mark else None
    if isinstance(e, yaml.reader.ReaderError):  # a character YAML does not allow
        line = text.count("\n", 0, e.position) + 1
        code = ord(e.character) if isinstance(e.character, str) else e.character
        problem = f"character #x{code:04x} is not allowed in YAML ({e.reason})" \
            if isinstance(code, int) else str(e.reason)
    if cmark is not None and (line is None or line > len(text.splitlines())):
        line = cmark.line + 1  # the problem is the end of the file: point at what is left open
    msg = f"not valid YAML: {problem}"
    if context and cmark is not None and context.startswith("while"):
        msg += f" ({context} on line {cmark.line + 1})"
    elif context:
        msg = f"not valid YAML: {context}, {problem}"
    if "\\t" in problem:
        hint = "indent with spaces, not tabs"
    elif "another document" in problem:
        hint = "a spec file holds one dashboard: remove the second '---'"
    elif isinstance(e, yaml.reader.ReaderError):
        hint = "remove the control character (or write it as an escape in a quoted string)"
    elif "constructor for the tag" in problem:
        hint = "a spec holds plain YAML values: remove the '!!' tag"
    else:
        hint = "check the indentation, brackets and quotes on and above this line"
    return SpecProblem(filename, line, "", msg, hint)


_TEXT_KEYS = (_STR, "tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:merge")  # (a date: its ISO text)


def collect_lines(
    node: yaml.Node, loc: Loc, out: dict[Loc, int], problems: list[SpecProblem], filename: str
) -> None:
    """Map each key path to the line of its key (or of its item, in a list).

    YAML silently keeps the last of two equal keys in a mapping; we report them instead,
    and keys that are not text (`1:`, `null:`) at their own line, as written (the models
    saw `None` or `16` for `0x10`, and placed it at the mapping's first line).
    """
    out.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        first: dict[Any, int] = {}
        for k, v in node.value:
            line = k.start_mark.line + 1
            key = (*loc, k.value) if isinstance(k, yaml.ScalarNode) else (*loc, str(k.value))
            if isinstance(k, yaml.ScalarNode) and k.tag not in _TEXT_KEYS:
                written = k.value or "null"
                msg = f"key {written} is not a string"
                problems.append(SpecProblem(filename, line, render(loc), msg, f"quote it: '{written}'"))
            if key[-1] in first and key[-1] != "<<":
                msg = f"duplicate key {key[-1]!r} (first on line {first[key[-1]]})"
                hint = "YAML keeps only the last value: remove one of them"
                problems.append(SpecProblem(filename, line, render(key), msg, hint))
            first.setdefault(key[-1], line)
            out[key] = line
            collect_lines(v, key, out, problems, filename)
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            collect_lines(v, (*loc, i), out, problems, filename)


