"""Reading the contract catalog of seed 000 (governance/contracts/catalog.py): every contract, row,
section and note of the real document, and the errors a malformed document raises."""

from __future__ import annotations

from collections import Counter

import pytest

from governance.contracts.catalog import CatalogError, ContractDoc, FieldRow, parse
from tests.governance.contracts.validators import SEED

SECTION_COUNTS = {
    "Ingestion I/O": 1,
    "Conversation": 1,
    "Social": 10,
    "Autonomie": 2,
    "Croyances": 7,
    "Auto-amélioration": 1,
    "Raisonnement": 1,
    "Retrieval": 2,
    "Mémoire": 10,
    "Langage": 2,
    "Mémoire épisodique": 1,
    "Identité & cognition": 7,
    "Objectifs": 2,
    "Interaction & questionnement": 2,
    "Action": 1,
    "Learning": 8,
    "Runtime": 10,
    "Perception": 1,
    "World model": 1,
}


@pytest.fixture(scope="module")
def seed_text() -> str:
    return SEED.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def contracts(seed_text: str) -> list[ContractDoc]:
    return parse(seed_text)


@pytest.fixture(scope="module")
def by_name(contracts: list[ContractDoc]) -> dict[str, ContractDoc]:
    return {c.name: c for c in contracts}


def _row(contract: ContractDoc, path: str) -> FieldRow:
    matches = [r for r in contract.rows if r.path == path]
    assert len(matches) == 1, f"{contract.name}: {path!r} found {len(matches)} times"
    return matches[0]


# --- The whole seed -------------------------------------------------------------------------------


def test_the_seed_holds_seventy_contracts_with_unique_names(contracts):
    assert len(contracts) == 70
    assert len({c.name for c in contracts}) == 70


def test_the_seed_holds_370_field_rows(contracts):
    assert sum(len(c.rows) for c in contracts) == 370


def test_every_contract_has_rows_a_module_and_a_section(contracts):
    for contract in contracts:
        assert contract.rows, contract.name
        assert contract.module.startswith("AGI_Evolutive/"), contract.name
        assert contract.module.endswith(".py"), contract.name
        assert contract.section in SECTION_COUNTS, contract.name


def test_the_nineteen_sections_come_in_document_order(contracts):
    sections = list(dict.fromkeys(c.section for c in contracts))
    assert sections == list(SECTION_COUNTS)
    assert len(sections) == 19


def test_each_section_holds_its_number_of_contracts(contracts):
    assert Counter(c.section for c in contracts) == SECTION_COUNTS


def test_contracts_keep_document_order(contracts):
    names = [c.name for c in contracts]
    assert names[:3] == ["intent_ingestion", "conversation_context", "social_interaction_context"]
    assert names[-3:] == ["response_contract", "perception_module", "world_model"]
    assert names.index("memory_retrieval_ranking") < names.index("memory_summarizer")


def test_row_positions_count_from_zero_in_table_order(contracts):
    for contract in contracts:
        assert [r.position for r in contract.rows] == list(range(len(contract.rows)))


def test_header_and_separator_lines_are_not_rows(contracts):
    for contract in contracts:
        for row in contract.rows:
            assert row.path.lower() != "champ"
            assert set(row.path) - {"-", " ", ":"}


def test_source_references_are_stripped_from_every_cell_and_note(contracts):
    for contract in contracts:
        for row in contract.rows:
            for cell in (row.path, row.type, row.required, row.effect):
                assert "【" not in cell, (contract.name, row.path)
                assert "】" not in cell, (contract.name, row.path)
        for note in contract.notes:
            assert "【" not in note


def test_the_runtime_effect_loses_only_its_reference(by_name):
    row = _row(by_name["intent_ingestion"], "`intent.label`")
    assert row.effect == "Normalisé en majuscules pour piloter les couches amont."


def test_an_effect_with_two_references_loses_both(by_name):
    row = _row(by_name["social_interaction_context"], "`context`")
    assert row.effect == "Transmis tel quel à `TacticSelector.pick` pour guider la décision de tactique."


