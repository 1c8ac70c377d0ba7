"""Derived columns and static filters are Spark SQL *scalar* expressions over the source's
columns. This module parses them and refuses anything else before Spark sees them: no
subqueries, no functions outside an allow-list (so nothing that reads files, calls Java
methods or runs user code), no lambdas, comments, `;` or `${...}` substitution.

It also infers each expression's type roughly (int, decimal, double, string, temporal,
boolean, other; None when unknown), which lets `brushfire validate` catch a string
derived column used as a histogram field without Spark, and warn about decimal division
(Spark rounds a decimal quotient to 6 places). Spark's own analysis (capture/analyze.py)
has the last word on types.

`BRUSHFIRE_TRUSTED_EXPRESSIONS=1` turns the allow-list off, for deployments whose specs
come only from people trusted to run code on the Spark cluster (docs/spec.md).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

TRUSTED_ENV = "BRUSHFIRE_TRUSTED_EXPRESSIONS"
NUMBER = ("int", "decimal", "double")
MAX_LENGTH = 10_000  # characters of one expression
MAX_DEPTH = 50  # nesting of parentheses, calls and operators


def trusted() -> bool:
    """Is the allow-list turned off ($BRUSHFIRE_TRUSTED_EXPRESSIONS=1)?"""
    return os.environ.get(TRUSTED_ENV, "").strip().lower() in ("1", "true", "yes")


class ExpressionError(Exception):
    """An expression outside the allowed language; `pos` is the offset of the problem."""

    def __init__(self, message: str, hint: str = "", pos: int | None = None) -> None:
        super().__init__(message)
        self.message, self.hint, self.pos = message, hint, pos


@dataclass
class ExpressionInfo:
    """What an expression reads and yields."""

    # int, decimal, double, string, temporal, boolean, other; "value": not a condition, of
    # an unknown type (arithmetic on unknown columns); None: unknown
    kind: str | None
    columns: list[tuple[str, int]] = field(default_factory=list)  # (column, offset) as written
    decimal_divisions: list[str] = field(default_factory=list)  # source text of each one


# --- the allow-list -----------------------------------------------------------------------
# name -> result kind: a kind, or "arg" (the first argument's), "arg2" (the second's),
# "common" (the arguments' common type), "round" (the first argument's, decimals kept).

_FUNCTIONS: dict[str, str] = {}


def _allow(kind: str, names: str) -> None:
    for name in names.split():
        _FUNCTIONS[name] = kind


_allow("double", """sqrt cbrt exp expm1 ln log log10 log2 log1p pow power sin cos tan cot sec csc
    asin acos atan atan2 sinh cosh tanh asinh acosh atanh degrees radians pi e hypot sign signum
    rint nanvl double float try_divide""")
_allow("int", """ceil ceiling floor factorial width_bucket length char_length character_length
    octet_length bit_length ascii instr locate position levenshtein hash xxhash64 crc32 year
    quarter month day dayofmonth dayofweek dayofyear weekday weekofyear hour minute second
    datediff date_diff timestampdiff months_between unix_timestamp to_unix_timestamp unix_seconds
    unix_millis unix_micros unix_date extract date_part datepart int bigint smallint
    tinyint bit_count shiftleft shiftright find_in_set""")
_allow("arg", "abs negative positive round bround try_add try_subtract try_multiply mod pmod")
_allow("common", "coalesce greatest least ifnull nvl nullif nullifzero zeroifnull")
_allow("arg2", "if nvl2")
_allow("string", """lower upper lcase ucase substr substring substring_index left right trim
    ltrim rtrim btrim lpad rpad concat concat_ws replace translate regexp_replace regexp_extract
    split_part initcap reverse format_number format_string printf chr char date_format
    from_unixtime md5 sha1 sha2 hex conv soundex string overlay elt get_json_object""")
_allow("temporal", """date_trunc trunc to_date to_timestamp to_timestamp_ntz to_timestamp_ltz
    try_to_timestamp timestamp_seconds timestamp_millis timestamp_micros date_from_unix_date
    date_add date_sub dateadd timestampadd add_months last_day next_day make_date make_timestamp
    make_timestamp_ntz from_utc_timestamp to_utc_timestamp date timestamp""")
_allow("boolean", """isnan isnull isnotnull startswith endswith contains like ilike rlike
    regexp regexp_like boolean equal_null""")
_allow("decimal", "decimal")
_allow("null", "raise_error")  # fails the capture with a message: data checks

# functions refused with a reason (anything else outside the allow-list is refused too)
_DANGEROUS = {
    "reflect": "it calls Java methods", "java_method": "it calls Java methods",
    "try_reflect": "it calls Java methods", "read_files": "it reads files",
    "input_file_name": "it reveals file paths", "input_file_block_start": "it reveals files",
    "input_file_block_length": "it reveals files", "current_user": "it reveals the server's user",
    "user": "it reveals the server's user", "session_user": "it reveals the server's user",
    "rand": "it is not deterministic", "random": "it is not deterministic",
    "randn": "it is not deterministic", "uuid": "it is not deterministic",
    "current_date": "it is not deterministic", "current_timestamp": "it is not deterministic",
    "now": "it is not deterministic", "curdate": "it is not deterministic",
    "current_database": "it reveals the server's catalog", "version": "it reveals the server",
    "transform": "it takes a lambda function", "aggregate": "it is an aggregate",
    "count": "it is an aggregate", "sum": "it is an aggregate", "avg": "it is an aggregate",
    "min": "it is an aggregate", "max": "it is an aggregate", "explode": "it makes rows",
}

_TYPES = {
    "boolean": "boolean", "tinyint": "int", "byte": "int", "smallint": "int", "short": "int",
    "int": "int", "integer": "int", "bigint": "int", "long": "int", "float": "double",
    "real": "double", "double": "double", "decimal": "decimal", "dec": "decimal",
    "numeric": "decimal", "string": "string", "varchar": "string", "char": "string",
    "date": "temporal", "timestamp": "temporal", "timestamp_ntz": "temporal",
    "timestamp_ltz": "temporal", "binary": "other",
}
_UNITS = {"year", "years", "quarter", "month", "months", "week", "weeks", "day", "days",
          "dayofyear", "hour", "hours", "minute", "minutes", "second", "seconds", "millisecond",
          "milliseconds", "microsecond", "microseconds"}
_QUERY = {"select", "with", "from", "values", "table", "exists", "lateral", "transform", "map",
          "reduce"}
_NOT_SCALAR = {"over": "window functions", "filter": "aggregate filters",
               "within": "ordered-set aggregates", "ignore": "window functions",
               "respect": "window functions"}
_HINT = "spec expressions are limited to scalar expressions (docs/spec.md, 'Expressions')"


_NILADIC = {"current_date", "current_timestamp", "current_user", "user", "session_user",
            "current_database", "current_catalog", "current_schema", "current_timezone"}


SYNTAX_FUNCTIONS = ("timestampadd", "timestampdiff")  # Spark parses these; not in its registry


def allowed_functions() -> list[str]:
    return sorted(_FUNCTIONS)


# --- tokens ---------------------------------------------------------------------------------

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<comment>--|/\*)
  | (?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?:BD|bd|[LSYDFlsydf])?(?![A-Za-z0-9_]))
  | (?P<str>[rR]?'(?:[^'\\]|\\.)*'|[rR]?"(?:[^"\\]|\\.)*")
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<qident>`(?:[^`]|``)*`)
  | (?P<op><=>|<=|>=|<>|!=|==|\|\||::|->|=>|[-+*/%=<>()\[\],.&|^~!])
""", re.VERBOSE | re.DOTALL)


