"""Placeholders in summaries and fixes: a field name, or simple arithmetic over fields.

``{micro_batch}`` quotes a field; ``{micro_batch * grad_accum * world_size}`` or ``{16 * 4 * 2}``
computes. Only numbers, field names (dotted: ``oom.requested_gib``), parentheses, unary ``-``/``+``
and ``+ - * / //`` are allowed; the expression is read with :mod:`ast` and walked here, never
evaluated by Python, so a rule file cannot run code. A placeholder whose field is missing, or
whose arithmetic has no value (a text field, division by zero), has no value.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable, Mapping
from typing import Any

_MAX_LENGTH = 200

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


# A field name as written (keywords included: a regex group may be called "global").
_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


class PlaceholderError(ValueError):
    """A placeholder that is neither a field name nor allowed arithmetic."""


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _parse(expression: str) -> ast.expr:
    if len(expression) > _MAX_LENGTH:
        raise PlaceholderError(f"placeholder longer than {_MAX_LENGTH} characters")
    try:
        return ast.parse(expression.strip(), mode="eval").body
    except SyntaxError:
        raise PlaceholderError(f"{{{expression}}} is not a field name or arithmetic") from None


def names(expression: str) -> list[str]:
    """The field names a placeholder reads; :class:`PlaceholderError` if it is not allowed."""
    if _NAME.fullmatch(expression.strip()):
        return [expression.strip()]
    found: list[str] = []

    def walk(node: ast.expr) -> None:
        name = _dotted(node)
        if name is not None:
            found.append(name)
        elif isinstance(node, ast.Constant) and _is_number(node.value):
            return  # a number reads no field
        elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            walk(node.left)
            walk(node.right)
        elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            walk(node.operand)
        else:
            raise PlaceholderError(
                f"{{{expression}}}: only numbers, field names, parentheses and + - * / // "
                "are allowed in a placeholder"
            )

    walk(_parse(expression))
    return found


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def value(expression: str, fields: Mapping[str, Any]) -> Any:
    """The placeholder's value from ``fields``, or None when it has none."""
    if _NAME.fullmatch(expression.strip()):
        return fields.get(expression.strip())
    try:
        tree = _parse(expression)
    except PlaceholderError:
        return None

    def walk(node: ast.expr) -> Any:
        name = _dotted(node)
        if name is not None:
            return fields.get(name)
        if isinstance(node, ast.Constant) and _is_number(node.value):
            return node.value
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            operand = walk(node.operand)
            return _UNARY[type(node.op)](operand) if _is_number(operand) else None
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left, right = walk(node.left), walk(node.right)
            if not (_is_number(left) and _is_number(right)):
                return None
            try:
                return _BINARY[type(node.op)](left, right)
            except ZeroDivisionError:
                return None
        return None

    result = walk(tree)
    if isinstance(tree, (ast.Name, ast.Attribute)):
        return result  # a plain field keeps its type (text included)
    if isinstance(result, float) and result.is_integer() and abs(result) < 1e15:
        return int(result)  # 128.0 reads as 128
    return result