def test_a_few_contracts_have_their_number_of_rows(by_name):
    expected = {
        "intent_ingestion": 8,
        "conversation_context": 11,
        "auto_evolution": 14,
        "belief_graph_orchestrator": 10,
        "memory_long_term_digest": 1,
        "memory_semantic_bridge": 2,
        "reasoning_episode": 11,
        "goal_priority_review": 3,
        "world_model": 4,
    }
    assert {name: len(by_name[name].rows) for name in expected} == expected


def test_modules_are_read_from_the_heading(by_name):
    assert by_name["intent_ingestion"].module == "AGI_Evolutive/io/intent_classifier.py"
    assert by_name["social_rule_update"].module == "AGI_Evolutive/social/social_critic.py"
    assert by_name["memory_retrieval_ranking"].module == "AGI_Evolutive/memory/retrieval.py"
    assert by_name["world_model"].module == "AGI_Evolutive/world_model/__init__.py"


# --- A sample of fields per section, with their exact words -------------------------------------

SAMPLES = [
    # (section, contract, path cell, type cell, required cell)
    ("Ingestion I/O", "intent_ingestion", "`intent.label`", "`str` non vide", "Oui"),
    ("Ingestion I/O", "intent_ingestion", "`intent.confidence`", "nombre ∈ [0,\u202f1]", "Oui"),
    ("Ingestion I/O", "intent_ingestion", "`tone`/`sentiment`/`priority`/`urgency`", "`str`", "Non"),
    ("Conversation", "conversation_context", "`llm_summary`", "mapping", "Oui (implicite)"),
    ("Conversation", "conversation_context", "`user_style`", "mapping clé/valeur", "Non"),
    ("Social", "social_interaction_miner", "`rules[*].predicates`", "liste de mappings", "Oui"),
    ("Social", "social_adaptive_lexicon", "`matched`", "booléen", "Oui"),
    ("Social", "social_conversation_analysis", "`risks` / `opportunities`", "liste de `str`", "Non"),
    ("Autonomie", "autonomy_core", "`hypotheses`", "liste de mappings (`content`, `prior`)", "Oui"),
    ("Autonomie", "auto_evolution", "`signals[*].direction`", "`str` (`above`/`below`)", "Non"),
    ("Autonomie", "auto_evolution", "`evaluation.score` / `impact`", "nombre ou `str`", "Non"),
    (
        "Croyances",
        "belief_graph_orchestrator",
        "`result.belief_id`",
        "`str`",
        "Oui (opérations `upsert_belief` / `add_evidence`)",
    ),
    ("Croyances", "auto_signal_registration", "`signals[*].last_updated`", "timestamp float", "Non"),
    ("Auto-amélioration", "code_evolver", "`patches[*].assessment.should_promote`", "booléen", "Oui"),
    ("Raisonnement", "reasoning_episode", "`questions`", "liste (objets ou chaînes)", "Non"),
    ("Raisonnement", "reasoning_episode", "`tests`", "liste d\u2019objets ou de chaînes", "Non"),
    ("Raisonnement", "reasoning_episode", "`cost` / `duration`", "nombres", "Non"),
    ("Retrieval", "retrieval_answer", "`status`", "`str` (`ok/refused/error`)", "Oui"),
    ("Mémoire", "memory_store_strategy", "`metadata_updates`", "mapping clé/valeur sérialisable", "Non"),
    ("Mémoire", "memory_store_strategy", "`notes`", "libre (stocké tel quel)", "Non"),
    ("Mémoire", "memory_retrieval_ranking", "`rankings[*].id`", "identifiant numérique existant", "Oui"),
    ("Mémoire", "memory_retrieval_ranking", "`rankings[*].adjusted_score` ou `score`", "nombre", "Oui"),
    ("Mémoire", "memory_long_term_digest", "_toute réponse_", "mapping sérialisable", "Non"),
    ("Mémoire", "memory_semantic_bridge", "autres champs", "sérialisable", "Non"),
    ("Mémoire", "memory_index_optimizer", "`reranked[*].id`", "identifiant numérique", "Oui (par boost)"),
    ("Mémoire", "semantic_memory_manager", "`tasks[*].task`", "alias reconnu", "Oui"),
    (
        "Mémoire",
        "semantic_memory_manager",
        "`tasks[*].category`",
        "`str` (`urgent`, `court_terme`, `long_terme`, …)",
        "Oui",
    ),
    ("Langage", "dialogue_state", "`state_summary`/`summary`", "`str`", "Oui"),
    ("Langage", "dialogue_state", "`open_commitments`", "liste", "Oui"),
    (
        "Mémoire épisodique",
        "episodic_linker",
        "`links[*].from`/`src`",
        "alias fourni (`m0`, `m1`, …) ou id existant",
        "Oui (par lien)",
    ),
    ("Mémoire épisodique", "episodic_linker", "`links[*].to`/`dst`", "alias/id", "Oui"),
    ("Identité & cognition", "cognition_proposer", "`suggestions[*].path`/`target`", "liste/chemin", "Oui"),
    ("Identité & cognition", "cognition_proposer", "`suggestions[*].value`/`adjustment`", "valeur sérialisable", "Oui"),
    ("Identité & cognition", "planner_support", "`risks`", "liste de chaînes", "Non"),
    ("Identité & cognition", "cognition_goal_prioritizer", "`priorities[*].goal_id`", "`str`", "Oui (par entrée)"),
    ("Objectifs", "goal_priority_review", "`priority`", "nombre ∈ [0,\u202f1]", "Oui (sauf usage de `priority_delta`)"),
    ("Objectifs", "goal_priority_review", "`priority_delta`", "nombre", "Oui (alternative)"),
    ("Interaction & questionnement", "question_auto_answer", "`answer`/`text`", "`str` non vide", "Oui"),
    (
        "Interaction & questionnement",
        "question_manager",
        "autres champs (`insights`, `meta`, …)",
        "sérialisable",
        "Non",
    ),
    ("Action", "action_interface", "`actions[*].impact`/`effort`/`risk`", "nombres ∈ [0,\u202f1]", "Non"),
    ("Learning", "learning_curriculum_planner", "`review_after`", "`int` (minutes)", "Non"),
    ("Learning", "learning_reinforcement_policy", "`estimated_value`", "`float`", "Oui"),
    ("Learning", "learning_curiosity_update", "`reward`", "`float` ∈ [-1,\u202f1]", "Oui"),
    ("Learning", "learning_self_assessment", "`coverage`", "`dict` (`definition`/`examples`/`counterexample`)", "Non"),
    ("Runtime", "phenomenal_mode_manager", "`mode`", "`str` (`travail`/`flanerie`)", "Oui"),
    ("Runtime", "response_formatter", "`diagnostics.besoins` / `diagnostics.questions`", "liste de `str`", "Non"),
    ("Perception", "perception_module", "`recommended_settings`", "mapping", "Non"),
    ("World model", "world_model", "`probabilities`", "mapping", "Non"),
]