@dataclass(frozen=True)
class Token:
    kind: str  # num, str, ident, qident, op, end
    text: str
    pos: int

    @property
    def word(self) -> str:
        return self.text.lower() if self.kind == "ident" else ""


def tokenize(text: str) -> list[Token]:
    if "${" in text:  # Spark substitutes ${var} and ${env:NAME} everywhere, strings included
        msg = "'${' is not allowed: Spark would substitute a variable there"
        raise ExpressionError(msg, "write the value out", text.index("${"))
    out, pos = [], 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            ch = text[pos]
            if ch == ";":
                msg = "';' is not allowed: an expression is one value, not statements"
            elif ch in "'\"`":
                msg = f"unclosed {ch}"
            else:
                msg = f"unexpected character {ch!r}"
            raise ExpressionError(msg, "", pos)
        kind = match.lastgroup or ""
        if kind == "comment":
            msg = "comments are not allowed in spec expressions"
            raise ExpressionError(msg, "", pos)
        if kind != "ws":
            out.append(Token(kind, match.group(), pos))
        pos = match.end()
    out.append(Token("end", "", len(text)))
    return out


# --- the parser: recursive descent, inferring each sub-expression's kind -----------------


def analyze(text: str, columns: dict[str, str | None] | None = None,
            check: bool = True) -> ExpressionInfo:
    """Parse `text`, checking it against the allow-list (unless `check` is false), and
    infer its kind. `columns` maps known column names (case-insensitive, as Spark
    resolves them) to kinds. Raises ExpressionError."""
    if not text.strip():
        msg = "the expression is empty"
        raise ExpressionError(msg, "write a Spark SQL expression", 0)
    if len(text) > MAX_LENGTH:
        msg = f"the expression is longer than {MAX_LENGTH:,} characters"
        raise ExpressionError(msg, "", 0)
    parser = _Parser(text, tokenize(text), columns or {}, check)
    kind = parser.expression()
    parser.expect_end()
    return ExpressionInfo(kind, parser.columns, parser.divisions)


