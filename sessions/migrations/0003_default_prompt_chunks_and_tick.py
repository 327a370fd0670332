"""Default level-1 documentation chunks (editable in the admin) and the scheduler tick."""

from django.db import migrations
from django.utils import timezone

CHUNKS = [
    (
        "role",
        "Your role",
        "You are an agent of a governed fleet. The platform records everything you say and do, checks your "
        "actions against your manifest, and asks a human reviewer when an action needs approval.",
        100,
    ),
    (
        "answer-format",
        "Answer format",
        "Always answer with one JSON object, the AIMessage:\n"
        '{"preText": "what you tell the user (required)", "dataCommands": [{"type": "JOBS", "params": {}}], '
        '"actionCommands": [{"type": "<tool_id>", "params": {}}], "validationRequest": false, '
        '"postText": "said after the actions succeeded", "keepControl": false, '
        '"communicationModule": {"type": "MultipleChoice", "data": {"question": "...", "options": ["a", "b"]}}, '
        '"completed": false}\n'
        "dataCommands and actionCommands are exclusive. Anything that is not this JSON is a format error and "
        "you will be asked again.",
        90,
    ),
    (
        "platform-data",
        "Platform data you can query",
        "dataCommands types: AGENTS, AGENT {agent_id}, JOBS {status, intent, period}, JOB {job_id}, SESSIONS, "
        'SESSION {session_id}, SCHEMA {name}, MANIFEST. Periods: {"start": ISO, "end": ISO} or, in automations, '
        '{"period": "-1_DAY"} (offset_TYPE with TYPE in DAY, WEEK, MONTH, YEAR). The results come back as a '
        "DATA_ADDED system message.",
        80,
    ),
    (
        "communication",
        "Asking the person",
        "In a CHAT you may ask the person with a communicationModule: MultipleChoice {question, options (2 or "
        "more)} or Validation {message}. Then wait for the answer.",
        60,
    ),
]

# Frozen here (governance.kernel.schedules as of issue 35): a migration does the same whatever the code becomes.
SCHEDULES = [
    (
        "session scheduler tick",
        "sessions.tick",
        300,
        "Fires due session timers, closes idle sessions, expires review requests, starts queued "
        "and scheduled sessions on free slots.",
    ),
]


def forwards(apps, schema_editor):
    chunk_model = apps.get_model("ai_sessions", "PromptChunk")
    for key, title, body, importance in CHUNKS:
        types = ["CHAT"] if key == "communication" else []
        chunk_model.objects.get_or_create(
            key=key, defaults={"title": title, "body": body, "importance": importance, "session_types": types}
        )
    interval_model = apps.get_model("django_celery_beat", "IntervalSchedule")
    periodic_model = apps.get_model("django_celery_beat", "PeriodicTask")
    for name, task, every_seconds, description in SCHEDULES:
        interval, _ = interval_model.objects.get_or_create(every=every_seconds, period="seconds")
        periodic_model.objects.get_or_create(
            name=name, defaults={"task": task, "interval": interval, "enabled": True, "description": description}
        )
    # Tell a running beat to reload its schedule.
    changed_model = apps.get_model("django_celery_beat", "PeriodicTasks")
    changed_model.objects.update_or_create(ident=1, defaults={"last_update": timezone.now()})


class Migration(migrations.Migration):
    dependencies = [
        ("ai_sessions", "0002_prompt_chunks"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