@pytest.mark.parametrize(
    ("section", "contract", "path", "type_", "required"), SAMPLES, ids=[f"{s[1]}:{s[2]}" for s in SAMPLES]
)
def test_a_field_keeps_its_exact_type_and_required_words(by_name, section, contract, path, type_, required):
    doc = by_name[contract]
    assert doc.section == section
    row = _row(doc, path)
    assert row.type == type_
    assert row.required == required


def test_bounds_keep_the_narrow_no_break_space_the_seed_writes(by_name):
    """The seed mixes plain and narrow no-break spaces inside ∈ [a, b]; cells keep them as written."""
    assert _row(by_name["social_rule_self_evaluation"], "`actions[*].priority`").type == "nombre ∈ [0,\u202f1]"
    assert _row(by_name["intent_ingestion"], "`intent.confidence`").type != "nombre ∈ [0, 1]"


def test_the_samples_cover_every_section():
    assert {s[0] for s in SAMPLES} == set(SECTION_COUNTS)


def test_a_field_order_is_the_table_order(by_name):
    rows = by_name["goal_priority_review"].rows
    assert [r.path for r in rows] == ["`priority`", "`priority_delta`", "`confidence`"]
    assert [r.position for r in rows] == [0, 1, 2]


# --- Notes ----------------------------------------------------------------------------------------


