"""Generated LLM outputs for ``python -m bench contracts``: compliant ones built from a contract's
field tree, and violating ones made from compliant ones with the mistakes models really make. A
helper module, not a benchmark (it has no ``run``).

Why generated and not recorded: no corpus of real outputs for the seed's 70 contracts exists, and a
generated one is deterministic (``--seed``), labelled (every violating output knows its mistakes,
so the benchmark can check that the validator reports each of them, not only that it says "no") and
can be as large as the measure needs.

What "realistic" means here:

* compliant outputs carry every required field (one of each set of alternatives, conditionals when
  their trigger is set), an implicit field 95 % of the time, each optional field 60 % of the time and
  ``null`` 3 % of the time (a warning, not a violation), an undocumented extra key in 5 % of the
  objects (a warning too); lists of objects hold 1-8 elements, lists of strings 0-5; numbers respect
  their bounds; strings are a few words; ids look like ids;
* a violating output is a compliant one with 1 (50 %), 2 (30 %) or 3 (20 %) mistakes at distinct
  places, drawn by kind among those the output offers: a required field missing (an alternative or a
  triggered conditional too), a wrong type (a number as a string ``"0.82"``, a string wrapped in a
  list, a boolean as ``"true"``, a fractional integer), a number out of its bounds (a percentage
  ``82`` for a ``[0, 1]`` score), a list or object serialised inside a string, a numeric id sent as a
  string, an empty string where one is required non-empty, a value outside a closed enum (``"ABOVE"``),
  a list element of the wrong type; rarely the whole output as a JSON string.

Every output goes through ``json.dumps``/``json.loads`` so it is exactly what a parsed model answer is.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.contract_schemas import LIST_KINDS, Contract, Node
from governance.contracts.rules import Kind, Requirement, TypeRule
from governance.contracts.validator import join

OPTIONAL_P = 0.6
NULL_P = 0.03
IMPLICIT_P = 0.95
EXTRA_KEY_P = 0.05
MISTAKE_COUNTS = ((1, 0.5), (2, 0.3), (3, 0.2))
# How often each kind of mistake is drawn when the output offers it (relative weights).
MISTAKE_WEIGHTS = {
    "missing_required": 25,
    "wrong_type": 20,
    "out_of_range": 15,
    "json_in_string": 15,
    "numeric_id_as_string": 10,
    "empty_string": 10,
    "not_in_enum": 5,
    "item_wrong_type": 5,
    "output_as_string": 1,
}

_SENTENCES = (
    "user asks about the billing cycle and wants a refund for the duplicate charge retrieved memory "
    "about invoice history suggests a calm tone confirm the account before acting plan next test "
    "hypothesis confidence drops when context is missing la réponse reste prudente vérifier la source "
    "priorité haute besoin de clarification mise à jour du graphe signal latency error rate drift"
)
WORDS = tuple(_SENTENCES.split())
KEYS = ("source", "reason", "weight", "label", "count", "tags", "kind", "value", "note")


@dataclass(frozen=True)
class Mistake:
    kind: str
    path: str  # where the validator reports it ("" is the output itself)


@dataclass
class Sample:
    contract: str
    output: Any
    mistakes: tuple[Mistake, ...] = ()

    @property
    def compliant(self) -> bool:
        """As generated: the label the three engines are checked against."""
        return not self.mistakes


# --- Compliant outputs --------------------------------------------------------------------------


class Generator:
    """Values for one contract's tree; all randomness from the one ``random.Random`` given."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def text(self, low: int = 1, high: int = 12) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(low, high)))

    def ident(self, name: str) -> str:
        return f"{name.split('_')[0]}-{self.rng.randint(1, 99_999)}"

    def scalar(self) -> Any:
        pick = self.rng.random()
        if pick < 0.4:
            return self.text(1, 4)
        if pick < 0.65:
            return round(self.rng.random(), 3)
        if pick < 0.85:
            return self.rng.randint(0, 1000)
        return self.rng.random() < 0.5

    def mapping(self, keys: tuple[str, ...] = ()) -> dict[str, Any]:
        names = list(keys) if keys else self.rng.sample(KEYS, self.rng.randint(1, 4))
        out: dict[str, Any] = {}
        for key in names:
            out[key] = [self.text(1, 3) for _ in range(self.rng.randint(0, 3))] if key == "tags" else self.scalar()
        return out

    def number(self, rule: TypeRule) -> float:
        low, high = rule.minimum, rule.maximum
        if low is not None and high is not None:
            return round(self.rng.uniform(low, high), 3)
        if low is not None:  # the seed's only one-sided bound is a timestamp
            return round(1_760_000_000 + self.rng.uniform(0, 10_000_000), 3)
        return round(self.rng.uniform(-5, 100), 3)

    def leaf(self, rule: TypeRule, name: str, choices: tuple[str, ...] = ()) -> Any:
        kind, rng = rule.kind, self.rng
        if kind is Kind.STRING:
            if choices:
                return rng.choice(choices)
            if rule.enum:
                off_list = rule.enum_open and rng.random() < 0.1  # an open list: a warning only
                return "ad_hoc" if off_list else rng.choice(rule.enum)
            if rule.existing or name in {"id", "reference", "canonical_id"} or name.endswith("_id"):
                return self.ident(name)
            return self.text()
        if kind is Kind.NUMBER:
            return self.number(rule)
        if kind is Kind.INTEGER:
            return rng.randint(int(rule.minimum or 1), int(rule.maximum or 500))
        if kind is Kind.NUMERIC_ID:
            return rng.randint(1, 200_000)
        if kind is Kind.ID:
            return rng.randint(1, 200_000) if rng.random() < 0.5 else self.ident(name)
        if kind is Kind.BOOLEAN:
            return rng.random() < 0.5
        if kind is Kind.NUMBER_OR_STRING:
            return round(rng.random(), 3) if rng.random() < 0.6 else rng.choice(("high", "medium", "low"))
        if kind is Kind.PATH:
            segments = [rng.choice(KEYS) for _ in range(rng.randint(1, 3))]
            return ".".join(segments) if rng.random() < 0.6 else segments
        if kind is Kind.LIST_OF_STRINGS:
            return [self.text(1, 6) for _ in range(rng.randint(0, 5))]
        if kind is Kind.LIST_OF_MAPPINGS:
            return [self.mapping(rule.keys) for _ in range(rng.randint(1, 4))]
        if kind is Kind.LIST_OF_MAPPINGS_OR_STRINGS:
            return [self.mapping() if rng.random() < 0.5 else self.text() for _ in range(rng.randint(1, 4))]
        if kind is Kind.LIST:
            return [self.scalar() for _ in range(rng.randint(0, 5))]
        if kind is Kind.MAPPING:
            return self.mapping(rule.keys)
        return self.scalar() if rng.random() < 0.7 else self.mapping()  # SERIALIZABLE, ANY

    def node(self, node: Node, name: str, choices: tuple[str, ...] = ()) -> Any:
        rule = node.type
        if node.items is not None and (rule is None or rule.kind in LIST_KINDS):
            return [self.obj(node.items) for _ in range(self.rng.randint(1, 8))]
        if node.props and (rule is None or rule.kind is Kind.MAPPING):
            return self.obj(node)
        return self.leaf(rule, name, choices) if rule is not None else self.mapping()

    def obj(self, node: Node, optional_p: float = OPTIONAL_P) -> dict[str, Any]:
        """One object at ``node``: what must be there, some of what may, now and then an extra key."""
        rng = self.rng
        chosen = {rng.choice(names) for names in node.alternatives}
        in_alternative = {name for names in node.alternatives for name in names}
        conditional = {name: condition for condition, name in node.conditionals}
        triggers: dict[str, tuple[str, ...]] = {}
        for condition, _ in node.conditionals:
            triggers[condition.field] = (*triggers.get(condition.field, ()), *condition.values)
        out: dict[str, Any] = {}
        for name, child in node.props.items():
            if name in conditional:
                continue
            rule = child.rules[0] if child.rules else None
            if name in in_alternative:
                present = name in chosen
            elif name in node.required:
                present = True
            elif rule is not None and rule.requirement is Requirement.IMPLICIT:
                present = rng.random() < IMPLICIT_P
            elif not child.owned and child.demand() is not None:
                present = True  # `intent` of a required `intent.label`
            else:
                draw = rng.random()
                if rule is not None and draw < NULL_P and optional_p < 1:
                    out[name] = None  # "treated as absent": a warning
                    continue
                present = draw < optional_p
            if present:
                choices = (*triggers[name], "noop") if name in triggers else ()
                out[name] = self.node(child, name, choices)
        for name, condition in conditional.items():
            if out.get(condition.field) in condition.values or rng.random() < 0.2:
                out[name] = self.node(node.props[name], name)
        if rng.random() < EXTRA_KEY_P and optional_p < 1:
            out["explanation"] = self.text()  # not in the contract: a warning
        return out


