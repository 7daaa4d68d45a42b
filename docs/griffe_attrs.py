"""A griffe extension for the API reference: attrs classes get the ``__init__`` attrs writes.

griffe reads the source, where an ``@attrs.frozen`` class has no ``__init__``, so the
reference would show no constructor. This adds one, from the fields (in order, bases first;
``kw_only``, ``init=False``, ``alias`` and a leading underscore handled as attrs does), and
shows each field's default instead of the ``attrs.field(...)`` call, whose validators are
private. Loaded by mkdocs.yml (``extensions:`` of the mkdocstrings python handler).
"""

from __future__ import annotations

from typing import Any

from griffe import (
    Attribute,
    Class,
    Expr,
    ExprCall,
    ExprKeyword,
    Extension,
    Function,
    Module,
    Parameter,
    ParameterKind,
    Parameters,
)

_CLASS_DECORATORS = {
    "attrs.define",
    "attrs.frozen",
    "attrs.mutable",
    "attr.s",
    "attr.attrs",
    "attr.define",
    "attr.frozen",
    "attr.mutable",
}
_FIELD_CALLS = {"attrs.field", "attr.ib", "attr.attrib", "attr.field"}


def _path(expr: object) -> str:
    try:
        return str(getattr(expr, "canonical_path", ""))
    except Exception:  # an unresolvable name: not attrs
        return ""


def _keywords(call: object) -> dict[str, Any]:
    if not isinstance(call, ExprCall):
        return {}
    keywords = (arg for arg in call.arguments if isinstance(arg, ExprKeyword))
    return {arg.name: arg.value for arg in keywords}


def _attrs_decorator(cls: Class) -> dict[str, Any] | None:
    """The decorator's keywords when ``cls`` is an attrs class, else None."""
    for decorator in cls.decorators:
        if _path(decorator.value) in _CLASS_DECORATORS:
            return _keywords(decorator.value)
    return None


def _fields(cls: Class, class_kw_only: bool) -> list[Parameter]:
    """The ``__init__`` parameters of ``cls``'s own fields; rewrites their shown values."""
    parameters = []
    for member in list(cls.members.values()):
        if not isinstance(member, Attribute) or member.annotation is None:
            continue
        if "class-attribute" in member.labels and "instance-attribute" not in member.labels:
            continue  # a ClassVar
        if "property" in member.labels:
            continue
        value = member.value
        field = _keywords(value) if _path(value) in _FIELD_CALLS else None
        if field is not None:
            if "factory" in field:
                default: str | Expr | None = ExprCall(function=field["factory"], arguments=[])
            else:
                default = field.get("default")
            member.value = default  # shown as `name: T = default`
        else:
            field, default = {}, value
        if str(field.get("init")) == "False":
            continue
        name = str(field.get("alias", "")).strip("'\"") or member.name.lstrip("_")
        kw_only = class_kw_only or str(field.get("kw_only")) == "True"
        kind = ParameterKind.keyword_only if kw_only else ParameterKind.positional_or_keyword
        parameters.append(Parameter(name, annotation=member.annotation, kind=kind, default=default))
    return parameters


def _add_init(cls: Class) -> None:
    own = _attrs_decorator(cls)
    if own is None:
        return
    if "__init__" in cls.members:  # written by hand: keep it, show the fields' defaults only
        _fields(cls, class_kw_only=False)
        return
    try:
        parents = [p for p in reversed(cls.mro()) if _attrs_decorator(p) is not None]
    except Exception:  # a base griffe cannot resolve
        parents = []
    by_name: dict[str, Parameter] = {}
    for parent in [*parents, cls]:
        keywords = _attrs_decorator(parent) or {}
        for parameter in _fields(parent, str(keywords.get("kw_only")) == "True"):
            by_name.pop(parameter.name, None)
            by_name[parameter.name] = parameter
    ordered = sorted(by_name.values(), key=lambda p: p.kind is ParameterKind.keyword_only)
    self_ = Parameter("self", kind=ParameterKind.positional_or_keyword)
    init = Function(
        "__init__",
        lineno=0,
        endlineno=0,
        parent=cls,
        parameters=Parameters(self_, *ordered),
        returns="None",
    )
    cls.set_member("__init__", init)


def _walk(obj: Module | Class, seen: set[str]) -> None:
    if obj.path in seen:
        return
    seen.add(obj.path)
    if isinstance(obj, Class):
        _add_init(obj)
        # A private base (``_Immutable``) is an implementation detail: not listed as a base.
        obj.bases = [b for b in obj.bases if not str(b).rsplit(".", 1)[-1].startswith("_")]
    for member in list(obj.members.values()):
        if not member.is_alias and (member.is_module or member.is_class):
            _walk(member, seen)  # type: ignore[arg-type]


class AttrsInit(Extension):
    """Adds attrs' generated ``__init__`` to every attrs class of a loaded package."""

    def on_package(self, *, pkg: Module, **kwargs: Any) -> None:
        _walk(pkg, set())

    def on_package_loaded(self, *, pkg: Module, **kwargs: Any) -> None:  # griffe < 1.14
        _walk(pkg, set())