def _common(kinds: list[str | None]) -> str | None:
    """Spark's common type of several values, roughly (numbers widen to decimal, double)."""
    known = [k for k in kinds if k != "null"]
    if not known:
        return None
    if any(k is None for k in known):
        return None
    if "value" in known:
        return "value"
    if all(k in NUMBER for k in known):
        return "double" if "double" in known else "decimal" if "decimal" in known else "int"
    if len(set(known)) == 1:
        return known[0]
    return None


class _Parser:
    def __init__(self, text: str, tokens: list[Token], columns: dict[str, str | None],
                 check: bool) -> None:
        self.text, self.tokens, self.i, self.check = text, tokens, 0, check
        self.known = {c.lower(): k for c, k in columns.items()}
        self.columns: list[tuple[str, int]] = []
        self.divisions: list[str] = []
        self.depth = 0

    # --- tokens
    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def peek(self, n: int = 1) -> Token:
        return self.tokens[min(self.i + n, len(self.tokens) - 1)]

    def take(self) -> Token:
        t = self.tokens[self.i]
        self.i = min(self.i + 1, len(self.tokens) - 1)
        return t

    def at(self, *words: str) -> bool:
        t = self.tok
        return (t.kind == "op" and t.text in words) or (t.kind == "ident" and t.word in words)

    def accept(self, *words: str) -> bool:
        if self.at(*words):
            self.take()
            return True
        return False

    def expect(self, word: str, what: str = "") -> Token:
        if not self.at(word):
            self.fail(f"expected {word.upper() if word.isalpha() else repr(word)}"
                      + (f" {what}" if what else ""))
        return self.take()

    def expect_end(self) -> None:
        if self.tok.kind != "end":
            t = self.tok
            if t.word in _QUERY or t.word in ("where", "group", "order", "limit", "union", "join"):
                self.refuse_query(t)
            self.fail(f"unexpected {t.text!r} after a complete expression")

    def fail(self, message: str, hint: str = "", pos: int | None = None) -> None:
        t = self.tok
        if t.kind == "end" and not message.startswith("unexpected"):
            message += ", but the expression ended"
        elif t.kind != "end" and not message.startswith("unexpected"):
            message += f", got {t.text!r}"
        raise ExpressionError(message, hint, t.pos if pos is None else pos)

    def refuse(self, message: str, hint: str, pos: int) -> None:
        if self.check:
            raise ExpressionError(message, hint or _HINT, pos)

    def refuse_query(self, t: Token) -> None:
        msg = (f"{t.text.upper()} is not allowed: a spec expression is a scalar expression over"
               " the source's columns, not a query")
        raise ExpressionError(msg, _trust_hint(), t.pos)

    def nest(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            msg = f"the expression nests more than {MAX_DEPTH} levels deep"
            raise ExpressionError(msg, "", self.tok.pos)

    # --- grammar (precedence as Spark's: OR < AND < NOT < predicates < comparison
    # < | < ^ < & < + - || < * / % DIV < unary < postfix)
    def expression(self) -> str | None:
        self.nest()
        kind = self.disjunction()
        self.depth -= 1
        return kind

    def disjunction(self) -> str | None:
        kind = self.conjunction()
        while self.accept("or"):
            self.conjunction()
            kind = "boolean"
        return kind

    def conjunction(self) -> str | None:
        kind = self.negation()
        while self.accept("and"):
            self.negation()
            kind = "boolean"
        return kind

    def negation(self) -> str | None:
        if self.at("not", "!"):
            self.take()
            self.nest()
            self.negation()
            self.depth -= 1
            return "boolean"
        return self.predicate()

    def predicate(self) -> str | None:
        kind = self.comparison()
        while True:
            negated = self.at("not") and self.peek().word in ("between", "in", "like", "ilike",
                                                              "rlike", "regexp")
            if negated:
                self.take()
            if self.accept("between"):
                self.comparison()
                self.expect("and", "in BETWEEN ... AND ...")
                self.comparison()
            elif self.accept("in"):
                self.expect("(", "after IN")
                if self.tok.word in _QUERY:
                    self.refuse_query(self.tok)
                self.expression()
                while self.accept(","):
                    self.expression()
                self.expect(")", "to close IN (...)")
            elif self.at("like", "ilike", "rlike", "regexp"):
                self.take()
                if self.at("any", "all", "some"):
                    self.fail("LIKE ANY / ALL is not supported")
                self.comparison()
                if self.accept("escape"):
                    self.comparison()
            elif not negated and self.accept("is"):
                self.accept("not")
                if self.accept("distinct"):
                    self.expect("from", "in IS DISTINCT FROM")
                    self.comparison()
                elif not self.accept("null", "true", "false", "unknown"):
                    self.fail("expected NULL, TRUE, FALSE or DISTINCT FROM after IS")
            else:
                return kind
            kind = "boolean"

    def comparison(self) -> str | None:
        kind = self.bit_or()
        while self.at("=", "==", "<>", "!=", "<", "<=", ">", ">=", "<=>"):
            self.take()
            self.bit_or()
            kind = "boolean"
        return kind

    def bit_or(self) -> str | None:
        kind = self.bit_xor()
        while self.accept("|"):
            kind = _common([kind, self.bit_xor()])
        return kind

    def bit_xor(self) -> str | None:
        kind = self.bit_and()
        while self.accept("^"):
            kind = _common([kind, self.bit_and()])
        return kind

    def bit_and(self) -> str | None:
        kind = self.additive()
        while self.accept("&"):
            kind = _common([kind, self.additive()])
        return kind

    def additive(self) -> str | None:
        kind = self.multiplicative()
        while self.at("+", "-", "||"):
            op = self.take().text
            other = self.multiplicative()
            if op == "||":
                kind = "string"
            elif "temporal" in (kind, other):
                kind = "temporal" if op == "+" or other != "temporal" else "other"
            elif kind == "string" or other == "string":
                kind = "double"  # Spark casts strings to doubles in arithmetic
            else:
                kind = _common([kind, other]) if None not in (kind, other) else "value"
        return kind

    def multiplicative(self) -> str | None:
        start = self.tok.pos
        kind = self.unary()
        while self.at("*", "/", "%", "div"):
            op = self.take().text.lower()
            other = self.unary()
            if op == "div":
                kind = "int"
            elif op == "/":
                pair = {kind, other}
                if "decimal" in pair and pair <= {"decimal", "int", "null"}:
                    self.divisions.append(self.text[start:self.tok.pos].strip())
                    kind = "decimal"
                elif None in pair or "value" in pair:
                    kind = "value"
                else:
                    kind = "double"
            else:
                kind = _common([kind, other]) if None not in (kind, other) else "value"
        return kind

    def unary(self) -> str | None:
        if self.at("-", "+", "~"):
            self.take()
            self.nest()
            kind = self.unary()
            self.depth -= 1
            return kind
        return self.postfix()

    def postfix(self) -> str | None:
        start = self.tok.pos
        kind = self.primary()
        while True:
            if self.accept("["):
                self.expression()
                self.expect("]", "to close [...]")
                kind = None
            elif self.at(".") and self.peek().kind in ("ident", "qident"):
                self.take()
                field = self.take()
                if self.at("("):
                    name = self.text[start:self.tok.pos].strip()
                    self.refuse(f"function {name!r} is not allowed: qualified function names are"
                                " not", "", start)
                kind = None
                if self.columns and self.columns[-1][1] == start:  # `a.b`: a join's column
                    head = self.columns[-1][0]  # (or a struct's field), read as one name
                    name = field.text[1:-1].replace("``", "`") if field.kind == "qident" else field.text
                    self.columns[-1] = (f"{head}.{name}", start)
                    kind = self.known.get(f"{head}.{name}".lower())
            elif self.accept("::"):
                kind = self.data_type()
            elif self.at("->"):
                self.refuse("lambda functions (x -> ...) are not allowed", "", self.tok.pos)
                self.take()
                self.expression()
            else:
                return kind

    def primary(self) -> str | None:
        t = self.tok
        if t.kind == "num":
            self.take()
            return _number_kind(t.text)
        if t.kind == "str":
            self.take()
            while self.tok.kind == "str":  # 'a' 'b' is 'ab' in Spark
                self.take()
            return "string"
        if t.kind == "qident":
            self.take()
            return self.column(t.text[1:-1].replace("``", "`"), t.pos, quoted=True)
        if t.kind == "op" and t.text == "(":
            self.take()
            if self.tok.word in _QUERY:
                self.refuse_query(self.tok)
            kind = self.expression()
            if self.at(","):  # a struct literal (a, b): not needed here
                self.fail("expected ')'")
            self.expect(")", "to close '('")
            return kind
        if t.kind != "ident":
            if t.kind == "end":
                self.fail("expected a value")
            self.fail("unexpected " + repr(t.text))
        word = t.word
        if word in _QUERY and (word not in ("map", "transform", "reduce", "table") or
                               self.peek().text == "(" or word == "table"):
            if word in ("transform", "map", "reduce") and self.peek().text == "(":
                self.refuse(f"function {word!r} is not allowed: it takes a lambda function",
                            "", t.pos)
            else:
                self.refuse_query(t)
        if word in ("null",):
            self.take()
            return "null"
        if word in ("true", "false"):
            self.take()
            return "boolean"
        if word == "case":
            return self.case()
        if word in ("cast", "try_cast") and self.peek().text == "(":
            self.take()
            self.take()
            self.expression()
            self.expect("as", "in CAST(x AS type)")
            kind = self.data_type()
            self.expect(")", "to close CAST(...)")
            return kind
        if word == "extract" and self.peek().text == "(":
            self.take()
            self.take()
            if self.tok.kind != "ident":
                self.fail("expected a field (YEAR, MONTH, DAY, HOUR, ...) in EXTRACT")
            self.take()
            self.expect("from", "in EXTRACT(field FROM x)")
            self.expression()
            self.expect(")", "to close EXTRACT(...)")
            return "int"
        if word == "interval" and (self.peek().kind in ("num", "str") or self.peek().text == "-"):
            return self.interval()
        if word in ("date", "timestamp", "timestamp_ntz", "timestamp_ltz") and \
                self.peek().kind == "str":
            self.take()
            self.take()
            return "temporal"
        if word == "x" and self.peek().kind == "str" and self.peek().pos == t.pos + 1:
            self.take()
            self.take()
            return "other"
        if self.peek().text == "(":
            return self.call()
        self.take()
        if self.at("->"):
            self.refuse("lambda functions (x -> ...) are not allowed", "", self.tok.pos)
        return self.column(t.text, t.pos)

    def column(self, name: str, pos: int, quoted: bool = False) -> str | None:
        # `user`, or user.country (a field of a column named so): a column, not the function
        if name.lower() in _NILADIC and name.lower() not in self.known and not quoted \
                and not self.at("."):
            self.refuse(f"{name} is not allowed in spec expressions: "
                        f"{_DANGEROUS.get(name.lower(), 'it is not deterministic')}", "", pos)
        self.columns.append((name, pos))
        return self.known.get(name.lower())

    def call(self) -> str | None:
        t = self.take()
        name = t.word
        self.take()  # (
        if name not in _FUNCTIONS:
            why = _DANGEROUS.get(name)
            if why:
                msg = f"function {name!r} is not allowed in spec expressions: {why}"
                hint = _trust_hint() if why.startswith(("it calls", "it reads")) else _HINT
            else:
                msg = f"function {name!r} is not allowed in spec expressions"
                close = _close_match(name)
                hint = (f"did you mean {close!r}? " if close else "") + \
                    "the allowed functions are listed in docs/spec.md ('Expressions')"
            self.refuse(msg, hint, t.pos)
        if self.at("distinct", "all") or self.at("*"):
            self.refuse(f"{self.tok.text.upper()} in a function call is for aggregates, which are "
                        "not allowed here", "", self.tok.pos)
            self.take()
        args: list[str | None] = []
        if name in ("trim", "ltrim", "rtrim", "btrim") and self.at("both", "leading", "trailing"):
            self.take()
        if not self.at(")"):
            if name in ("timestampadd", "timestampdiff", "dateadd", "date_diff", "datediff",
                        "date_part", "datepart") and self.tok.word in _UNITS \
                    and self.peek().text == ",":
                self.take()  # a unit, not a column
                args.append("string")
                self.expect(",")
            self.nest()
            args.append(self.bit_or() if name == "position" else self.expression())
            self.depth -= 1
            if name == "position" and self.accept("in"):
                args.append(self.expression())
            while self.at(",", "from", "for"):
                self.take()
                self.nest()
                args.append(self.expression())
                self.depth -= 1
        self.expect(")", f"to close {name}(...)")
        if name == "unix_timestamp" and not args:
            self.refuse("unix_timestamp() without arguments is not allowed: it is not deterministic",
                        "give it the column: unix_timestamp(x)", t.pos)
        if self.tok.word in _NOT_SCALAR and (self.peek().text == "(" or self.tok.word in
                                             ("over", "ignore", "respect", "within")):
            self.refuse(f"{_NOT_SCALAR[self.tok.word]} are not allowed in spec expressions", "",
                        self.tok.pos)
        return _result(_FUNCTIONS.get(name), args)

    def case(self) -> str | None:
        self.take()
        if not self.at("when"):
            self.expression()
        results: list[str | None] = []
        if not self.at("when"):
            self.fail("expected WHEN in CASE")
        while self.accept("when"):
            self.expression()
            self.expect("then", "in CASE WHEN ... THEN ...")
            results.append(self.expression())
        if self.accept("else"):
            results.append(self.expression())
        self.expect("end", "to close CASE")
        return _common(results)

    def interval(self) -> str:
        self.take()
        self.accept("-")
        while self.tok.kind in ("num", "str"):
            self.take()
            if self.tok.word in _UNITS:
                self.take()
                if self.accept("to"):
                    if self.tok.word not in _UNITS:
                        self.fail("expected a unit after TO")
                    self.take()
            elif self.tokens[self.i - 1].kind == "num":
                self.fail("expected a unit (YEAR, MONTH, DAY, HOUR, MINUTE, SECOND)")
        return "other"

    def data_type(self) -> str:
        t = self.tok
        if t.kind != "ident" or t.word not in _TYPES:
            self.fail("expected a type such as DOUBLE, BIGINT, DECIMAL(p, s), STRING, DATE or TIMESTAMP")
        self.take()
        if self.accept("("):
            self.expect_number()
            if self.accept(","):
                self.expect_number()
            self.expect(")", "to close the type's (...)")
        return _TYPES[t.word]

    def expect_number(self) -> None:
        if self.tok.kind != "num":
            self.fail("expected a number")
        self.take()


def _number_kind(text: str) -> str:
    t = text.lower()
    if t.endswith("bd"):
        return "decimal"
    if t[-1] in "df":
        return "double"
    if "e" in t:
        return "double"
    if "." in t:
        return "decimal"  # Spark reads 60.0 as DECIMAL(3,1)
    return "int"


def _result(rule: str | None, args: list[str | None]) -> str | None:
    if rule is None:
        return None
    if rule == "arg":
        return args[0] if args else None
    if rule == "arg2":
        return args[1] if len(args) > 1 else None
    if rule == "common":
        return _common(args)
    return rule


def _close_match(name: str) -> str:
    import difflib

    close = difflib.get_close_matches(name, _FUNCTIONS, n=1, cutoff=0.7)
    return close[0] if close else ""


def _trust_hint() -> str:
    return (f"only a deployment whose specs are trusted may set {TRUSTED_ENV}=1"
            " (docs/spec.md, 'Expressions')")