def compliant(contract: Contract, rng: random.Random, optional_p: float = OPTIONAL_P) -> Any:
    generator = Generator(rng)
    # A contract of the whole output only ("_toute réponse_", a mapping): some object.
    output = generator.obj(contract.root, optional_p) if contract.root.props else generator.mapping()
    return json.loads(json.dumps(output))


# --- Mistakes -----------------------------------------------------------------------------------


@dataclass
class Site:
    """One mistake that can be made in an output: ``apply`` mutates it in place."""

    kind: str
    path: str  # reported there
    touched: tuple[str, ...]  # the paths it changes or removes (no two mistakes overlap)
    apply: Callable[[], None] = field(repr=False)


def _overlap(a: str, b: str) -> bool:
    return a == b or b.startswith((a + ".", a + "[")) or a.startswith((b + ".", b + "["))


def _setter(container: dict | list, key: str | int, value: Any) -> Callable[[], None]:
    def apply() -> None:
        container[key] = value

    return apply


def _remover(container: dict, names: list[str]) -> Callable[[], None]:
    def apply() -> None:
        for name in names:
            container.pop(name, None)

    return apply


def _out_of_range(rule: TypeRule, value: float) -> float | None:
    """A percentage for a fraction, a negative for a lower bound of 0: what models send."""
    if rule.maximum is not None and rule.maximum <= 1:
        high = round(value * 100, 1)
        return high if high > rule.maximum else rule.maximum + 0.5
    if rule.minimum is not None:
        return rule.minimum - abs(value) - 1
    if rule.maximum is not None:
        return rule.maximum + abs(value) + 1
    return None


