"""The memory app's models, one module per domain: learnings, notes, embeddings, subjects."""

from memory.models.embeddings import Embedding, SearchCalibration
from memory.models.learnings import (
    ErasedLearning,
    GateResult,
    Learning,
    LearningInjection,
    PromotionProposal,
    ReuseScore,
    ScoringRun,
)
from memory.models.notes import Clarification, VeilleNote
from memory.subjects.models import (
    Conversation,
    EmotionEvent,
    EmotionState,
    EmotionTransition,
    LifeEvent,
    PersonalityState,
    Preference,
    ProfileFact,
    Relationship,
    Sentiment,
    Subject,
    SubjectCounter,
    SubjectMemory,
    TraitSnapshot,
    TransitionProbability,
)

__all__ = [
    "Clarification",
    "Conversation",
    "Embedding",
    "EmotionEvent",
    "EmotionState",
    "EmotionTransition",
    "ErasedLearning",
    "GateResult",
    "Learning",
    "LearningInjection",
    "LifeEvent",
    "PersonalityState",
    "Preference",
    "ProfileFact",
    "PromotionProposal",
    "Relationship",
    "ReuseScore",
    "ScoringRun",
    "SearchCalibration",
    "Sentiment",
    "Subject",
    "SubjectCounter",
    "SubjectMemory",
    "TraitSnapshot",
    "TransitionProbability",
    "VeilleNote",
]
