"""Per-subject conversational memory (seed 002): subjects, their conversations, profile facts,
preferences, life events, relationships and memories, personality and emotions."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from memory.subjects.querysets import SubjectMemoryQuerySet, SubjectQuerySet


class Subject(models.Model):
    """The person an assistant talks with. One fleet serves many subjects; every row below
    belongs to one, and erasing a subject erases them all (the right to be forgotten)."""

    key = models.SlugField(max_length=100, unique=True, help_text="How agents and URLs name the subject")
    created_at = models.DateTimeField(auto_now_add=True)
    documents = models.JSONField(
        default=dict, blank=True, help_text="Per seed document: its last_updated (and the embeddings' model)"
    )
    allowed_agents = models.ManyToManyField(
        "agents.Agent",
        blank=True,
        related_name="+",
        help_text="When any are named, only these agents reach the subject's memory (operators always do).",
    )

    objects = SubjectQuerySet.as_manager()

    class Meta:
        ordering = ["key"]

    def __str__(self) -> str:
        return self.key


class SubjectCounter(models.Model):
    """The last number given per subject and id prefix (pref, event, rel): ids come from an
    UPDATE ... RETURNING on this row, so concurrent writers never clash and never leave gaps."""

    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="counters")
    prefix = models.CharField(max_length=20)
    last = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["subject", "prefix"], name="subject_counter_key")]

    def __str__(self) -> str:
        return f"{self.subject}:{self.prefix}={self.last}"


class Sentiment(models.TextChoices):
    POSITIVE = "positive"
    NEGATIVE = "negative"
    NEUTRAL = "neutral"
    MIXED = "mixed"


class PreferenceSentiment(models.TextChoices):
    """Seed 002's preferences[].sentiment: "positive" ou "negative"."""

    POSITIVE = "positive"
    NEGATIVE = "negative"


class EventSentiment(models.TextChoices):
    """Seed 002's events[].sentiment: "positive", "negative", "neutral"."""

    POSITIVE = "positive"
    NEGATIVE = "negative"
    NEUTRAL = "neutral"


class Conversation(models.Model):
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="conversations")
    conv_id = models.CharField(max_length=40, help_text="conv_YYYYMMDD_NNN")
    start_timestamp = models.DateTimeField()
    end_timestamp = models.DateTimeField()
    message_count = models.PositiveIntegerField()
    summary = models.TextField()
    key_points = models.JSONField(default=list)
    topics = models.JSONField(default=list)
    overall_sentiment = models.CharField(max_length=10, choices=Sentiment.choices)
    sentiment_score = models.FloatField()
    dominant_emotion = models.CharField(max_length=40, blank=True)
    message_ids = models.JSONField(default=list)

    class Meta:
        ordering = ["subject", "start_timestamp"]
        constraints = [
            models.UniqueConstraint(fields=["subject", "conv_id"], name="conversation_id_per_subject"),
            models.CheckConstraint(
                name="conversation_sentiment_score_range", condition=Q(sentiment_score__gte=-1, sentiment_score__lte=1)
            ),
        ]

    def __str__(self) -> str:
        return self.conv_id


class ProfileFact(models.Model):
    """One fact of the user profile (the seed's `name`, with its confidence and source)."""

    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="profile")
    field = models.CharField(max_length=50)
    value = models.CharField(max_length=500)
    confidence = models.FloatField()
    extracted_from = models.CharField(max_length=40, blank=True)
    timestamp = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["subject", "field"]
        constraints = [models.UniqueConstraint(fields=["subject", "field"], name="profile_fact_per_subject")]

    def __str__(self) -> str:
        return f"{self.field}={self.value}"


class Preference(models.Model):
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="preferences")
    pref_id = models.CharField(max_length=40)
    category = models.CharField(max_length=100)
    item = models.CharField(max_length=300)
    sentiment = models.CharField(max_length=10, choices=PreferenceSentiment.choices)
    confidence = models.FloatField()
    extracted_from = models.CharField(max_length=40, blank=True)
    timestamp = models.DateTimeField()
    context = models.TextField(blank=True)

    class Meta:
        ordering = ["subject", "pref_id"]
        constraints = [models.UniqueConstraint(fields=["subject", "pref_id"], name="preference_id_per_subject")]

    def __str__(self) -> str:
        return f"{self.pref_id} {self.category}: {self.item}"


class LifeEvent(models.Model):
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="events")
    event_id = models.CharField(max_length=40)
    description = models.TextField()
    timestamp = models.DateTimeField()
    importance = models.FloatField()
    sentiment = models.CharField(max_length=10, choices=EventSentiment.choices)
    extracted_from = models.CharField(max_length=40, blank=True)
    related_topics = models.JSONField(default=list)

    class Meta:
        ordering = ["subject", "event_id"]
        constraints = [models.UniqueConstraint(fields=["subject", "event_id"], name="event_id_per_subject")]

    def __str__(self) -> str:
        return self.event_id


class Relationship(models.Model):
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="relationships")
    rel_id = models.CharField(max_length=40)
    entity_1 = models.CharField(max_length=300)
    relation_type = models.CharField(max_length=100)
    entity_2 = models.CharField(max_length=300)
    confidence = models.FloatField()
    extracted_from = models.CharField(max_length=40, blank=True)

    class Meta:
        ordering = ["subject", "rel_id"]
        constraints = [models.UniqueConstraint(fields=["subject", "rel_id"], name="relationship_id_per_subject")]

    def __str__(self) -> str:
        return f"{self.entity_1} {self.relation_type} {self.entity_2}"


