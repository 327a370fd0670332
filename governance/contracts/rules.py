"""LLM output contracts as checkable rules (seed 000): the parse half.

``parse_type`` / ``parse_required`` / ``parse_paths`` turn one catalog row's words (French, as the
seed writes them) into a ``FieldRule``: JSON paths with ``[*]`` wildcards and alternatives, a
``TypeRule`` (kind, bounds, enum), and a requirement (yes, no, conditional, implicit).
``governance/contracts/validator.py`` compiles those rules into the validator. Pure: no Django.

Where the seed's words cannot be checked exactly (an open list of values, an "implicit"
requirement) the rule only warns; governance/catalog/README.md lists those rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

# --- Codes ----------------------------------------------------------------------------------------


class Code(StrEnum):
    MISSING_REQUIRED = "missing_required"
    WRONG_TYPE = "wrong_type"
    OUT_OF_RANGE = "out_of_range"
    NOT_IN_ENUM = "not_in_enum"
    EMPTY_STRING = "empty_string"
    NOT_SERIALIZABLE = "not_serializable"
    UNKNOWN_ID = "unknown_id"
    ALTERNATIVE_MISSING = "alternative_missing"
    CONDITIONAL_MISSING = "conditional_missing"
    UNKNOWN_FIELD = "unknown_field"
    NULL_VALUE = "null_value"


class Kind(StrEnum):
    STRING = "string"
    NUMBER = "number"
    INTEGER = "integer"
    BOOLEAN = "boolean"
    LIST = "list"
    LIST_OF_STRINGS = "list_of_strings"
    LIST_OF_MAPPINGS = "list_of_mappings"
    LIST_OF_MAPPINGS_OR_STRINGS = "list_of_mappings_or_strings"
    MAPPING = "mapping"
    NUMBER_OR_STRING = "number_or_string"
    NUMERIC_ID = "numeric_id"
    ID = "id"  # an alias or an id: a non-empty string or an integer
    PATH = "path"  # a dotted path or a list of segments
    SERIALIZABLE = "serializable"
    ANY = "any"


class Requirement(StrEnum):
    YES = "yes"
    NO = "no"
    CONDITIONAL = "conditional"
    IMPLICIT = "implicit"


# --- Rules ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TypeRule:
    kind: Kind
    minimum: float | None = None
    maximum: float | None = None
    enum: tuple[str, ...] = ()
    enum_open: bool = False  # the seed ends the list with "…": other values are warnings
    non_empty: bool = False
    keys: tuple[str, ...] = ()  # documented keys of a mapping or of each object of a list
    existing: bool = False  # an id that must name something of the input: checked against known ids
    serializable: bool = False  # "mapping sérialisable": every value inside must be JSON

    def describe(self) -> str:
        text = _KIND_WORDS[self.kind]
        if self.non_empty:
            text = "non-empty " + text
        if self.minimum is not None and self.maximum is not None:
            text += f" in [{format_number(self.minimum)}, {format_number(self.maximum)}]"
        if self.enum:
            text += " (one of " + ", ".join(self.enum) + (", …" if self.enum_open else "") + ")"
        return text


_KIND_WORDS = {
    Kind.STRING: "string",
    Kind.NUMBER: "number",
    Kind.INTEGER: "integer",
    Kind.BOOLEAN: "boolean",
    Kind.LIST: "list",
    Kind.LIST_OF_STRINGS: "list of strings",
    Kind.LIST_OF_MAPPINGS: "list of objects",
    Kind.LIST_OF_MAPPINGS_OR_STRINGS: "list of objects or strings",
    Kind.MAPPING: "object",
    Kind.NUMBER_OR_STRING: "number or string",
    Kind.NUMERIC_ID: "numeric id",
    Kind.ID: "alias or id",
    Kind.PATH: "path (string or list of segments)",
    Kind.SERIALIZABLE: "JSON value",
    Kind.ANY: "any value",
}


@dataclass(frozen=True)
class Condition:
    """Required only when the sibling ``field`` holds one of ``values`` (seed: "Oui (opérations
    `upsert_belief` / `add_evidence`)" on ``result.belief_id`` reads ``result.operation``)."""

    field: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class FieldRule:
    """One catalog row. ``paths`` holds one path, or several: alternatives when the row is
    required (``answer``/``text``: one of them must be there), independent optional fields of the
    same type otherwise (``tone``/``sentiment``)."""

    paths: tuple[str, ...]
    type: TypeRule
    requirement: Requirement
    effect: str = ""
    condition: Condition | None = None
    group: str = ""  # rows sharing a group are alternatives across rows (priority / priority_delta)
    other_fields: bool = False  # "autres champs": extra fields are part of the contract
    whole_output: bool = False  # "_toute réponse_": the rule is about the output itself

    @property
    def alternatives(self) -> bool:
        return len(self.paths) > 1 and self.requirement is not Requirement.NO


class RowError(ValueError):
    """A catalog row whose words this module cannot read; the message quotes them."""


# --- Reading the seed's words --------------------------------------------------------------------

_BOUNDS = re.compile(r"∈\s*\[\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*\]")
_TICKED = re.compile(r"`([^`]+)`")
_PARENS = re.compile(r"\((.*)\)")


def _words(text: str) -> str:
    bare = _BOUNDS.sub("", _PARENS.sub("", text)).replace("`", "").lower().replace("\u2019", "'")
    return " ".join(bare.split())