def _value_sites(
    rule: TypeRule, requirement: Requirement, container: dict, name: str, value: Any, path: str
) -> list[Site]:
    """The type-level mistakes a present, non-null value can be turned into."""
    kind = rule.kind
    sites: list[Site] = []

    def add(mistake: str, wrong: Any, where: str = path, inside: Any = container, key: Any = name) -> None:
        sites.append(Site(mistake, where, (where,), _setter(inside, key, wrong)))

    if kind is Kind.STRING:
        add("wrong_type", [value])
        if rule.non_empty:
            add("empty_string", "" if len(value) % 2 else "  ")
        if rule.enum and not rule.enum_open and value.upper() not in rule.enum:
            add("not_in_enum", value.upper())
    elif kind in (Kind.NUMBER, Kind.INTEGER):
        add("wrong_type", str(value) if kind is Kind.NUMBER else value + 0.5)
        wrong = _out_of_range(rule, value)
        if wrong is not None:
            add("out_of_range", wrong)
    elif kind is Kind.NUMERIC_ID:
        add("numeric_id_as_string", str(value))
    elif kind is Kind.ID:
        if type(value) is str:
            add("empty_string", "")
        elif requirement is not Requirement.NO:
            add("wrong_type", None)
    elif kind is Kind.BOOLEAN:
        add("wrong_type", "true" if value else "false")
    elif kind is Kind.NUMBER_OR_STRING:
        add("wrong_type", [value])
    elif kind is Kind.PATH:
        add("empty_string", "") if type(value) is str else add("wrong_type", {"path": value})
    elif kind in LIST_KINDS or kind is Kind.MAPPING:
        add("json_in_string", json.dumps(value, ensure_ascii=False))
        if kind in (Kind.LIST_OF_STRINGS, Kind.LIST_OF_MAPPINGS) and value:
            index = len(value) - 1
            item = value[index]
            wrong = 3 if kind is Kind.LIST_OF_STRINGS else json.dumps(item, ensure_ascii=False)
            add("item_wrong_type", wrong, f"{path}[{index}]", value, index)
    return sites