class SubjectMemory(models.Model):
    """One searchable text of a subject (embeddings.json): a conversation summary, a preference,
    an event... Its vector lives in the shared embeddings table (kind "subject")."""

    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="memories")
    key = models.CharField(max_length=60, help_text="The entity's id: conv_..., pref_..., event_...")
    type = models.CharField(max_length=40, help_text="conversation_summary, preference, event, ...")
    text = models.TextField()
    timestamp = models.DateTimeField()

    objects = SubjectMemoryQuerySet.as_manager()

    class Meta:
        ordering = ["subject", "timestamp", "key"]
        verbose_name_plural = "subject memories"
        constraints = [models.UniqueConstraint(fields=["subject", "key"], name="memory_key_per_subject")]

    def __str__(self) -> str:
        return f"{self.key} ({self.type})"


class PersonalityState(models.Model):
    subject = models.OneToOneField(Subject, on_delete=models.CASCADE, related_name="personality")
    traits = models.JSONField(help_text="The seven traits, each in [0, 1]")
    total_interactions = models.PositiveIntegerField(default=0)
    interactions_since_update = models.PositiveIntegerField(default=0)
    pending_changes = models.JSONField(default=dict, blank=True, help_text="Deltas waiting for the next update")
    last_trait_update = models.DateTimeField(null=True, blank=True)
    update_frequency = models.PositiveIntegerField(default=50)
    last_updated = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"personality of {self.subject}"


class TraitSnapshot(models.Model):
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="trait_history")
    timestamp = models.DateTimeField()
    traits = models.JSONField()
    reason = models.CharField(max_length=500)
    interactions_count = models.PositiveIntegerField(null=True, blank=True)
    changes = models.JSONField(null=True, blank=True, help_text='Per trait, as the seed writes it: "+0.08"')

    class Meta:
        ordering = ["subject", "timestamp", "id"]

    def __str__(self) -> str:
        return f"{self.subject} {self.timestamp:%Y-%m-%d %H:%M}"


class EmotionState(models.Model):
    """Current emotion and the statistics of everything ever recorded (the history itself is
    bounded to max_history rows)."""

    subject = models.OneToOneField(Subject, on_delete=models.CASCADE, related_name="emotion")
    current_emotion = models.CharField(max_length=40, blank=True)
    current_intensity = models.FloatField(null=True, blank=True)
    current_since = models.DateTimeField(null=True, blank=True)
    max_history = models.PositiveIntegerField(default=100)
    total_emotions_recorded = models.PositiveIntegerField(default=0)
    total_transitions = models.PositiveIntegerField(default=0)
    intensity_sum = models.FloatField(default=0.0)
    counts = models.JSONField(default=dict, blank=True, help_text="Emotion -> times recorded")
    last_updated = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.subject}: {self.current_emotion}"


class EmotionEvent(models.Model):
    class Trigger(models.TextChoices):
        USER_MESSAGE = "user_message"
        ASSISTANT_RESPONSE = "assistant_response"
        SYSTEM = "system"

    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="emotion_history")
    timestamp = models.DateTimeField()
    emotion = models.CharField(max_length=40)
    intensity = models.FloatField()
    context = models.CharField(max_length=500, blank=True)
    triggered_by = models.CharField(max_length=20, choices=Trigger.choices)

    class Meta:
        ordering = ["subject", "timestamp", "id"]
        indexes = [models.Index(fields=["subject", "timestamp", "id"], name="emotion_history_order")]

    def __str__(self) -> str:
        return f"{self.emotion} {self.intensity}"


class EmotionTransition(models.Model):
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="transitions")
    from_emotion = models.CharField(max_length=40)
    to_emotion = models.CharField(max_length=40)
    count = models.PositiveIntegerField(default=0)
    avg_duration_seconds = models.PositiveIntegerField(default=0, help_text="Whole seconds, as the seed writes them")

    class Meta:
        ordering = ["subject", "from_emotion", "to_emotion"]
        constraints = [
            models.UniqueConstraint(fields=["subject", "from_emotion", "to_emotion"], name="transition_per_subject")
        ]

    def __str__(self) -> str:
        return f"{self.from_emotion} -> {self.to_emotion}: {self.count}"


class TransitionProbability(models.Model):
    """The realistic-transition matrix (seed 002 default data, editable in the admin): a move is
    allowed when its probability is above 0.05; an emotion without rows is unconstrained."""

    from_emotion = models.CharField(max_length=40)
    to_emotion = models.CharField(max_length=40)
    probability = models.FloatField()

    class Meta:
        ordering = ["from_emotion", "-probability"]
        verbose_name_plural = "transition probabilities"
        constraints = [
            models.UniqueConstraint(fields=["from_emotion", "to_emotion"], name="transition_probability_key"),
            models.CheckConstraint(
                name="transition_probability_range", condition=Q(probability__gte=0, probability__lte=1)
            ),
        ]

    def __str__(self) -> str:
        return f"{self.from_emotion} -> {self.to_emotion}: {self.probability}"