def test_the_vigilance_note_of_memory_retrieval_ranking_spans_two_lines(by_name):
    assert by_name["memory_retrieval_ranking"].notes == [
        "Vigilance: toute entrée dont `id` ne correspond à aucun candidat est ignorée. "
        "Éviter les ids texte, ils ne sont pas convertis."
    ]


def test_the_vigilance_note_of_goal_priority_review_is_kept(by_name):
    assert by_name["goal_priority_review"].notes == [
        "Vigilance: si ni `priority` ni `priority_delta` ne sont fournis, la revue est purement ignorée."
    ]


def test_the_common_errors_note_keeps_its_label(by_name):
    (note,) = by_name["memory_store_strategy"].notes
    assert note.startswith("Erreurs courantes: répondre avec des tags non textuels")
    assert note.endswith("donc éviter les blocs massifs.")


def test_advice_and_remark_notes_are_kept(by_name):
    assert by_name["episodic_linker"].notes[0].startswith("Conseil: rester fidèle aux alias fournis")
    assert by_name["language_nlg"].notes[0].startswith("Remarque: en l'absence de `message`")


def test_a_bulleted_note_keeps_one_line_per_bullet(by_name):
    (note,) = by_name["action_interface"].notes
    lines = note.split("\n")
    assert lines[0] == "Astuces de revue"
    assert len(lines) == 4
    assert all(line.startswith("- ") for line in lines[1:])
    assert lines[1].endswith("proviennent bien du payload d\u2019entrée.")


def test_notes_belong_to_the_contract_they_follow(contracts):
    with_notes = {c.name for c in contracts if c.notes}
    assert with_notes == {
        "memory_store_strategy",
        "memory_retrieval_ranking",
        "memory_summarizer",
        "semantic_memory_maintenance",
        "memory_system_narrative",
        "memory_long_term_digest",
        "memory_concept_curation",
        "memory_semantic_bridge",
        "semantic_memory_manager",
        "language_nlg",
        "episodic_linker",
        "homeostasis",
        "identity_mission",
        "goal_priority_review",
        "action_interface",
    }


def test_a_plain_paragraph_after_a_table_is_not_a_note(by_name):
    assert by_name["reasoning_episode"].notes == []


# --- Small documents --------------------------------------------------------------------------------

TABLE_HEAD = "| Champ | Type attendu | Obligatoire | Effet runtime |\n| --- | --- | --- | --- |\n"


def test_a_minimal_document_gives_one_contract():
    text = "# Titre\n\n## Section A\n\n### `one` — `pkg/one.py`\n\n" + TABLE_HEAD + "| `x` | `str` | Oui | Kept. |\n"
    (doc,) = parse(text)
    assert (doc.name, doc.module, doc.section) == ("one", "pkg/one.py", "Section A")
    assert doc.rows == [FieldRow("`x`", "`str`", "Oui", "Kept.", 0)]
    assert doc.notes == []


@pytest.mark.parametrize("dash", ["\u2014", "\u2013", "-"])
def test_the_heading_dash_may_be_em_en_or_hyphen(dash):
    (doc,) = parse(f"## S\n### `name` {dash} `mod.py`\n" + TABLE_HEAD + "| `x` | `str` | Non | e |\n")
    assert (doc.name, doc.module) == ("name", "mod.py")


def test_an_english_header_row_is_skipped():
    text = "## S\n### `a` — `m`\n| Field | Type | Required | Effect |\n|:--|:--|:--|:--|\n| `x` | `str` | Oui | e |\n"
    (doc,) = parse(text)
    assert [r.path for r in doc.rows] == ["`x`"]