def _inside(path: str, touched: tuple[str, ...]) -> bool:
    """``path`` was changed or removed by a mistake already made, or lies under one."""
    return any(path == t or path.startswith((t + ".", t + "[")) for t in touched)


def collect(node: Node, obj: dict, prefix: str = "", touched: tuple[str, ...] = ()) -> list[Site]:
    """Every mistake ``obj`` (an object at ``node``) and what is below it offer. Nothing is offered
    on or above a place already ``touched``: a second mistake there would hide the first one (a
    list serialised as a string hides the missing field of its element)."""
    sites: list[Site] = []
    for names in node.alternatives:
        present = [n for n in names if n in obj]
        if present:
            where = join(prefix, names[0])
            changed = tuple(join(prefix, n) for n in present)
            sites.append(Site("missing_required", where, changed, _remover(obj, present)))
    for condition, name in node.conditionals:
        if name in obj and obj.get(condition.field) in condition.values:
            where = join(prefix, name)
            sites.append(Site("missing_required", where, (where, join(prefix, condition.field)), _remover(obj, [name])))
    for name, child in node.props.items():
        if name not in obj:
            continue
        value, path = obj[name], join(prefix, name)
        if _inside(path, touched):
            continue
        if not any(_overlap(path, t) for t in touched):
            if name in node.required:
                sites.append(Site("missing_required", path, (path,), _remover(obj, [name])))
            rule = child.rules[0] if child.rules else None
            if rule is not None and value is not None:
                sites += _value_sites(rule.type, rule.requirement, obj, name, value, path)
            elif not child.owned:  # `intent` of `intent.label`: missing, or an object sent as a string
                if (below := child.demand()) is not None:
                    sites.append(Site("missing_required", path + below, (path,), _remover(obj, [name])))
                sites.append(Site("json_in_string", path, (path,), _setter(obj, name, json.dumps(value))))
        if child.props and type(value) is dict:
            sites += collect(child, value, path, touched)
        if child.items is not None and child.items.props and type(value) is list:
            for index, item in enumerate(value):
                if type(item) is dict:
                    sites += collect(child.items, item, f"{path}[{index}]", touched)
    return [site for site in sites if not any(_overlap(t, u) for t in site.touched for u in touched)]


def violating(contract: Contract, rng: random.Random) -> Sample:
    """A compliant output with 1-3 mistakes at places that do not overlap."""
    output = compliant(contract, rng)
    if not collect(contract.root, output):  # too few optional fields drawn: take them all
        output = compliant(contract, rng, optional_p=1.0)
    wanted = rng.choices([n for n, _ in MISTAKE_COUNTS], [w for _, w in MISTAKE_COUNTS])[0]
    mistakes: list[Mistake] = []
    touched: list[str] = []
    while len(mistakes) < wanted:
        sites = collect(contract.root, output, "", tuple(touched))
        kinds = sorted({s.kind for s in sites})
        if not mistakes:
            kinds.append("output_as_string")
        if not kinds:
            break
        kind = rng.choices(kinds, [MISTAKE_WEIGHTS[k] for k in kinds])[0]
        if kind == "output_as_string":
            return Sample(contract.name, json.dumps(output, ensure_ascii=False), (Mistake(kind, ""),))
        site = rng.choice([s for s in sites if s.kind == kind])
        site.apply()
        mistakes.append(Mistake(kind, site.path))
        touched.extend(site.touched)
    return Sample(contract.name, json.loads(json.dumps(output)), tuple(mistakes))


def corpus(contracts: list[Contract], size: int, violating_share: float, seed: int) -> list[Sample]:
    """``size`` outputs, exactly ``round(size * violating_share)`` of them violating, each for a
    contract drawn uniformly, in a shuffled order; the same ``seed`` gives the same corpus."""
    rng = random.Random(seed)
    bad = round(size * violating_share)
    labels = [True] * bad + [False] * (size - bad)
    rng.shuffle(labels)
    samples = []
    for is_bad in labels:
        contract = rng.choice(contracts)
        samples.append(violating(contract, rng) if is_bad else Sample(contract.name, compliant(contract, rng)))
    return samples
