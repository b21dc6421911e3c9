"""What the advisor asks of a condition once its columns are resolved to leaves (see
`_relations`): which leaves and columns it reads, how Spark treats its nulls, and how to show it.
"""

from __future__ import annotations

import enum
from typing import Mapping

from sqlglot import exp

UNRESOLVED = "?"

Column = tuple[str, str]  # (leaf uid, column name)


def columns(expression: exp.Expr) -> set[Column]:
    """The resolved columns `expression` reads."""
    return {(column.table, column.name) for column in expression.find_all(exp.Column)
            if column.table and column.table != UNRESOLVED}


def unresolved(expression: exp.Expr) -> list[str]:
    """The columns `expression` reads whose leaf is not known, as written."""
    return [column.name for column in expression.find_all(exp.Column)
            if column.table == UNRESOLVED]


def leaves_read(expression: exp.Expr) -> set[str]:
    return {uid for uid, _ in columns(expression)}


def unresolved_column(written: str) -> exp.Column:
    return exp.column(written, table=UNRESOLVED)


def render(expression: exp.Expr, names: Mapping[str, str]) -> str:
    """`expression` as SQL, its columns qualified by their leaves' names (`names`, by uid)."""
    def named(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and node.table == UNRESOLVED:
            return exp.column(node.name)
        if isinstance(node, exp.Column) and node.table in names:
            return exp.column(node.name, table=names[node.table])
        return node
    return expression.copy().transform(named).sql(dialect="spark")


# Expressions that are null wherever an operand is (Spark's NullIntolerant ones among those SQL
# conditions use).
_NULL_INTOLERANT = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Add, exp.Sub,
                    exp.Mul, exp.Div, exp.Mod, exp.Neg, exp.Not, exp.Cast, exp.Paren,
                    exp.Interval, exp.Abs)


def null_when_any_column_is_null(expression: exp.Expr) -> bool:
    """As the rule's `EventTimeBounds.nullWhenAnyColumnIsNull`: comparisons and arithmetic of
    columns and constants are null where a column they read is; IS NULL or OR are not."""
    if isinstance(expression, exp.Column) or _is_constant(expression):
        return True
    return isinstance(expression, _NULL_INTOLERANT) and all(
        null_when_any_column_is_null(child) for child in _operands(expression))


def null_intolerant_columns(expression: exp.Expr) -> set[Column]:
    """The columns whose null makes `expression` null through null-intolerant operators only:
    those Spark infers `IS NOT NULL` constraints for."""
    if isinstance(expression, exp.Column):
        return columns(expression)
    if not isinstance(expression, _NULL_INTOLERANT):
        return set()
    return set().union(*(null_intolerant_columns(child) for child in _operands(expression)))


class Truth(enum.Enum):
    TRUE = "true"
    FALSE = "false"
    NULL = "null"
    UNKNOWN = "unknown"   # depends on values not known here


def rejects_nulls_of(conjunct: exp.Expr, leaf_uids: set[str]) -> bool:
    """Whether `conjunct` is false or null where every column of `leaf_uids` is null and its
    other columns hold anything: as Spark's EliminateOuterJoin asks of a filter over the
    null-padded side of an outer join (with the `IS NOT NULL` it infers from the conjunct)."""
    if any(uid in leaf_uids for uid, _ in null_intolerant_columns(conjunct)):
        return True
    # Spark evaluates only the conjuncts that read nothing but the padded side.
    return leaves_read(conjunct) <= leaf_uids and \
        _truth(conjunct, leaf_uids) in (Truth.FALSE, Truth.NULL)


def _truth(expression: exp.Expr, null_leaves: set[str]) -> Truth:
    """Three-valued evaluation where the columns of `null_leaves` are null."""
    if isinstance(expression, exp.Paren):
        return _truth(expression.this, null_leaves)
    if isinstance(expression, exp.Column):
        return Truth.NULL if expression.table in null_leaves else Truth.UNKNOWN
    if isinstance(expression, exp.Null):
        return Truth.NULL
    if isinstance(expression, exp.Is) and isinstance(expression.expression, exp.Null):
        inner = _truth(expression.this, null_leaves)
        return Truth.TRUE if inner == Truth.NULL else Truth.UNKNOWN
    if isinstance(expression, exp.Not):
        inner = _truth(expression.this, null_leaves)
        return {Truth.TRUE: Truth.FALSE, Truth.FALSE: Truth.TRUE}.get(inner, inner)
    if isinstance(expression, (exp.And, exp.Or)):
        return _connective(expression, null_leaves)
    if isinstance(expression, _NULL_INTOLERANT):
        operands = [_truth(child, null_leaves) for child in _operands(expression)]
        return Truth.NULL if Truth.NULL in operands else Truth.UNKNOWN
    return Truth.UNKNOWN


def _connective(expression: exp.Expr, null_leaves: set[str]) -> Truth:
    left = _truth(expression.this, null_leaves)
    right = _truth(expression.expression, null_leaves)
    deciding, other = (Truth.FALSE, Truth.TRUE) if isinstance(expression, exp.And) \
        else (Truth.TRUE, Truth.FALSE)
    if deciding in (left, right):
        return deciding
    if Truth.UNKNOWN in (left, right):
        return Truth.UNKNOWN
    if Truth.NULL in (left, right):
        return Truth.NULL
    return other


def _is_constant(expression: exp.Expr) -> bool:
    return isinstance(expression, (exp.Literal, exp.Boolean, exp.Interval)) and \
        not any(isinstance(node, exp.Column) for node in expression.walk())


def _operands(expression: exp.Expr) -> list[exp.Expr]:
    if isinstance(expression, exp.Cast):
        return [expression.this]
    return [child for child in expression.iter_expressions()
            if not isinstance(child, (exp.DataType, exp.Var))]