def test_a_contract_before_any_section_has_an_empty_section():
    (doc,) = parse("### `a` — `m`\n" + TABLE_HEAD + "| `x` | `str` | Oui | e |\n")
    assert doc.section == ""


def test_a_new_section_closes_the_contract_before_it():
    text = "## A\n### `a` — `m`\n" + TABLE_HEAD + "| `x` | `str` | Oui | e |\n## B\n| `y` | `str` | Oui | e |\n"
    (doc,) = parse(text)
    assert [r.path for r in doc.rows] == ["`x`"]


def test_references_are_stripped_from_headings_and_notes():
    text = (
        "## S\n### `a` — `m.py`【F:m.py†L1-L2】\n"
        + TABLE_HEAD
        + "| `x` | `str` | Oui | Done.【F:m.py†L3-L9】 |\n\n**Vigilance** : careful【F:m.py†L4】.\n"
    )
    (doc,) = parse(text)
    assert doc.module == "m.py"
    assert doc.rows[0].effect == "Done."
    assert doc.notes == ["Vigilance: careful."]


def test_a_note_label_with_its_colon_inside_the_bold():
    text = "## S\n### `a` — `m`\n" + TABLE_HEAD + "| `x` | `str` | Oui | e |\n\n**Conseil :** keep ids.\n"
    assert parse(text)[0].notes == ["Conseil: keep ids."]


def test_a_note_without_text_is_its_label():
    text = "## S\n### `a` — `m`\n" + TABLE_HEAD + "| `x` | `str` | Oui | e |\n\n**Astuces**\n- one\n- two\n"
    assert parse(text)[0].notes == ["Astuces\n- one\n- two"]


def test_a_blank_line_ends_a_note():
    text = "## S\n### `a` — `m`\n" + TABLE_HEAD + "| `x` | `str` | Oui | e |\n\n**Vigilance** : first\n\nlater text\n"
    assert parse(text)[0].notes == ["Vigilance: first"]


def test_an_escaped_pipe_stays_inside_its_cell():
    text = "## S\n### `a` — `m`\n" + TABLE_HEAD + "| `x` | `str` (`a\\|b`) | Oui | left \\| right |\n"
    (row,) = parse(text)[0].rows
    assert row.type == "`str` (`a|b`)"
    assert row.effect == "left | right"


def test_an_empty_document_has_no_contracts():
    assert parse("") == []
    assert parse("# Only a title\n\nSome prose.\n") == []


# --- Malformed documents ----------------------------------------------------------------------------


def test_a_row_with_three_cells_is_an_error_naming_its_line():
    text = "## S\n### `a` — `m`\n" + TABLE_HEAD + "| `x` | `str` | Oui |\n"
    with pytest.raises(CatalogError, match=r"^line 5: a field row has 4 cells, this one has 3$"):
        parse(text)


def test_a_row_with_five_cells_is_an_error_naming_its_line():
    text = "## S\n\n### `a` — `m`\n\n" + TABLE_HEAD + "| `x` | `str` | Oui | e |\n| `y` | `str` | Oui | e | extra |\n"
    with pytest.raises(CatalogError, match=r"^line 8: a field row has 4 cells, this one has 5$"):
        parse(text)


def test_the_line_number_counts_lines_of_the_real_seed(seed_text):
    lines = seed_text.splitlines()
    target = next(i for i, line in enumerate(lines) if line.startswith("| `intent.rationale`"))
    lines[target] = "| `intent.rationale` | `str` | Non |"
    with pytest.raises(CatalogError, match=rf"^line {target + 1}: "):
        parse("\n".join(lines))


def test_contracts_without_a_table_are_named():
    text = "## S\n### `empty_one` — `m`\nProse only.\n### `ok` — `m`\n" + TABLE_HEAD + "| `x` | `str` | Oui | e |\n"
    text += "### `empty_two` — `m`\n"
    with pytest.raises(CatalogError, match=r"^contracts without a field table: empty_one, empty_two$"):
        parse(text)


def test_catalog_errors_are_value_errors():
    assert issubclass(CatalogError, ValueError)