def _listed(text: str) -> tuple[str, ...]:
    """Values in parentheses: `a`, `b` or `a`/`b` or id/kind/text, without the trailing ellipsis."""
    inside = _PARENS.search(text)
    if not inside:
        return ()
    body = inside.group(1)
    ticked = _TICKED.findall(body)
    parts = ticked if ticked else re.split(r"[/,]", body)
    values: list[str] = []
    for part in parts:
        values.extend(p.strip() for p in part.split("/") if p.strip() and p.strip() not in {"…", "..."})
    return tuple(values)


def parse_type(text: str) -> TypeRule:
    """The seed's "type attendu" column as a rule. Raises RowError on words it does not know, so a
    new catalog row is never silently unchecked."""
    words = _words(text)
    bounds = _BOUNDS.search(text)
    minimum, maximum = (float(bounds.group(1)), float(bounds.group(2))) if bounds else (None, None)
    listed = _listed(text)
    open_enum = "…" in text or "..." in text
    if words in {"str", "chaîne"}:
        if listed:
            return TypeRule(Kind.STRING, enum=listed, enum_open=open_enum)
        return TypeRule(Kind.STRING)
    if words in {"str non vide"}:
        return TypeRule(Kind.STRING, non_empty=True)
    if words in {"nombre", "nombres", "float"}:
        return TypeRule(Kind.NUMBER, minimum=minimum, maximum=maximum)
    if words in {"entier", "int"}:
        return TypeRule(Kind.INTEGER, minimum=minimum, maximum=maximum)
    if words == "timestamp float":
        return TypeRule(Kind.NUMBER, minimum=0.0)
    if words == "booléen":
        return TypeRule(Kind.BOOLEAN)
    if words == "liste" and "objets ou chaînes" in text.lower():  # "liste (objets ou chaînes)"
        return TypeRule(Kind.LIST_OF_MAPPINGS_OR_STRINGS)
    if words == "liste":
        return TypeRule(Kind.LIST)
    if words in {"liste de str", "liste de chaînes"}:
        return TypeRule(Kind.LIST_OF_STRINGS)
    if words in {"liste de mappings", "liste d'objets"}:
        return TypeRule(Kind.LIST_OF_MAPPINGS, keys=listed)
    if words in {"liste d'objets ou de chaînes", "liste"} or words.startswith("liste (objets ou chaînes"):
        return TypeRule(Kind.LIST_OF_MAPPINGS_OR_STRINGS)
    if words in {"mapping", "dict", "mapping clé/valeur", "mapping clé/valeur sérialisable", "mapping sérialisable"}:
        return TypeRule(Kind.MAPPING, keys=listed, serializable="sérialisable" in words)
    if words in {"sérialisable", "valeur sérialisable"}:
        return TypeRule(Kind.SERIALIZABLE)
    if words == "nombre ou str":
        return TypeRule(Kind.NUMBER_OR_STRING)
    if words in {"identifiant numérique", "identifiant numérique existant"}:
        return TypeRule(Kind.NUMERIC_ID, existing="existant" in words)
    if words == "valeur libre" or words.startswith("libre"):
        return TypeRule(Kind.ANY)
    if words == "alias reconnu":
        return TypeRule(Kind.STRING, non_empty=True, existing=True)
    if words in {"alias/id", "alias fourni ou id existant"}:
        return TypeRule(Kind.ID, existing=True)
    if words == "liste/chemin":
        return TypeRule(Kind.PATH)
    raise RowError(f"unknown type words: {text!r}")


def parse_required(text: str) -> tuple[Requirement, Condition | None, bool]:
    """The "obligatoire" column: (requirement, condition, alternative-of-another-row)."""
    words = text.strip()
    lower = words.lower()
    if lower == "non":
        return Requirement.NO, None, False
    if lower == "oui" or lower.startswith("oui (par "):  # "par lien": per element of the list
        return Requirement.YES, None, False
    if lower == "oui (implicite)":
        return Requirement.IMPLICIT, None, False
    if lower.startswith("oui (opération"):
        return Requirement.CONDITIONAL, Condition("operation", tuple(_TICKED.findall(words))), False
    if lower.startswith("oui (sauf usage de") or lower == "oui (alternative)":
        return Requirement.YES, None, True
    raise RowError(f"unknown requirement words: {text!r}")


def parse_paths(text: str) -> tuple[tuple[str, ...], bool, bool]:
    """The "champ" column: (paths, other_fields, whole_output). An alternative written without a
    dot shares the first path's parent: `rankings[*].adjusted_score` ou `score` is
    rankings[*].adjusted_score or rankings[*].score."""
    stripped = text.strip()
    if stripped.strip("_").lower() in {"toute réponse"}:
        return ("",), False, True
    if stripped.lower().startswith("autres champs"):
        return (), True, False
    names = _TICKED.findall(stripped)
    if not names:
        raise RowError(f"no field path in {text!r}")
    first = names[0]
    parent = first.rsplit(".", 1)[0] + "." if "." in first else ""
    paths = [first] + [name if "." in name or not parent else parent + name for name in names[1:]]
    return tuple(paths), False, False


def rule_from_row(path: str, type_: str, required: str, effect: str = "") -> FieldRule:
    paths, other_fields, whole = parse_paths(path)
    requirement, condition, cross_row = parse_required(required)
    return FieldRule(
        paths=paths,
        type=parse_type(type_),
        requirement=requirement,
        effect=effect,
        condition=condition,
        group="alternative" if cross_row else "",
        other_fields=other_fields,
        whole_output=whole,
    )


def format_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)
