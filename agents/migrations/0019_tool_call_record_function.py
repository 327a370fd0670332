"""The rate limit of tool calls as one function in the database (agents/tools.py
``count_and_record``): the (agent, tool) lock, the count of the last minute's calls and the call's
row in one round trip, which every recorded call (the REST API's, the gateway's admission) goes
through.

A window is counted without reading its rows: each call is numbered (``seq``) in the order of its
time, so the calls since a moment are the newest number minus the number of the first call after
it, plus one: two index probes, whatever the agent's rate. Rows written before this migration have
no number; while one of them is in the window, the window's rows are counted as before.
"""

from django.db import migrations, models

RECORD = """
CREATE OR REPLACE FUNCTION agents_tool_call_record(
    p_agent bigint, p_tool text, p_limit integer, p_now timestamptz, p_job uuid, p_dry boolean,
    OUT a_call bigint, OUT a_used integer, OUT a_retry_after integer, OUT a_called_at timestamptz
) LANGUAGE plpgsql AS $$
DECLARE
    v_edge timestamptz := p_now - interval '1 minute';
    v_last agents_toolcall;
    v_first bigint;
    v_oldest timestamptz;
BEGIN
    -- Calls of one (agent, tool) take turns (the lock record_call takes too: it is re-entrant).
    PERFORM pg_advisory_xact_lock(p_agent::integer, hashtext(p_tool));
    SELECT * INTO v_last FROM agents_toolcall
    WHERE agent_id = p_agent AND tool_id = p_tool ORDER BY called_at DESC, id DESC LIMIT 1;
    -- Under the lock, times never go backwards: the numbers follow the times.
    a_called_at := greatest(p_now, v_last.called_at);
    a_used := 0;
    IF v_last.id IS NOT NULL AND v_last.called_at > v_edge THEN
        SELECT seq INTO v_first FROM agents_toolcall
        WHERE agent_id = p_agent AND tool_id = p_tool AND called_at > v_edge ORDER BY called_at, id LIMIT 1;
        IF v_first IS NOT NULL AND v_last.seq IS NOT NULL THEN
            a_used := least(v_last.seq - v_first + 1, p_limit);
        ELSE  -- a row older than the numbers is in the window
            SELECT count(*) INTO a_used FROM (
                SELECT 1 FROM agents_toolcall
                WHERE agent_id = p_agent AND tool_id = p_tool AND called_at > v_edge
                ORDER BY called_at DESC LIMIT p_limit
            ) AS recent;
        END IF;
    END IF;
    IF a_used >= p_limit THEN
        -- The call that frees a slot is the oldest of the last p_limit calls.
        IF v_last.seq IS NOT NULL AND v_first IS NOT NULL THEN
            SELECT called_at INTO v_oldest FROM agents_toolcall
            WHERE agent_id = p_agent AND tool_id = p_tool AND seq = v_last.seq - p_limit + 1;
        ELSE
            SELECT called_at INTO v_oldest FROM agents_toolcall
            WHERE agent_id = p_agent AND tool_id = p_tool AND called_at > v_edge
            ORDER BY called_at DESC OFFSET p_limit - 1 LIMIT 1;
        END IF;
        a_retry_after := greatest(1, ceil(extract(epoch FROM v_oldest + interval '1 minute' - p_now))::integer);
        RETURN;
    END IF;
    INSERT INTO agents_toolcall (agent_id, tool_id, job_id, called_at, dry_run, seq)
    VALUES (p_agent, p_tool, p_job, a_called_at, p_dry, coalesce(v_last.seq, 0) + 1) RETURNING id INTO a_call;
END
$$;
"""


class Migration(migrations.Migration):
    dependencies = [("agents", "0018_tool_grant_requested_hash")]

    operations = [
        migrations.AddField(
            model_name="toolcall",
            name="seq",
            field=models.BigIntegerField(blank=True, editable=False, null=True),
        ),
        migrations.AddIndex(
            model_name="toolcall",
            index=models.Index(fields=["agent", "tool_id", "seq"], name="tool_call_seq"),
        ),
        migrations.RunSQL(
            RECORD,
            "DROP FUNCTION IF EXISTS agents_tool_call_record(bigint, text, integer, timestamptz, uuid, boolean);",
        ),
    ]
